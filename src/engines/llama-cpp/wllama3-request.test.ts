import { describe, expect, it } from 'vitest';
import { completionRequest, pieceOf, PromptReuse, wllama3Gap, type Wllama3Plan } from './wllama3-request.ts';

const greedy: Wllama3Plan = {
  temperature: 0,
  topP: 1,
  seed: 7,
  maxTokens: 32,
  presencePenalty: 0,
  frequencyPenalty: 0,
};

describe('a plan as wllama 3 runs it', () => {
  it("switches off llama.cpp's own sampling defaults, which OpenAI's sampling has none of", () => {
    const request = completionRequest('Hi', { ...greedy, temperature: 0.8, topP: 0.9 }, true);
    // llama.cpp's server would otherwise cut to the 40 likeliest tokens and those above 5% of the likeliest's odds.
    expect(request).toMatchObject({ temperature: 0.8, top_p: 0.9, top_k: 0, min_p: 0, typical_p: 1 });
    expect(request).toMatchObject({ repeat_penalty: 1, dry_multiplier: 0, xtc_probability: 0, mirostat: 0 });
    expect(request).toMatchObject({ prompt: 'Hi', stream: true, max_tokens: 32, seed: 7, cache_prompt: true });
  });

  it("scales by the temperature before cutting the nucleus, as OpenAI does (llama.cpp's own chain cuts first)", () => {
    expect(completionRequest('Hi', { ...greedy, temperature: 0.5, topP: 0.9 }, true).samplers).toEqual([
      'temperature',
      'top_p',
    ]);
  });

  it("leaves a row without a seed to llama.cpp's own randomness, and asks for the counts on every chunk", () => {
    const { seed: _, ...unseeded } = greedy;
    const request = completionRequest('Hi', unseeded, true);
    expect('seed' in request).toBe(false);
    expect(request.timings_per_token).toBe(true);
  });

  it('sends logit_bias as [token id, bias] pairs and the grammar as GBNF', () => {
    const request = completionRequest(
      'Hi',
      { ...greedy, logitBias: { 66: -100, 103: 5 }, grammar: 'root ::= "a"' },
      false,
    );
    expect(request.logit_bias).toEqual([
      [66, -100],
      [103, 5],
    ]);
    expect(request.grammar).toBe('root ::= "a"');
    expect(request.cache_prompt).toBe(false);
  });

  it('names what it cannot run as Lantern defines it, and refuses to build such a request', () => {
    expect(wllama3Gap(greedy)).toBeUndefined();
    expect(wllama3Gap({ ...greedy, presencePenalty: 0.5 })).toEqual({
      param: 'presence_penalty',
      reason: expect.stringMatching(/penalties/),
    });
    expect(wllama3Gap({ ...greedy, frequencyPenalty: -1 })).toMatchObject({ param: 'frequency_penalty' });
    expect(wllama3Gap({ ...greedy, logprobs: 0 })).toMatchObject({ param: 'logprobs' });
    expect(() => completionRequest('Hi', { ...greedy, logprobs: 2 }, true)).toThrow(/logprobs/);
  });
});

describe("wllama 3's streamed chunks", () => {
  it('give their text, and on the last the finish and the counts', () => {
    expect(pieceOf({ choices: [{ text: 'day', finish_reason: null }] })).toEqual({ text: 'day' });
    expect(
      pieceOf({
        choices: [{ text: '', finish_reason: 'length' }],
        usage: { prompt_tokens: 52, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 49 } },
      }),
    ).toEqual({
      text: '',
      end: { reason: 'length', promptTokens: 52, completionTokens: 4, cachedTokens: 49 },
    });
    // Per-token timings: the counts so far on every chunk, the prompt's reused tokens included.
    expect(
      pieceOf({
        choices: [{ text: 'day', finish_reason: null }],
        timings: { prompt_n: 3, cache_n: 49, predicted_n: 2 },
      }),
    ).toEqual({ text: 'day', counts: { promptTokens: 52, completionTokens: 2, cachedTokens: 49 } });
    expect(pieceOf({ choices: [{ text: '', finish_reason: 'stop' }] }).end).toMatchObject({
      reason: 'stop',
      cachedTokens: 0,
    });
  });
});

describe('prompt reuse across cache scopes', () => {
  it('reuses while one scope has been served, and never once a second has', () => {
    const reuse = new PromptReuse();
    expect(reuse.admit('key-a')).toBe(true);
    expect(reuse.admit('key-a')).toBe(true);
    // Another scope's request may not start from key-a's prompts, nor key-a's from its own.
    expect(reuse.admit('key-b')).toBe(false);
    expect(reuse.admit('key-a')).toBe(false);
    expect(reuse.admit(undefined)).toBe(false);
  });
});
