/**
 * The search index of one vector store: its files' chunks, searched by full text (BM25, by MiniSearch) and by
 * embedding (exact cosine similarity), the two relevances mixed. Hybrid, because each finds what the other misses: a
 * small embedding model places "holiday" near "vacation" but cannot tell "XR-7734" from "XR-7735", and BM25 is the
 * other way round.
 *
 * It holds no storage of its own: the caller keeps the chunks and a {@link HybridIndex.fullTextSnapshot}, and
 * {@link HybridIndex.restore}s from them. Runs the same in Node and a service worker.
 */
import MiniSearch, { type Options } from 'minisearch';
import { type AttributeFilter, type Attributes, matchesFilter } from './attribute-filter.ts';
import { saturate, topSlots, vectorRelevance } from './relevance.ts';
import { indexTerm, queryTerm, TEXT_ANALYSIS_VERSION, tokenize } from './text-analysis.ts';
import { VectorMatrix } from './vector-matrix.ts';

/** One chunk as the index holds it. */
export interface IndexedChunk {
  /** Unique in the index: adding a chunk with the id of one held replaces it. */
  id: string;
  fileId: string;
  filename: string;
  text: string;
  attributes: Attributes;
  /**
   * One or more embeddings of the chunk (a chunk longer than the embedding model's window is embedded in windows);
   * its vector score is the best of them. Any length but zero: the index scales a copy to unit length. Empty for a
   * chunk found by full text only.
   */
  vectors: Float32Array[];
}

export interface SearchOptions {
  /** One or more queries (OpenAI's `query` may be an array): a chunk's score is its best over them. */
  queries: string[];
  /** The queries' embeddings, in the same order. Absent: full text only. */
  queryVectors?: Float32Array[];
  /** At most this many hits (OpenAI allows 1..50). */
  maxResults: number;
  /** Only chunks whose attributes pass it are ranked, so every one of the `maxResults` passes. */
  filter?: AttributeFilter;
  /**
   * 0..1: hits scoring below are dropped. The score is a relevance (see {@link HybridIndex.search}), so this drops
   * chunks that hold too little of the query, however they rank.
   */
  scoreThreshold?: number;
  /** OpenAI's `ranking_options.hybrid_search` (`text_weight`, `embedding_weight`). Default: equal. */
  weights?: { text: number; vector: number };
  /** Which rankings to use: both (the default), the full text alone, or the vectors alone (which needs query vectors). */
  mode?: 'hybrid' | 'text' | 'vector';
}

export interface SearchHit {
  chunk: IndexedChunk;
  /** 0..1, higher is better. */
  score: number;
}

/**
 * What MiniSearch's BM25+ gives one occurrence of a term in a field of average length, per unit of the term's idf:
 * δ + (k + 1) / (1 + k) = δ + 1, with its defaults (k 1.2, b 0.7, δ 0.5), which TEXT_OPTIONS keeps.
 */
const BM25_ONE_OCCURRENCE = 1.5;

/**
 * How much a match in the file's name counts against one in the chunk's text. Less than the text, as every chunk of
 * a file shares the name: it should lift a file's chunks when the query names the file ("the handbook"), not outrank
 * the passage that answers.
 */
const FILENAME_BOOST = 0.3;

/**
 * Fuzzy matching only for query terms of this length or more, within a fifth of their letters (one typo in five to
 * seven letters, two in eight to twelve): shorter terms have too many neighbours ("ram": "rat", "raw"), and codes must
 * match exactly. Measured on the tests' questions, by full text alone: fuzzy matching puts the answers to all six
 * misspelt ones in the top 5 where exact terms find two, and changes nothing for the thirty others. Prefix matching
 * (below) changes nothing there; it is kept for word forms that the plural stemmer leaves apart ("beamform" for
 * "beamforming"), which it found in an earlier version of the questions.
 */
const FUZZY_MIN_LENGTH = 5;
const FUZZY = 0.2;

