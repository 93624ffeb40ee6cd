/**
 * Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009), weighted, with the fused score scaled to 0..1: how the
 * full-text ranking and the vector ranking of one query become one. OpenAI's `ranking_options.hybrid_search` weighs
 * "the embedding in the reciprocal ranking fusion" against "the text", so this is also what its weights mean there.
 *
 * Fusing ranks rather than scores is what lets the two meet at all: BM25 scores are unbounded and depend on the
 * query's length and the corpus, cosine similarities bunch between 0.2 and 0.8 differently for every embedding
 * model, so any mix of the raw scores needs per-model, per-corpus calibration that an index in a browser has no data
 * for. A rank means the same thing in both lists.
 *
 * The cost: a decisive BM25 win (the one chunk that has a part number) counts like any first place. When the vectors
 * rank that chunk low and a near-duplicate (the same spec sheet for a sibling model) well in both lists, the
 * near-duplicate wins. In a trial with the tests' stand-in embedding on eight such spec passages, relative score
 * fusion (each list's scores min-max scaled, then summed) ranked the right one first for 13 of 16 part-number
 * questions against RRF's 8, and did no worse on the tests' other questions; whether that holds with a real embedding
 * model is for the benchmark to tell.
 */

/**
 * RRF's constant, as in the paper and in most engines since (Elasticsearch, Azure AI Search, OpenSearch): large
 * enough that the first few ranks differ little, so one list's first place cannot outvote agreement between the two.
 */
export const RRF_K = 60;

/** One ranking to fuse: chunk slots, best first, and how much it counts. */
export interface Ranking {
  slots: readonly number[];
  weight: number;
}

/**
 * Each ranked chunk's weighted RRF score, over the score of a chunk ranked first in every ranking, so 1 is the best
 * there can be and a chunk absent from a ranking gets nothing from it. A chunk ranked first by the text and nowhere
 * by the vectors, with equal weights, scores 0.5; ranked tenth by both, 61/70 ≈ 0.87.
 *
 * @example
 * fuseRankings([{ slots: [4, 2], weight: 1 }, { slots: [2, 7], weight: 1 }]);
 * // Map { 4 => 0.5, 2 => 0.9919, 7 => 0.4919 }: 2 (second and first) ahead of 4 (first in one list only)
 */
export function fuseRankings(rankings: readonly Ranking[]): Map<number, number> {
  const fused = new Map<number, number>();
  const best = rankings.reduce((sum, ranking) => sum + ranking.weight, 0) / (RRF_K + 1);
  if (!(best > 0)) return fused;
  for (const { slots, weight } of rankings) {
    if (weight <= 0) continue;
    slots.forEach((slot, index) => {
      fused.set(slot, (fused.get(slot) ?? 0) + weight / (RRF_K + index + 1) / best);
    });
  }
  return fused;
}

/**
 * The `count` slots of highest score among those given, best first, by a bounded min-heap: one pass over 10,000
 * similarities, most of them rejected by one comparison with the heap's least, instead of sorting them all.
 * Ties go to the lower `order` (the caller's stable order of chunks), so that equal scores rank the same every time.
 */
export function topSlots(
  count: number,
  scores: ArrayLike<number>,
  include: (slot: number) => boolean,
  order: (a: number, b: number) => number,
): number[] {
  const heap: number[] = [];
  // True when `a` ranks below `b`: the heap keeps its lowest-ranked slot at the root, to be pushed out first.
  const below = (a: number, b: number) => scores[a]! < scores[b]! || (scores[a] === scores[b] && order(a, b) > 0);
  for (let slot = 0; slot < scores.length; slot++) {
    if (scores[slot] === -Infinity || !include(slot)) continue;
    if (heap.length < count) {
      heap.push(slot);
      siftUp(heap, heap.length - 1, below);
    } else if (count > 0 && below(heap[0]!, slot)) {
      heap[0] = slot;
      siftDown(heap, 0, below);
    }
  }
  return heap.sort((a, b) => (below(a, b) ? 1 : below(b, a) ? -1 : 0));
}

function siftUp(heap: number[], at: number, below: (a: number, b: number) => boolean): void {
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (!below(heap[at]!, heap[parent]!)) return;
    [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
    at = parent;
  }
}

function siftDown(heap: number[], at: number, below: (a: number, b: number) => boolean): void {
  for (;;) {
    const left = 2 * at + 1;
    const right = left + 1;
    let least = at;
    if (left < heap.length && below(heap[left]!, heap[least]!)) least = left;
    if (right < heap.length && below(heap[right]!, heap[least]!)) least = right;
    if (least === at) return;
    [heap[at], heap[least]] = [heap[least]!, heap[at]!];
    at = least;
  }
}
