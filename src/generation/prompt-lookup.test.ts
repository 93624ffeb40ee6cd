import { describe, expect, it } from 'vitest';
import { PromptLookup } from './prompt-lookup.ts';

/** Prompt lookup's proposals and their adaptation, on token lists (no model). */
describe('PromptLookup', () => {
  const prompt = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14];

  it('proposes what followed the latest earlier occurrence of the last tokens', () => {
    const lookup = new PromptLookup();
    // The reply so far ends with 7 8: what followed 7 8 in the prompt comes next.
    expect(lookup.propose([...prompt, 1, 7, 8], prompt.length, 10)).toEqual([9, 10, 11, 12]);
    // The latest occurrence wins, and the longest n-gram that occurs.
    const context = [1, 2, 3, 4, 9, 2, 3, 5, 9, 1, 2, 3];
    expect(new PromptLookup().propose(context, 8, 10)).toEqual([4, 9, 2, 3]);
    expect(new PromptLookup().propose([1, 2, 3, 9, 2, 3], 3, 10)).toEqual([9, 2, 3]);
  });

  it('proposes nothing where the last tokens never occurred, or only the last one did', () => {
    expect(new PromptLookup().propose([...prompt, 40, 41], prompt.length, 8)).toEqual([]);
    expect(new PromptLookup().propose([...prompt, 40, 9], prompt.length, 8)).toEqual([]);
  });

  it("never proposes a position that is not a token (an image's)", () => {
    expect(new PromptLookup().propose([1, 2, 3, -1, -1, 4, 9, 1, 2], 7, 8)).toEqual([3]);
  });

  it('keeps to the limit', () => {
    expect(new PromptLookup().propose([...prompt, 6, 7], prompt.length, 2)).toEqual([8, 9]);
  });

  it('searches the prediction first, from its beginning before anything is generated', () => {
    const lookup = new PromptLookup([30, 31, 32, 33, 34, 35, 36]);
    expect(lookup.propose(prompt, prompt.length, 3)).toEqual([30, 31, 32]);
    for (let i = 0; i < 3; i++) lookup.accept();
    // All accepted: the next proposal is longer, from where the reply has reached in the prediction.
    expect(lookup.propose([...prompt, 30, 31, 32, 33], prompt.length, 16)).toEqual([34, 35, 36]);
    // A prediction that does not hold the reply's end: the context is searched.
    expect(new PromptLookup([30, 31]).propose([...prompt, 8, 9], prompt.length, 2)).toEqual([10, 11]);
  });

  it('grows with accepted proposals and backs off, for longer each time, after failed ones', () => {
    const lookup = new PromptLookup();
    const repeating = [...prompt, ...prompt, ...prompt.slice(0, 2)];
    expect(lookup.propose(repeating, prompt.length, 100)).toHaveLength(4);
    for (let i = 0; i < 4; i++) lookup.accept();
    expect(lookup.propose(repeating, prompt.length, 100)).toHaveLength(8);
    // Nothing of it accepted: one step without proposals, then two after the next failure.
    const skipped = (steps: number) => Array.from({ length: steps }, () => lookup.propose(repeating, 10, 100).length);
    expect(skipped(2)).toEqual([0, 4]);
    expect(skipped(3)).toEqual([0, 0, 4]);
    lookup.accept();
    expect(skipped(1)).toEqual([2]);
    expect(lookup.proposed).toBe(4 + 8 + 4 + 4 + 2);
    expect(lookup.accepted).toBe(5);
  });
});
