import type { SamplingConfig } from '@wllama/wllama/esm/index.js';
import { describe, expect, it } from 'vitest';
import { executesPlan, GREEDY_PLAN, type SamplingPlan } from '../../generation/sampling-plan.ts';
import { logitBiasOf } from '../../generation/sampling.ts';
import { samplerConfig, WLLAMA2_SAMPLING, WllamaSampler } from './wllama-sampler.ts';

/** wllama's sampler calls, recorded in the order sent; `fail` makes the next call of that name reject. */
function fakeWllama() {
  const calls: (['init', SamplingConfig, number[]] | ['accept', number[]])[] = [];
  const fail = new Set<string>();
  const answer = (name: string) => {
    if (!fail.delete(name)) return Promise.resolve();
    return Promise.reject(new Error(`${name} failed`));
  };
  return {
    calls,
    fail,
    samplingInit: (config: SamplingConfig, past: number[] = []) => (calls.push(['init', config, past]), answer('init')),
    samplingAccept: (tokens: number[]) => (calls.push(['accept', tokens]), answer('accept')),
  };
}

const plan = (fields: Partial<SamplingPlan>): SamplingPlan => ({ ...GREEDY_PLAN, ...fields });
const CONTEXT = 4096;
const VOCABULARY = 1000;

describe("wllama 2's sampler (WLLAMA2_SAMPLING)", () => {
  it('covers greedy plans with a bias and penalties, and leaves temperature, grammar and logprobs to the logits path', () => {
    const biased = plan({ logitBias: logitBiasOf({ 5: -100 }), presencePenalty: 1, frequencyPenalty: 0.5 });
    expect(executesPlan(WLLAMA2_SAMPLING, biased)).toBe(true);
    expect(executesPlan(WLLAMA2_SAMPLING, plan({ temperature: 0.7 }))).toBe(false);
    expect(executesPlan(WLLAMA2_SAMPLING, plan({ grammar: 'root ::= "a"' }))).toBe(false);
    expect(executesPlan(WLLAMA2_SAMPLING, plan({ logprobs: 0 }))).toBe(false);
  });

  it("maps a plan to wllama's config: greedy, the bias within the vocabulary, OpenAI's penalties over the context", () => {
    expect(samplerConfig(GREEDY_PLAN, CONTEXT, VOCABULARY)).toEqual({ temp: 0 });
    expect(samplerConfig(plan({ logitBias: logitBiasOf({ 3: 2.5, 7: -100, 5000: 1 }) }), CONTEXT, VOCABULARY)).toEqual({
      temp: 0,
      logit_bias: [
        { token: 3, bias: 2.5 },
        { token: 7, bias: -100 },
      ],
    });
    expect(samplerConfig(plan({ presencePenalty: 0.5, frequencyPenalty: -1 }), CONTEXT, VOCABULARY)).toEqual({
      temp: 0,
      penalty_last_n: CONTEXT,
      penalty_repeat: 1,
      penalty_freq: -1,
      penalty_present: 0.5,
    });
  });

  it('sets the sampler once for a row, and hands it the tokens it did not follow before each draw', async () => {
    const wllama = fakeWllama();
    const sampler = new WllamaSampler(wllama, CONTEXT, VOCABULARY);
    const penalized = plan({ frequencyPenalty: 1 });
    const row: number[] = [];
    await Promise.all(sampler.prepare({ plan: penalized, generated: row }));
    row.push(11); // drawn
    await Promise.all(sampler.prepare({ plan: penalized, generated: row }));
    row.push(12, 13); // drawn, then one the core forced
    await Promise.all(sampler.prepare({ plan: penalized, generated: row }));
    expect(wllama.calls).toEqual([
      ['init', samplerConfig(penalized, CONTEXT, VOCABULARY), []],
      ['accept', [11]],
      ['accept', [12, 13]],
    ]);
  });

  it('sets it again where the row is not what it followed: a token written in place of a draw, a new row', async () => {
    const wllama = fakeWllama();
    const sampler = new WllamaSampler(wllama, CONTEXT, VOCABULARY);
    const penalized = plan({ presencePenalty: 1 });
    await Promise.all(sampler.prepare({ plan: penalized, generated: [] }));
    await Promise.all(sampler.prepare({ plan: penalized, generated: [4] }));
    // The core wrote 9 where 4 was drawn and followed.
    await Promise.all(sampler.prepare({ plan: penalized, generated: [9, 5] }));
    // A new row of the same plan: its penalties count from nothing.
    await Promise.all(sampler.prepare({ plan: penalized, generated: [] }));
    const config = samplerConfig(penalized, CONTEXT, VOCABULARY);
    expect(wllama.calls).toEqual([
      ['init', config, []],
      ['accept', [4]],
      ['init', config, [9, 5]],
      ['init', config, []],
    ]);
  });

  it('keeps a configuration without history across rows and steps: an identical plan sets nothing', async () => {
    const wllama = fakeWllama();
    const sampler = new WllamaSampler(wllama, CONTEXT, VOCABULARY);
    const bias = { 2: 5 };
    await Promise.all(sampler.prepare({ plan: plan({ logitBias: logitBiasOf(bias) }), generated: [] }));
    await Promise.all(sampler.prepare({ plan: plan({ logitBias: logitBiasOf(bias) }), generated: [1, 2] }));
    await Promise.all(sampler.prepare({ plan: plan({ logitBias: logitBiasOf(bias) }), generated: [] }));
    await Promise.all(sampler.prepare({ plan: GREEDY_PLAN, generated: [] }));
    expect(wllama.calls.map(([call]) => call)).toEqual(['init', 'init']);
    expect(wllama.calls[1]).toEqual(['init', { temp: 0 }, []]);
  });

  it('is set again after a failed call, rather than drawing from a state it does not know', async () => {
    const wllama = fakeWllama();
    const sampler = new WllamaSampler(wllama, CONTEXT, VOCABULARY);
    const penalized = plan({ frequencyPenalty: 1 });
    await Promise.all(sampler.prepare({ plan: penalized, generated: [] }));
    wllama.fail.add('accept');
    await expect(Promise.all(sampler.prepare({ plan: penalized, generated: [3] }))).rejects.toThrow('accept failed');
    await Promise.all(sampler.prepare({ plan: penalized, generated: [3, 4] }));
    expect(wllama.calls.at(-1)).toEqual(['init', samplerConfig(penalized, CONTEXT, VOCABULARY), [3, 4]]);
  });
});
