import { describe, expect, it } from 'vitest';
import { fuseRankings, RRF_K, topSlots } from './rank-fusion.ts';

describe('fuseRankings', () => {
  it('sums weighted reciprocal ranks, scaled so that first in every ranking is 1', () => {
    const fused = fuseRankings([
      { slots: [4, 2], weight: 1 },
      { slots: [2, 7], weight: 1 },
    ]);
    expect(fused.get(4)).toBeCloseTo(0.5, 12);
    expect(fused.get(2)).toBeCloseTo((1 / (RRF_K + 2) + 1 / (RRF_K + 1)) / (2 / (RRF_K + 1)), 12);
    expect(fused.get(7)).toBeCloseTo((RRF_K + 1) / (RRF_K + 2) / 2, 12);
    expect(
      fuseRankings([
        { slots: [1], weight: 3 },
        { slots: [1], weight: 1 },
      ]).get(1),
    ).toBe(1);
  });

  it('weighs the rankings', () => {
    const fused = fuseRankings([
      { slots: [1], weight: 3 },
      { slots: [2], weight: 1 },
    ]);
    expect(fused.get(1)).toBeCloseTo(0.75, 12);
    expect(fused.get(2)).toBeCloseTo(0.25, 12);
    expect(
      fuseRankings([
        { slots: [1], weight: 0 },
        { slots: [2], weight: 1 },
      ]),
    ).toEqual(new Map([[2, 1]]));
    expect(fuseRankings([{ slots: [1], weight: 0 }])).toEqual(new Map());
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
