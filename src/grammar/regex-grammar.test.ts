import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks } from '../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../../test/support/lantern.ts';
import { charsGrammar } from './regex-grammar.ts';
import { lengthsOf, parseRegex, PatternProblem } from './regex-parse.ts';

describe('parseRegex', () => {
  it('reads classes, escapes, groups and quantifiers into value characters', () => {
    expect(lengthsOf(parseRegex('^[a-z]{2,4}(-[0-9]+)?$'))).toEqual([2, Infinity]);
    expect(lengthsOf(parseRegex('^(?:ab|c)\\d{3}$'))).toEqual([4, 5]);
    expect(parseRegex('\\u0041')).toEqual({ kind: 'seq', items: [{ kind: 'chars', ranges: [[0x41, 0x41]] }] });
  });

  it('refuses what no grammar enforces exactly, and anchors that would cut the match', () => {
    for (const pattern of ['(?=a)b', '(a)\\1', '\\bword', 'a^b', '('])
      expect(() => parseRegex(pattern), pattern).toThrow(PatternProblem);
  });

  it('writes characters JSON must escape as their escapes', () => {
    expect(charsGrammar([[0x22, 0x22]])).toBe(String.raw`"\\\""`);
    expect(charsGrammar([[0x09, 0x09]])).toBe(String.raw`"\\t"`);
    expect(charsGrammar([[0x61, 0x63]])).toBe('[a-c]');
    expect(charsGrammar([[0x20, 0x7e]])).toBe(String.raw`[ -!#-[\]-~]`);
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
