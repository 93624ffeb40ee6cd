import { describe, expect, it } from 'vitest';
import { saturate, topSlots, vectorRelevance } from './relevance.ts';

describe('saturate', () => {
  it('maps a BM25 ratio to 0..1: 0.8 for an ideal chunk, rising ever more slowly', () => {
    expect(saturate(0)).toBe(0);
    expect(saturate(-1)).toBe(0);
    expect(saturate(1)).toBeCloseTo(0.8, 12);
    expect(saturate(2)).toBeCloseTo(0.96, 12);
    expect(saturate(0.5)).toBeLessThan(saturate(1));
    expect(saturate(1e6)).toBeLessThanOrEqual(1);
  });
});

describe('vectorRelevance', () => {
  it('is the similarity, and 0 for a negative one', () => {
    expect(vectorRelevance(0.62)).toBe(0.62);
    expect(vectorRelevance(-0.3)).toBe(0);
  });
});

describe('topSlots', () => {
  const byValue = (a: number, b: number) => a - b;

  it('keeps the highest scores, best first, skipping -Infinity and excluded slots', () => {
    const scores = Float32Array.from([0.1, 0.9, -Infinity, 0.5, 0.7, 0.3]);
    expect(topSlots(3, scores, () => true, byValue)).toEqual([1, 4, 3]);
    expect(topSlots(3, scores, (slot) => slot !== 4, byValue)).toEqual([1, 3, 5]);
    expect(topSlots(10, scores, () => true, byValue)).toEqual([1, 4, 3, 5, 0]);
    expect(topSlots(0, scores, () => true, byValue)).toEqual([]);
  });

  it('breaks ties by the given order, whatever the order of the slots', () => {
    const scores = [0.5, 0.5, 0.5, 0.5, 0.9];
    expect(topSlots(3, scores, () => true, byValue)).toEqual([4, 0, 1]);
    expect(
      topSlots(
        3,
        scores,
        () => true,
        (a, b) => b - a,
      ),
    ).toEqual([4, 3, 2]);
  });

  it('agrees with a full sort', () => {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const scores = Array.from({ length: 1000 }, () => Math.round(random() * 50) / 50);
    const sorted = scores.map((_, slot) => slot).sort((a, b) => scores[b]! - scores[a]! || a - b);
    expect(topSlots(100, scores, () => true, byValue)).toEqual(sorted.slice(0, 100));
  });
});
