import { describe, expect, it } from 'vitest';
import { countTokens, forEachToken } from './count-tokens.ts';

const tokenEnds = (text: string) => {
  const ends: number[] = [];
  forEachToken(text, (end) => ends.push(end));
  return ends;
};

describe('countTokens', () => {
  it('counts short words, numbers and punctuation as a token each, as o200k does', () => {
    expect(countTokens('')).toBe(0);
    // o200k: The| quick| brown| fox| jumps| over| the| lazy| dog|.
    expect(countTokens('The quick brown fox jumps over the lazy dog.')).toBe(10);
    // Numbers in groups of up to three digits: 123|456|7
    expect(countTokens('1234567')).toBe(3);
    expect(countTokens("we'll")).toBe(1);
    expect(countTokens('\n\n')).toBe(1);
  });

  it('counts a long word as a token per four letters, and a run of Chinese as a token a character', () => {
    expect(countTokens(' encyclopaedically')).toBe(Math.ceil(17 / 4));
    expect(countTokens('x'.repeat(4000))).toBe(1000);
    expect(countTokens('这种语言')).toBe(4);
    expect(countTokens('这种语言。非常简捷')).toBe(9);
  });

  it('grows with the text: a page of prose is about a token per 4 to 5 characters', () => {
    const prose =
      'Retrieval works best when each chunk holds a whole thought. The chunker therefore prefers to end a chunk ' +
      'at a paragraph break, then at the end of a sentence, and only then between two words.';
    const tokens = countTokens(prose);
    expect(prose.length / tokens).toBeGreaterThan(3.5);
    expect(prose.length / tokens).toBeLessThan(6);
    expect(countTokens(prose.repeat(10))).toBeGreaterThanOrEqual(10 * tokens - 10);
  });
});

describe('forEachToken', () => {
  it('visits countTokens(text) ends, rising, each a character or more, the last at the end of the text', () => {
    const text = 'Hello, wonderful world!\n\n(internationalization) 这种语言。非常 😀😀 12345  \t end';
    const ends = tokenEnds(text);
    expect(ends).toHaveLength(countTokens(text));
    expect(ends.at(-1)).toBe(text.length);
    ends.forEach((end, index) => expect(end).toBeGreaterThan(index === 0 ? 0 : ends[index - 1]!));
  });

  it('cuts a long word into pieces of about equal length, after a leading bracket', () => {
    const text = '(internationalization';
    // `(` alone, then 20 letters in 5 pieces of 4.
    expect(tokenEnds(text)).toEqual([1, 5, 9, 13, 17, 21]);
  });

  it('never cuts inside a surrogate pair', () => {
    const text = '𠀀𠀁𠀂𠀃'.repeat(10) + ' ' + '𝐀𝐁𝐂𝐃𝐄𝐅𝐆𝐇𝐈𝐉'.repeat(5);
    for (const end of tokenEnds(text)) {
      const code = text.charCodeAt(end - 1);
      expect(code >= 0xd800 && code <= 0xdbff, `a cut after a high surrogate at ${end}`).toBe(false);
    }
  });
});
