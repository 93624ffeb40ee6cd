import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks } from '../../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../../../test/support/lantern.ts';
import { jsonPattern, PatternProblem } from './pattern-narrowing.ts';

describe('jsonPattern', () => {
  it.each([
    // [pattern, as XGrammar is given it]
    ['^a"b$', String.raw`^a(?:\\")b$`],
    [String.raw`^\\*$`, String.raw`^(?:\\\\)*$`],
    [String.raw`^a\tb$`, String.raw`^a(?:\\u0009)b$`],
    ['.', String.raw`[^"\\\x00-\x1f]`],
    ['[^a]', String.raw`[^"\\\x00-\x1fa]`],
    [String.raw`\D`, String.raw`[^0-9"\\\x00-\x1f]`],
    ['[ -~]', String.raw`(?:[\u0020-\u0021\u0023-\u005b\u005d-\u007e]|(?:\\")|(?:\\\\))`],
    [String.raw`(?:ab)+\.x[\w-]`, String.raw`(?:ab)+\.x[0-9A-Z\u005fa-z\u002d]`],
  ])('%s → %s', (pattern, expected) => {
    expect(jsonPattern(pattern)).toBe(expected);
  });

  it('refuses what it cannot give safely', () => {
    expect(() => jsonPattern('[^é]')).toThrow(PatternProblem);
    expect(() => jsonPattern(String.raw`[\W]`)).toThrow(PatternProblem);
  });
});

describe('patterns in the grammar, walked at random on tiny-chat’s vocabulary', () => {
  // Before: XGrammar wrote each of these characters raw, and the walks ended in invalid JSON or a wrong value.
  const PATTERNS = [
    String.raw`^\D{1,5}$`,
    String.raw`^\S{1,5}$`,
    String.raw`^\W{1,5}$`,
    '^[^a]{1,5}$',
    '^.{1,5}$',
    '^"a"$',
    String.raw`^\\$`,
    String.raw`^a\tb$`,
    String.raw`^\s{1,3}$`,
    '^[!-~]{1,5}$',
    String.raw`^[\x00-\x7f]{1,3}$`,
    String.raw`^\s*é{2}(?:ab){1,3}"$`,
    String.raw` {1,3}\\*?$`,
  ];

  it.each(PATTERNS)('every walk through %s is a JSON string whose value matches it', async (pattern) => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const schema = { type: 'string', pattern };
    const ended: string[] = [];
    for (let seed = 0; seed < 3; seed++)
      ended.push(...(await randomWalks(grammar, { type: 'json', schema }, { walks: 8, seed, maxSteps: 40 })).completed);
    expect(ended.length).toBeGreaterThan(12);
    const re = new RegExp(pattern, 'u');
    const wrong = ended.filter((text) => {
      try {
        return !re.test(JSON.parse(text) as string);
      } catch {
        return true;
      }
    });
    expect(wrong).toEqual([]);
  });
});
