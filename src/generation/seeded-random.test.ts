import { describe, expect, it } from 'vitest';
import { seededRandom } from './seeded-random.ts';

const draw = (seed: number | undefined, n = 50) => Array.from({ length: n }, seededRandom(seed));

describe('seededRandom', () => {
  it('repeats its sequence for a seed', () => {
    for (const seed of [0, 1, 42, -7, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER]) expect(draw(seed)).toEqual(draw(seed));
  });

  it('gives different sequences for different seeds, including seeds that differ only in the high word', () => {
    const sequences = [0, 1, 2, -1, 2 ** 32, 2 ** 33].map((s) => draw(s).join());
    expect(new Set(sequences).size).toBe(sequences.length);
  });

  it('draws uniformly from [0, 1)', () => {
    const values = draw(123, 20_000);
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
  });

  it('is random without a seed', () => {
    expect(draw(undefined)).not.toEqual(draw(undefined));
  });
});