/** What MiniSearch indexes of a chunk. */
interface TextDocument {
  id: string;
  text: string;
  filename: string;
}

/** The snapshot's first line: what wrote it. MiniSearch's own JSON follows on the second. */
interface SnapshotHeader {
  format: 'lantern-document-search';
  /** {@link TEXT_ANALYSIS_VERSION}: a snapshot whose terms were made another way is rebuilt, not loaded. */
  analysis: number;
}

const TEXT_OPTIONS: Options<TextDocument> = {
  fields: ['text', 'filename'],
  storeFields: [],
  tokenize,
  processTerm: indexTerm,
  searchOptions: {
    boost: { filename: FILENAME_BOOST },
    processTerm: queryTerm,
    fuzzy: (term) => (term.length >= FUZZY_MIN_LENGTH && !/\d/.test(term) ? FUZZY : false),
    // Prefix matching on the last term only, as a user types: it also matches "refund" with "refunded".
    prefix: (term, index, terms) => index === terms.length - 1 && term.length >= 3 && !/\d/.test(term),
  },
};

/** A held chunk: where it sits in the slot list and which rows of the vector matrix are its. */
interface Entry {
  chunk: IndexedChunk;
  slot: number;
  rows: number[];
}

/**
 * A hybrid full-text and vector index over document chunks, with OpenAI's attribute filters and ranking options.
 *
 * @example
 * const index = new HybridIndex();
 * index.add([{ id: 'c1', fileId: 'file-1', filename: 'manual.pdf', text: 'Hold reset for ten seconds.',
 *   attributes: { lang: 'en' }, vectors: [await embed('Hold reset for ten seconds.')] }]);
 * index.search({ queries: ['how to reset'], queryVectors: [await embed('how to reset')], maxResults: 10 });
 * // [{ chunk: { id: 'c1', … }, score: 1 }]
 */
export class HybridIndex {
  #text: MiniSearch<TextDocument>;
  #vectors = new VectorMatrix();
  /** Held chunks by slot: dense, so that per-search arrays are indexed by slot. Removal moves the last into the gap. */
  #entries: Entry[] = [];
  #byId = new Map<string, Entry>();
  #byFile = new Map<string, Set<Entry>>();

  /** An empty index. */
  constructor() {
    this.#text = new MiniSearch(TEXT_OPTIONS);
  }

  /**
   * An index restored from {@link fullTextSnapshot} and the chunks it was built from, without re-indexing their text
   * (only their vectors are copied in): a service worker that restarts reloads a 10,000-chunk store quickly. When the
   * snapshot does not hold exactly these chunks (storage saved one but not the other before a crash), or was made by
   * another version of the text analysis, the text is re-indexed from the chunks instead: slower, never wrong.
   *
   * @example
   * const snapshot = index.fullTextSnapshot();
   * const again = HybridIndex.restore(snapshot, chunks); // searches exactly as `index` does
   */
  static restore(snapshot: string, chunks: Iterable<IndexedChunk>): HybridIndex {
    const index = new HybridIndex();
    const list = [...chunks];
    const text = loadSnapshot(snapshot);
    if (text === undefined || text.documentCount !== list.length || !list.every((chunk) => text.has(chunk.id))) {
      index.add(list);
      return index;
    }
    index.#checkVectors(list);
    index.#addEntries(list);
    index.#text = text;
    return index;
  }

