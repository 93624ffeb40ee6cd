import { describe, expect, it } from 'vitest';
import { withBothReasoningNames } from './reasoning-names.ts';

describe('withBothReasoningNames', () => {
  it('adds the missing name beside the one a server wrote, on a message or a delta, null counting as missing', () => {
    expect(withBothReasoningNames({ choices: [{ index: 0, message: { content: 'A', reasoning: 'T' } }] })).toEqual({
      choices: [{ index: 0, message: { content: 'A', reasoning: 'T', reasoning_content: 'T' } }],
    });
    expect(withBothReasoningNames({ choices: [{ delta: { reasoning_content: 'T', reasoning: null } }] })).toEqual({
      choices: [{ delta: { reasoning_content: 'T', reasoning: 'T' } }],
    });
  });

  it("leaves alone what needs nothing (the same object): no thought, both names (the server's own), no choices", () => {
    for (const answer of [
      { choices: [{ delta: { content: 'A' } }, { delta: {} }] },
      { choices: [{ message: { reasoning_content: 'T', reasoning: 'another' } }] },
      { choices: [], usage: { prompt_tokens: 1 } },
      { error: { message: 'x' } },
    ]) {
      expect(withBothReasoningNames(answer)).toBe(answer);
    }
  });
});
