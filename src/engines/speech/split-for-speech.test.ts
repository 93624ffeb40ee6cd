import { describe, expect, it } from 'vitest';
import { splitForSpeech } from './split-for-speech.ts';

const anyLength = () => true;
const texts = (text: string, fits: (t: string) => boolean = anyLength) => splitForSpeech(text, fits).map((p) => p.text);

describe('splitForSpeech', () => {
  it('says each sentence in its own pass, with where it ends in the input', () => {
    const input = 'Hello there. How are you?  Fine, thanks!';
    const pieces = splitForSpeech(input, anyLength);
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
    const fits = (t: string) => t.length <= 24;
    expect(texts('One two three, four five six; seven eight nine: ten.', fits)).toEqual([
      'One two three,',
      'four five six;',
      'seven eight nine: ten.',
    ]);
    const input = 'Red, blue, green, yellow, black, white, brown, pink.';
    const pieces = splitForSpeech(input, fits);
    expect(pieces.map((p) => p.text)).toEqual(['Red, blue, green,', 'yellow, black, white,', 'brown, pink.']);
    expect(pieces.at(-1)!.end).toBe(input.length);
    for (const piece of pieces) expect(input.slice(0, piece.end).endsWith(piece.text.split(' ').at(-1)!)).toBe(true);
  });

  it('then between words, and a single word longer than a pass in parts', () => {
    const fits = (t: string) => t.length <= 8;
    expect(texts('aaaa bbbb cccc dddd', fits)).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    const long = splitForSpeech('0123456789012345', fits);
    expect(long.map((p) => p.text).join('')).toBe('0123456789012345');
    expect(long.every((p) => p.text.length <= 8)).toBe(true);
    expect(long.at(-1)!.end).toBe(16);
  });

  it('knows other scripts’ full stops', () => {
    expect(texts('你好。今天天气很好！')).toEqual(['你好。', '今天天气很好！']);
  });
});