  /**
   * Adds chunks; one with the id of a chunk already held replaces it. Throws a RangeError, adding nothing, when a
   * vector is all zeros or its length differs from the index's other vectors (those of another embedding model).
   */
  add(chunks: IndexedChunk[]): void {
    this.#checkVectors(chunks);
    const replaced = chunks.map((chunk) => this.#byId.get(chunk.id)).filter((entry) => entry !== undefined);
    this.#remove(new Set(replaced));
    // Within the batch too, the last of a repeated id wins.
    const latest = [...new Map(chunks.map((chunk) => [chunk.id, chunk])).values()];
    this.#addEntries(latest);
    this.#text.addAll(latest.map(({ id, text, filename }) => ({ id, text, filename })));
  }

  /** Removes every chunk of a file. */
  removeFile(fileId: string): void {
    const entries = this.#byFile.get(fileId);
    if (entries) this.#remove(entries);
  }

  /**
   * Replaces the attributes of every chunk of a file (a vector store file's attributes can be modified later). Chunks
   * already returned in hits keep the attributes they had.
   */
  setAttributes(fileId: string, attributes: Attributes): void {
    for (const entry of this.#byFile.get(fileId) ?? []) {
      entry.chunk = { ...entry.chunk, attributes: { ...attributes } };
    }
  }

  /** Chunks held. */
  get size(): number {
    return this.#entries.length;
  }

  /**
   * The best chunks for the queries, best first, at most `maxResults` of them, none below `scoreThreshold`.
   *
   * A chunk's score for a query is its relevance, 0..1: the weighted mean of its full-text relevance (BM25 against
   * that of a chunk holding each of the query's terms once, saturated; see `#textRelevance`) and its vector relevance
   * (its best cosine similarity with the query, 0 when negative). It says how well the chunk answers, not where it
   * ranks. With the tests' stand-in embedding, keyword questions' answers score 0.47 to 0.69 and the best hits of
   * questions about nothing the corpus holds under 0.23 (docs/file-search.md). Over several queries a chunk keeps its
   * best query's score, ties going to the chunk that scored higher over all queries together, then to the lower id.
   * Scores are comparable between stores searched with the same model.
   *
   * Throws a RangeError when `queryVectors` do not pair with `queries`, have another length than the index's vectors
   * or are all zeros, and when mode `vector` comes without them.
   *
   * @example
   * index.search({ queries: ['XR-7734 range'], queryVectors: [vector], maxResults: 5,
   *   filter: { type: 'eq', key: 'department', value: 'support' }, weights: { text: 1, vector: 2 } });
   */
  search(options: SearchOptions): SearchHit[] {
    const { queries, queryVectors, filter, scoreThreshold = 0 } = options;
    const mode = options.mode ?? 'hybrid';
    if (queryVectors !== undefined && queryVectors.length !== queries.length) {
      throw new RangeError(`${queryVectors.length} query vectors for ${queries.length} queries.`);
    }
    if (mode === 'vector' && queryVectors === undefined) throw new RangeError('Mode vector needs query vectors.');
    const useText = mode !== 'vector';
    const useVectors = mode !== 'text' && queryVectors !== undefined;
    const passes =
      filter === undefined ? undefined : this.#entries.map((entry) => matchesFilter(entry.chunk.attributes, filter));
    const include = passes === undefined ? () => true : (slot: number) => passes[slot]!;

    // Per slot: the best score over the queries, and the sum over them for ties. The best `maxResults` of each query
    // hold the best `maxResults` over all of them.
    const maxResults = Math.max(0, Math.floor(options.maxResults));
    const best = new Map<number, { score: number; total: number }>();
    queries.forEach((query, i) => {
      const queryVector = useVectors ? queryVectors![i]! : undefined;
      for (const [slot, score] of this.#scoreQuery(query, queryVector, useText, options, include, maxResults)) {
        const seen = best.get(slot);
        if (seen === undefined) best.set(slot, { score, total: score });
        else {
          seen.score = Math.max(seen.score, score);
          seen.total += score;
        }
      }
    });

    return [...best]
      .filter(([, { score }]) => score >= scoreThreshold)
      .sort(([a, x], [b, y]) => y.score - x.score || y.total - x.total || this.#order(a, b))
      .slice(0, maxResults)
      .map(([slot, { score }]) => ({ chunk: this.#entries[slot]!.chunk, score: Math.min(1, score) }));
  }

  /**
   * The full-text index as a string, for storage beside the chunks: a header line, then MiniSearch's JSON. It holds
   * terms and ids, not the chunks' text or vectors, which {@link restore} takes from the caller.
   */
  fullTextSnapshot(): string {
    const header: SnapshotHeader = { format: 'lantern-document-search', analysis: TEXT_ANALYSIS_VERSION };
    return `${JSON.stringify(header)}\n${JSON.stringify(this.#text)}`;
  }

  /**
   * One query's relevance by slot, the `count` best of the chunks that `include` admits: each side's relevance (see
   * `#textRelevance` and {@link vectorRelevance}) weighted and averaged. A chunk that neither side finds (no term
   * of the query, no vectors) is not a hit at all.
   */
  #scoreQuery(
    query: string,
    queryVector: Float32Array | undefined,
    useText: boolean,
    options: SearchOptions,
    include: (slot: number) => boolean,
    count: number,
  ): Map<number, number> {
    const weights = fusionWeights(options.weights, useText, queryVector !== undefined);
    const total = weights.text + weights.vector;
    const scores = new Float64Array(this.#entries.length).fill(-Infinity);
    if (weights.vector > 0) {
      const similarities = this.#similarities(queryVector!);
      for (let slot = 0; slot < scores.length; slot++) {
        if (similarities[slot] !== -Infinity) {
          scores[slot] = (weights.vector * vectorRelevance(similarities[slot]!)) / total;
        }
      }
    }
    if (weights.text > 0) {
      for (const [slot, relevance] of this.#textRelevance(query)) {
        scores[slot] = Math.max(0, scores[slot]!) + (weights.text * relevance) / total;
      }
    }
    const slots = topSlots(count, scores, include, (a, b) => this.#order(a, b));
    return new Map(slots.map((slot) => [slot, scores[slot]!]));
  }

  /**
   * Each chunk's full-text relevance to the query, 0..1, for the chunks that hold a term of it (all of them, filter or
   * not, as the terms' document frequencies count every chunk).
   *
   * BM25 alone is unbounded and grows with the query's length and the corpus's size, so it is measured here against
   * the score of an ideal chunk: one that holds each of the query's terms once, in a text of average length (MiniSearch
   * scores a term there idf × (δ + 1), and multiplies a chunk's sum by the number of the query's terms it holds). That
   * ratio is 1 for such a chunk, less for one that misses the query's rarer terms or holds them only misspelt or in
   * its filename, more for one that repeats them; {@link saturate} maps it to 0..1. A query's term that no chunk holds
   * counts as the rarest there is, so a query about something else finds little.
   */
  #textRelevance(query: string): Map<number, number> {
    const terms = tokenize(query).flatMap((term) => queryTerm(term) ?? []);
    if (terms.length === 0) return new Map();
    const hits = this.#text.search(query);
    const documents = this.#text.documentCount;
    const frequency = new Map(terms.map((term) => [term, 0]));
    // A misspelt term's frequency is that of the words it matched: it is as rare as they are, not absent.
    for (const hit of hits) {
      for (const term of new Set(hit.queryTerms)) frequency.set(term, (frequency.get(term) ?? 0) + 1);
    }
    const idf = (term: string) => {
      const df = frequency.get(term)!;
      return Math.log(1 + (documents - df + 0.5) / (df + 0.5));
    };
    const ideal = terms.reduce((sum, term) => sum + idf(term) * BM25_ONE_OCCURRENCE, 0) * frequency.size;
    return new Map(hits.map((hit) => [this.#byId.get(hit.id as string)!.slot, saturate(hit.score / ideal)]));
  }

  /** Each slot's best cosine similarity with the query, -Infinity for chunks without vectors. */
  #similarities(queryVector: Float32Array): Float32Array {
    const best = new Float32Array(this.#entries.length).fill(-Infinity);
    if (this.#vectors.rows > 0) {
      this.#vectors.check([queryVector], 'A query');
      this.#vectors.bestSimilarities(queryVector, best);
    }
    return best;
  }

  /** Chunks in a fixed order for ties (by id), so that a restored index ranks exactly as the one it came from. */
  #order(a: number, b: number): number {
    return compareIds(this.#entries[a]!.chunk.id, this.#entries[b]!.chunk.id);
  }

  /** Throws a RangeError unless every vector of the chunks can join the index (see {@link VectorMatrix.check}). */
  #checkVectors(chunks: readonly IndexedChunk[]): void {
    let width = this.#vectors.dimensions;
    for (const chunk of chunks) width = this.#vectors.check(chunk.vectors, `Chunk ${chunk.id}`, width);
  }

  /** Takes chunks into the slot list, the maps and the vector matrix (the caller indexes their text). */
  #addEntries(chunks: readonly IndexedChunk[]): void {
    for (const chunk of chunks) {
      const slot = this.#entries.length;
      const entry: Entry = {
        chunk: { ...chunk, attributes: { ...chunk.attributes } },
        slot,
        rows: this.#vectors.append(slot, chunk.vectors),
      };
      this.#entries.push(entry);
      this.#byId.set(chunk.id, entry);
      let file = this.#byFile.get(chunk.fileId);
      if (file === undefined) this.#byFile.set(chunk.fileId, (file = new Set()));
      file.add(entry);
    }
  }

  #remove(entries: ReadonlySet<Entry>): void {
    if (entries.size === 0) return;
    // MiniSearch marks discarded documents and cleans its index up later, in the background (its auto-vacuum).
    this.#text.discardAll([...entries].map((entry) => entry.chunk.id));
    for (const entry of [...entries]) {
      // Highest row first: the row moved into a gap is then always another chunk's.
      for (const row of entry.rows.sort((a, b) => b - a)) {
        const movedSlot = this.#vectors.removeRow(row);
        if (movedSlot < 0) continue;
        const moved = this.#entries[movedSlot]!.rows;
        moved[moved.indexOf(this.#vectors.rows)] = row;
      }
      const last = this.#entries.pop()!;
      if (last !== entry) {
        last.slot = entry.slot;
        this.#entries[entry.slot] = last;
        this.#vectors.relabel(last.rows, last.slot);
      }
      this.#byId.delete(entry.chunk.id);
      const file = this.#byFile.get(entry.chunk.fileId)!;
      file.delete(entry);
      if (file.size === 0) this.#byFile.delete(entry.chunk.fileId);
    }
    // An emptied index forgets its vectors' width, so that a store re-embedded with another model can refill it.
    if (this.#entries.length === 0) this.#vectors.clear();
  }
}

/**
 * The weights of the rankings in use, as OpenAI's `hybrid_search` gives them: negative ones count as zero, and when
 * all in use are zero (which would leave nothing to rank by) they count equally.
 */
function fusionWeights(
  weights: SearchOptions['weights'],
  useText: boolean,
  useVectors: boolean,
): { text: number; vector: number } {
  const text = useText ? Math.max(0, weights?.text ?? 1) : 0;
  const vector = useVectors ? Math.max(0, weights?.vector ?? 1) : 0;
  if (text + vector > 0) return { text, vector };
  return { text: useText ? 1 : 0, vector: useVectors ? 1 : 0 };
}

/** Reads a snapshot's full-text index, or nothing when it was made another way (or is not a snapshot). */
function loadSnapshot(snapshot: string): MiniSearch<TextDocument> | undefined {
  const newline = snapshot.indexOf('\n');
  try {
    const header = JSON.parse(snapshot.slice(0, newline)) as Partial<SnapshotHeader>;
    if (header.format !== 'lantern-document-search' || header.analysis !== TEXT_ANALYSIS_VERSION) return undefined;
    return MiniSearch.loadJSON(snapshot.slice(newline + 1), TEXT_OPTIONS);
  } catch {
    return undefined;
  }
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
