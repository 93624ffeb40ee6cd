import { describe, expect, it } from 'vitest';
import { adjustLogits, argmax, logitBiasOf, sampleToken, type SamplingParams } from './sampling.ts';
import { seededRandom } from './seeded-random.ts';

const params = (overrides: Partial<SamplingParams> = {}): SamplingParams => ({
  temperature: 1,
  topP: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  ...overrides,
});

/** Logits whose softmax is exactly `probs`. */
const logitsOf = (probs: number[]) => Float32Array.from(probs, Math.log);

function frequencies(logits: Float32Array, p: SamplingParams, draws = 20_000, seed = 1) {
  const random = seededRandom(seed);
  const counts = new Array<number>(logits.length).fill(0);
  for (let i = 0; i < draws; i++) counts[sampleToken(Float32Array.from(logits), p, random)]! += 1;
  return counts.map((c) => c / draws);
}

describe('sampleToken', () => {
  it('draws in proportion to the softmax at temperature 1', () => {
    const f = frequencies(logitsOf([0.5, 0.3, 0.15, 0.05]), params());
    [0.5, 0.3, 0.15, 0.05].forEach((p, i) => expect(f[i]).toBeCloseTo(p, 1));
  });

  it('keeps only the top-p nucleus', () => {
    const f = frequencies(logitsOf([0.5, 0.3, 0.15, 0.05]), params({ topP: 0.75 }));
    expect(f[2]).toBe(0);
    expect(f[3]).toBe(0);
    expect(f[0]).toBeCloseTo(0.5 / 0.8, 1);
  });

  it.each([1e-6, 0])('draws only the most likely token with top_p %d, at any temperature', (topP) => {
    const f = frequencies(logitsOf([0.2, 0.35, 0.3, 0.15]), params({ topP, temperature: 2 }), 2000);
    expect(f).toEqual([0, 1, 0, 0]);
  });

  it('sharpens with low temperature and flattens with high temperature', () => {
    const logits = logitsOf([0.6, 0.4]);
    expect(frequencies(logits, params({ temperature: 0.2 }))[0]).toBeGreaterThan(0.85);
    expect(frequencies(logits, params({ temperature: 2 }))[0]).toBeLessThan(0.6);
  });

  it('is reproducible for a seed', () => {
    const logits = logitsOf([0.25, 0.25, 0.25, 0.25]);
    const run = (seed: number) => {
      const random = seededRandom(seed);
      return Array.from({ length: 32 }, () => sampleToken(Float32Array.from(logits), params(), random));
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
  });

  it('never draws a token whose logit is -Infinity', () => {
    const f = frequencies(Float32Array.from([0, -Infinity, 0]), params(), 2000);
    expect(f[1]).toBe(0);
  });
});

describe('adjustLogits', () => {
  it('applies the OpenAI penalty formula to generated tokens and adds logit_bias', () => {
    const logits = Float32Array.from([1, 1, 1, 1]);
    const counts = new Map([
      [1, 1],
      [2, 3],
    ]);
    adjustLogits(
      logits,
      params({ presencePenalty: 0.5, frequencyPenalty: 0.25, logitBias: logitBiasOf({ 3: -100, 9: 5 }) }),
      counts,
    );
    expect(Array.from(logits)).toEqual([1, 1 - 0.25 - 0.5, 1 - 0.75 - 0.5, -99]);
  });

  it('leaves logits alone without penalties or bias', () => {
    const logits = Float32Array.from([0.1, 0.2]);
    adjustLogits(logits, params(), new Map([[0, 5]]));
    expect(Array.from(logits)).toEqual([Math.fround(0.1), Math.fround(0.2)]);
    expect(argmax(logits)).toBe(1);
  });
});
