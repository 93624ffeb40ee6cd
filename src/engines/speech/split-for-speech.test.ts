import { describe, expect, it } from 'vitest';
import { splitForSpeech } from './split-for-speech.ts';

const length = (text: string) => text.length;
const texts = (text: string, budget = Infinity) => [...splitForSpeech(text, length, budget)].map((p) => p.text);

describe('splitForSpeech', () => {
  it('says each sentence in its own pass, with where it ends in the input', () => {
    const input = 'Hello there. How are you?  Fine, thanks!';
    const pieces = [...splitForSpeech(input, length, Infinity)];
    expect(pieces.map((p) => p.text)).toEqual(['Hello there.', 'How are you?', 'Fine, thanks!']);
    expect(pieces.map((p) => input.slice(0, p.end))).toEqual([
      'Hello there.',
      'Hello there. How are you?',
      'Hello there. How are you?  Fine, thanks!',
    ]);
  });

  it('keeps text without a full stop, and skips what has nothing to say', () => {
    expect(texts('turn left at the red door')).toEqual(['turn left at the red door']);
    expect(texts('... !? ')).toEqual([]);
    expect(texts('One. ... Two.')).toHaveLength(2);
  });

  it('cuts a sentence too long for a pass at its clauses, packed together as far as they fit', () => {
    expect(texts('One two three, four five six; seven eight nine: ten.', 24)).toEqual([
      'One two three,',
      'four five six;',
      'seven eight nine: ten.',
    ]);
    const input = 'Red, blue, green, yellow, black, white, brown, pink.';
    const pieces = [...splitForSpeech(input, length, 24)];
    expect(pieces.map((p) => p.text)).toEqual(['Red, blue, green,', 'yellow, black, white,', 'brown, pink.']);
    expect(pieces.at(-1)!.end).toBe(input.length);
    for (const piece of pieces) expect(input.slice(0, piece.end).endsWith(piece.text.split(' ').at(-1)!)).toBe(true);
  });

  it('then between words, and a single word longer than a pass in parts', () => {
    expect(texts('aaaa bbbb cccc dddd', 8)).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    const long = [...splitForSpeech('0123456789012345', length, 8)];
    expect(long.map((p) => p.text).join('')).toBe('0123456789012345');
    expect(long.every((p) => p.text.length <= 8)).toBe(true);
    expect(long.at(-1)!.end).toBe(16);
  });

  it('knows other scripts’ full stops', () => {
    expect(texts('你好。今天天气很好！')).toEqual(['你好。', '今天天气很好！']);
  });
});
