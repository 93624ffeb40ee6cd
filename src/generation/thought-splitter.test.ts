import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ThoughtSplitter } from './thought-splitter.ts';

/** A reply fed in the given pieces: its thought and answer, as they came out. */
function split(pieces: string[]) {
  const splitter = new ThoughtSplitter();
  let thought = '';
  let answer = '';
  for (const piece of pieces) {
    const out = splitter.push(piece);
    thought += out.thought;
    answer += out.answer;
  }
  thought += splitter.flush();
  return { thought, answer };
}

/** Every way to cut a text into pieces, for a property: the cut points. */
const cutsOf = (text: string) =>
  fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, text.length - 1) }), { maxLength: text.length }).map((cuts) => {
    const at = [0, ...cuts.filter((c) => c < text.length).sort((a, b) => a - b), text.length];
    return at.slice(1).map((end, i) => text.slice(at[i], end));
  });

describe('ThoughtSplitter', () => {
  it('reads a Qwen3 reply: the thought without its tags and white space, then the answer', () => {
    expect(split(['<think>\nThe user asks for 3 plus 4.\n</think>\n\n3 plus 4 is 7.'])).toEqual({
      thought: 'The user asks for 3 plus 4.',
      answer: '3 plus 4 is 7.',
    });
  });

  it('gives the same split however the reply is cut into pieces (tags split across tokens included)', () => {
    const reply = '<think>\nA thought with < and </thin and a </ in it.\n\n</think>\n\n{"a": "</think>"}';
    fc.assert(
      fc.property(cutsOf(reply), (pieces) => {
        expect(split(pieces)).toEqual({
          thought: 'A thought with < and </thin and a </ in it.',
          answer: '{"a": "</think>"}',
        });
      }),
    );
  });

  it('reads a thought whose opening tag the template wrote (DeepSeek-R1) and a reply that never closes it', () => {
    expect(split(['Hmm, ', 'let me see.', '\n</think>', '\n\nYes.'])).toEqual({
      thought: 'Hmm, let me see.',
      answer: 'Yes.',
    });
    // Cut by max_tokens while thinking: all of it is thought, and no answer.
    expect(split(['<think>\n', 'Still thinking ', ' '])).toEqual({ thought: 'Still thinking', answer: '' });
    expect(split(['<thi'])).toEqual({ thought: '<thi', answer: '' });
    expect(split(['<think>', '\n\n', '</think>', '\n\n', 'Hi'])).toEqual({ thought: '', answer: 'Hi' });
  });
});
