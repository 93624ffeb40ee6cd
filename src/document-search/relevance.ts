/**
 * How a chunk's full-text and vector matches become one score that means relevance: each side's raw score mapped to
 * 0..1 on a fixed scale (no ranks, nothing relative to the other hits), then weighed (OpenAI's
 * `ranking_options.hybrid_search`), so that a `score_threshold` cuts what is unrelated and a query about something
 * else scores low.
 *
 * This replaced reciprocal rank fusion. RRF fused ranks, so tenth place in both rankings scored 0.87 however
 * poor a match it was, an off-topic query's best hit scored near 1, and a threshold cut by rank. It also let a noisy
 * ranking outvote a decisive one: on the bench's SQuAD set, where the bundled embedding model (then of random weights)
 * made the vector ranking noise, RRF found the answer in the top 5 for 36% of the questions against full text's 97%; mixing
 * scores, a ranking of noise moves each score by little, as its similarities differ by little.
 */

/**
 * A ratio of BM25 scores (a chunk's, over that of a chunk holding each query term once; see HybridIndex) mapped to
 * 0..1: 0 for none, 0.8 for 1, 0.96 for 2, rising ever more slowly, so that repeating a term adds less each time.
 *
 * @example
 * saturate(1); // 0.8
 */
export function saturate(ratio: number): number {
  return ratio > 0 ? 1 - Math.pow(5, -ratio) : 0;
}

/**
 * A cosine similarity as relevance: itself, 0 when negative (opposite is no more relevant than unrelated). Sentence
 * embedding models give unrelated texts 0 to 0.2 and a passage that answers a question 0.5 to 0.8; models whose
 * similarities bunch higher (a model of random weights gives everything 0.9) lift every score alike, which a
 * threshold must allow for.
 */
export function vectorRelevance(similarity: number): number {
  return Math.max(0, similarity);
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
