/**
 * Files, vector stores and retrieval (docs/file-search.md) on the bundled embeddings model, tiny-embed
 * (`jade-mole-4`): a 2-layer BERT of 64 dimensions with RANDOM weights and a 255-entry vocabulary (letters, digits and
 * some two hundred common words), so its vectors carry the letters and few whole words two texts share, not meaning.
 * Every figure below is of the machinery around the model; the retrieval figures of the vectors are of this model
 * alone, and say nothing of all-MiniLM's.
 *
 * - Indexing throughput: pages (3,000 characters of the text the library extracts) a second, end to end: from the
 *   first `POST /v1/files` to the vector store `completed` (polled every 25 ms), for the articles of the retrieval set
 *   as Markdown, HTML and PDF files (OpenAI's `auto` chunking: 800 tokens, 400 overlapping); for the same text as one
 *   file a paragraph; and for the stores of the search measure (`static` chunks of 100 tokens). The share of it the
 *   engine spent embedding (Node: the engine's `embed` timed; Chromium: the engine worker's run reports), the uploads',
 *   and in Node extraction and chunking (the library's functions, timed apart on the same files).
 * - Search latency: `vectorStores.search` (10 results), the first search of a store (its index loaded from storage)
 *   and then the median and p95 of several questions, at 100, 1,000 and 10,000 chunks (Chromium: 100 and 1,000, see
 *   FILE_SEARCH_PLAN); in Node also `HybridIndex.search` alone on the same chunks and query vectors (hybrid, full
 *   text, vectors), the query's embedding alone, and the index built from the chunks and restored from its snapshot.
 * - Storage: the bytes the document storage grew by per chunk (Node: the `directoryDocumentStorage` directory's files;
 *   Chromium: `navigator.storage.estimate()`, before and after), what the chunk records hold (text and vectors), and
 *   the full-text snapshot's size.
 * - Retrieval quality: recall@5 (and @1) and nDCG@10 of the paragraph that answers each question of
 *   bench/data/squad-retrieval.json (SQuAD dev questions, each paragraph of their articles one file): in Node with
 *   `HybridIndex` directly in each `mode` (full text, vectors, hybrid) on the store's own chunks and vectors, and
 *   through the API (hybrid); in Chromium through the API, on the questions a key may search within its 120 requests a
 *   minute. In Node also the scores: the best hit's, median, of the questions and of {@link OFF_TOPIC} queries.
 *
 * In Node the openai SDK calls the handler through its `fetch` option, on a `directoryDocumentStorage` in a temporary
 * directory; in Chromium (WebAssembly, no WebGPU) the SDK in the bench page calls the service worker, which indexes
 * with the engine worker and keeps everything in IndexedDB. A section of `npm run bench` and of its smoke pass
 * (bench/run.ts); alone: `npx tsx bench/file-search.ts [--smoke] [--node | --chromium]`.
 */
import { chromium } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { toFile } from 'openai';
import { HybridIndex, type SearchOptions } from '../src/document-search/index.ts';
import { directoryDocumentStorage } from '../src/document-store/directory-document-storage.ts';
import { handWrittenPdf } from '../src/documents/hand-written-pdf.test-support.ts';
import { chunkText, DEFAULT_CHUNKING, extractText } from '../src/documents/index.ts';
import { createEngine, createHandler, KeyRing, type Engine } from '../src/index.ts';
import type { DeviceInfo } from '../src/worker/protocol.ts';
import { startServer } from '../test/e2e/servers.ts';
import { openaiClient } from '../test/support/lantern.ts';
import type { Bench } from './browser/bench-page.ts';
import {
  chunkRecords,
  indexFiles,
  searchStore,
  storedChunks,
  type BenchChunking,
  type BenchFile,
  type ChunkRecords,
  type IndexedStore,
} from './browser/file-search-measures.ts';
import { CHROMIUM_ARGS } from './cold-start.ts';
import type { RetrievalSet } from './data/squad-subset.ts';
import { benchProfile, EMBED } from './models.ts';
import { median, p95, round } from './stats.ts';

const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
const SET: RetrievalSet = JSON.parse(
  readFileSync(fileURLToPath(new URL('./data/squad-retrieval.json', import.meta.url)), 'utf8'),
);

/** A page: 3,000 characters of extracted text (about 500 words, a printed page). */
export const PAGE_CHARACTERS = 3000;
/** Chunking of the search measure's stores: OpenAI's smallest chunks, to reach 10,000 of them on little text. */
const SMALL_CHUNKS = { maxChunkTokens: 100, overlapTokens: 0 } as const;
/** Results asked of each latency search (OpenAI's default) and of each recall search. */
const LATENCY_RESULTS = 10;
const RECALL_AT = 5;
/** nDCG's depth: with one answering paragraph a question, 1 / log2(rank + 1) for an answer ranked within it. */
const NDCG_AT = 10;
/** Questions about nothing the set's seven articles hold: their best hits' scores should be low. */
const OFF_TOPIC = [
  'How do I reset my wifi router to factory settings?',
  'recipe for chocolate chip cookies',
  'What is the airspeed velocity of an unladen swallow?',
  'best treatment for a sprained ankle',
  'how to configure two-factor authentication on a laptop',
  'knitting patterns for a winter scarf',
  'What is the boiling point of ethanol?',
  'Python list comprehension syntax',
];

export interface FileSearchPlan {
  /** The articles uploaded for throughput: the first `count`, each cut to its first `paragraphs` paragraphs. */
  articles: { count: number; paragraphs: number };
  /**
   * The recall store: the set's first `paragraphs` paragraphs, one file each, and the questions they answer: at most
   * `questions` of them, and in Chromium `browserQuestions`, spread evenly over them (a key searches 120 times a
   * minute).
   */
  recall: { paragraphs: number; questions: number; browserQuestions: number };
  /** Stores of these many chunks, searched with `queries` of the set's questions after one first search each. */
  sizes: readonly number[];
  browserSizes: readonly number[];
  queries: number;
}

export const FILE_SEARCH_PLAN: FileSearchPlan = {
  articles: { count: SET.articles.length, paragraphs: Infinity },
  recall: { paragraphs: Infinity, questions: SET.questions.length, browserQuestions: 100 },
  sizes: [100, 1000, 10_000],
  // A store of 10,000 chunks took Chromium's WebAssembly 104 s to index (docs/performance.md): with it, the section would
  // take some 4.5 minutes on a quiet machine, and past its budget of five under load.
  browserSizes: [100, 1000],
  queries: 20,
};
/** The smoke pass: each measure once, on a few paragraphs of three articles (one of each type), and 100 chunks. */
export const FILE_SEARCH_SMOKE_PLAN: FileSearchPlan = {
  articles: { count: 3, paragraphs: 3 },
  recall: { paragraphs: 12, questions: 8, browserQuestions: 8 },
  sizes: [100],
  browserSizes: [100],
  queries: 3,
};

// ---- The documents ----

/** The file types the articles are uploaded as, in turn. */
const TYPES = ['md', 'html', 'pdf'] as const;
const MIME = { md: 'text/markdown', html: 'text/html', pdf: 'application/pdf', txt: 'text/plain' } as const;

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const titleOf = (title: string) => title.replace(/_/g, ' ');

/** The text as ASCII, as the PDF writer's standard font shows it: accents dropped, dashes and quotes plain. */
function ascii(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/[\u2018\u2019\u2032]/g, "'")
    .replace(/[\u201c\u201d\u2033]/g, '"')
    .replace(/[^\x20-\x7e\n]/g, '?');
}

/** Lines of at most `width` characters, broken between words. */
function wrap(paragraph: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of paragraph.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * A PDF with a text layer, as a word processor's export has: the paragraphs in Helvetica 10 pt, 90 characters a line,
 * 55 lines a page, a blank line between paragraphs; objects found through a cross-reference table.
 */
function pdf(title: string, paragraphs: string[]): string {
  const lines = [title, '', ...paragraphs.flatMap((p) => [...wrap(ascii(p), 90), ''])];
  const pages: string[][] = [];
  for (let i = 0; i < lines.length; i += 55) pages.push(lines.slice(i, i + 55));
  return handWrittenPdf(pages, { fontSize: 10, leading: 12, top: 740 });
}

/** An article as a file of its type: Markdown; HTML with the chrome a saved page has; a PDF. */
function articleFile(index: number, paragraphs: number): BenchFile {
  const article = SET.articles[index]!;
  const title = titleOf(article.title);
  const kept = article.paragraphs.slice(0, paragraphs);
  const type = TYPES[index % TYPES.length]!;
  const name = `${article.title}.${type}`;
  if (type === 'md') return { name, type: MIME.md, text: `# ${title}\n\n${kept.join('\n\n')}\n` };
  if (type === 'pdf') return { name, type: MIME.pdf, text: pdf(title, kept) };
  const body = kept.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n');
  return {
    name,
    type: MIME.html,
    text:
      `<!doctype html><html><head><title>${escapeHtml(title)}</title><style>body { font: 16px serif; }</style>` +
      `<script>window.analytics = [];</script></head><body><nav><a href="/">Home</a> <a href="/search">Search</a>` +
      `</nav><main><h1>${escapeHtml(title)}</h1>\n${body}\n</main><footer>Text under CC BY-SA 4.0.</footer></body></html>`,
  };
}

/** The set's paragraphs in order, each with where it is (article, paragraph). */
const PARAGRAPHS = SET.articles.flatMap((article, a) => article.paragraphs.map((text, p) => ({ a, p, text })));

/** A paragraph as a file of its own; neutral names, so that no name tells the index which article it is of. */
const paragraphFile = (text: string, index: number): BenchFile => ({
  name: `p${String(index).padStart(3, '0')}.txt`,
  type: MIME.txt,
  text,
});

/** A seeded generator (mulberry32): the same stores every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The search measure's files: each exactly `CHUNKS_PER_FILE` chunks of {@link SMALL_CHUNKS} as the library cuts
 * them, of the set's sentences in a seeded random order, three to six a paragraph. The set has about 1,600 distinct
 * sentences, so a store of 10,000 chunks (4 million characters) repeats each some 25 times: a real store that size has
 * a larger vocabulary, which full-text search takes somewhat longer over.
 */
const CHUNKS_PER_FILE = 100;
function sizedFiles(count: number): BenchFile[] {
  const sentences = [...new Set(PARAGRAPHS.flatMap(({ text }) => text.split(/(?<=[.!?])\s+/)))];
  const next = random(20_251_126);
  const files: BenchFile[] = [];
  while (files.length < count) {
    // Enough sentences for more than CHUNKS_PER_FILE chunks, cut to a prefix that makes exactly that many (or drawn
    // again where none near does).
    const picked = Array.from({ length: 450 }, () => sentences[Math.floor(next() * sentences.length)]!);
    const breaks = new Set<number>();
    for (let at = 0; at < picked.length; at += 3 + Math.floor(next() * 4)) breaks.add(at);
    const textOf = (n: number) =>
      picked
        .slice(0, n)
        .map((sentence, i) => (i > 0 && breaks.has(i) ? `\n\n${sentence}` : i > 0 ? ` ${sentence}` : sentence))
        .join('') + '\n';
    // The prefix that ends where the whole text's 100th chunk ends makes the same 100 chunks (a chunk's end is found
    // looking back from its window's), or, where that end falls inside a sentence, about that many.
    const whole = chunkText(textOf(picked.length), SMALL_CHUNKS);
    if (whole.length <= CHUNKS_PER_FILE) throw new Error('Too few sentences for a file of the search measure.');
    const end = whole[CHUNKS_PER_FILE - 1]!.end;
    let n = 0;
    for (let length = picked[0]!.length; length <= end; length += (breaks.has(n) ? 2 : 1) + picked[n]!.length) n += 1;
    const exact = [n, n + 1, n - 1].find((m) => chunkText(textOf(m), SMALL_CHUNKS).length === CHUNKS_PER_FILE);
    if (exact === undefined) continue;
    files.push({ name: `store-${String(files.length).padStart(3, '0')}.txt`, type: MIME.txt, text: textOf(exact) });
  }
  return files;
}

/** `count` items of `items`, spread evenly over them (all when there are fewer). */
const spread = <T>(items: readonly T[], count: number): T[] =>
  items.length <= count
    ? [...items]
    : Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)]!);

/** Characters of the text the library extracts from the files, the chunks it cuts them into, and ms to do both. */
async function extracted(files: readonly BenchFile[], chunking: BenchChunking) {
  let characters = 0;
  let chunks = 0;
  let ms = 0;
  for (const file of files) {
    const started = performance.now();
    const { text } = await extractText(new TextEncoder().encode(file.text), file.name, file.type);
    chunks += chunkText(text, chunking ?? DEFAULT_CHUNKING).length;
    ms += performance.now() - started;
    characters += text.length;
  }
  return { characters, chunks, ms };
}

// ---- The measures ----

/** A store indexed, as one environment reports it. */
interface Indexing extends IndexedStore {
  /** ms the engine spent embedding meanwhile, and its calls. */
  embedMs: number;
  embedCalls: number;
  /** Bytes the document storage grew by. */
  storageGrown: number;
}

/** What an environment offers the measures. */
interface FileSearchRunner {
  index(files: BenchFile[], chunking: BenchChunking): Promise<Indexing>;
  search(storeId: string, queries: readonly string[], maxResults: number): Promise<{ ms: number; fileIds: string[] }[]>;
  records(storeId: string): Promise<ChunkRecords>;
  /** Node only: the measures of the index alone, on the store's chunks. */
  direct?: DirectIndex;
}

interface DirectIndex {
  /** The store's index as the library builds it, and the query vectors, embedded by the engine (timed each). */
  load(storeId: string, queries: readonly string[]): Promise<LoadedIndex>;
}

interface LoadedIndex {
  index: HybridIndex;
  vectors: Float32Array[];
  embedMs: number[];
  buildMs: number;
  restoreMs: number;
  snapshotBytes: number;
}

export interface Throughput {
  files: number;
  pages: number;
  chunks: number;
  /** Seconds from the first upload to the store completed. */
  seconds: number;
  pagesPerSecond: number;
  chunksPerSecond: number;
  /** Shares of that time: the uploads, the engine embedding; Node: extraction and chunking (timed apart). */
  uploadShare: number;
  embedShare: number;
  extractShare?: number;
  failed: number;
}

export interface Latency {
  p50: number;
  p95: number;
}

export interface SizeFigures {
  chunks: number;
  queries: number;
  indexing: Throughput;
  /** The store's first search: its index loaded from the document storage (ms). */
  firstSearchMs: number;
  search: Latency;
  storage: {
    /** Bytes the document storage grew by, per chunk (the file's bytes, chunks, records). */
    grownPerChunk: number;
    /** Of the chunk records: UTF-8 text and vector bytes per chunk, and embedded windows per chunk. */
    textPerChunk: number;
    vectorPerChunk: number;
    windowsPerChunk: number;
    dimensions: number;
    /** The full-text snapshot the library stored beside the chunks, or null where it stored none (yet). */
    storedSnapshotBytes: number | null;
  };
  /** Node: the index alone. */
  direct?: {
    snapshotBytes: number;
    buildMs: number;
    restoreMs: number;
    queryEmbedMs: number;
    hybrid: Latency;
    text: Latency;
    vector: Latency;
  };
}

export interface Recall {
  questions: number;
  at5: number;
  at1: number;
  ndcg10: number;
}

/** The best hit's score, median over the questions and over {@link OFF_TOPIC} (and their highest). */
export interface BestScores {
  questions: number;
  offTopic: number;
  offTopicMax: number;
}

export interface FileSearchResults {
  throughput: { articles: Throughput; paragraphs: Throughput };
  recall: {
    paragraphs: number;
    api: Recall;
    /** Node: the API on the questions Chromium asks, to set beside its column. */
    apiBrowserQuestions?: Recall;
    /** Node: `HybridIndex.search` in each mode on the store's chunks, and the hybrid search's best scores. */
    direct?: { text: Recall; vector: Recall; hybrid: Recall; scores?: BestScores };
  };
  sizes: Record<string, SizeFigures>;
}

const seconds = (ms: number) => round(ms / 1000, 2);
const latency = (times: readonly number[]): Latency => ({ p50: round(median(times), 2), p95: round(p95(times), 2) });

async function throughput(
  name: string,
  runner: FileSearchRunner,
  files: BenchFile[],
  chunking: BenchChunking,
  log: (message: string) => void,
  withExtract: boolean,
): Promise<{ figures: Throughput; indexing: Indexing }> {
  const indexing = await runner.index(files, chunking);
  // After the run, as its first upload of a type paid that type's first load (pdf.js): this measures the steady cost.
  const text = await extracted(files, chunking);
  const pages = text.characters / PAGE_CHARACTERS;
  const figures: Throughput = {
    files: files.length,
    pages: round(pages, 1),
    chunks: text.chunks,
    seconds: seconds(indexing.ms),
    pagesPerSecond: round(pages / (indexing.ms / 1000), 2),
    chunksPerSecond: round(text.chunks / (indexing.ms / 1000), 1),
    uploadShare: round(indexing.uploadMs / indexing.ms, 3),
    embedShare: round(indexing.embedMs / indexing.ms, 3),
    ...(withExtract && { extractShare: round(text.ms / indexing.ms, 3) }),
    failed: indexing.failed,
  };
  log(
    `${name}: ${files.length} files, ${figures.pages} pages, ${text.chunks} chunks in ${figures.seconds} s: ` +
      `${figures.pagesPerSecond} pages/s (embedding ${figures.embedShare}, uploads ${figures.uploadShare}` +
      `${withExtract ? `, extraction and chunking ${figures.extractShare}` : ''})`,
  );
  if (indexing.failed) throw new Error(`${name}: ${indexing.failed} files failed to index.`);
  return { figures, indexing };
}

/** Recall@1 and @k, and nDCG, of `ranked` (each question's ranked paragraphs) against the paragraphs answering them. */
function recall(ranked: readonly (readonly number[])[], answers: readonly number[]): Recall {
  const at = (k: number) => ranked.filter((found, i) => found.slice(0, k).includes(answers[i]!)).length / ranked.length;
  const gain = ranked.map((found, i) => {
    const rank = found.slice(0, NDCG_AT).indexOf(answers[i]!) + 1;
    return rank ? 1 / Math.log2(rank + 1) : 0;
  });
  return {
    questions: ranked.length,
    at5: round(at(RECALL_AT), 3),
    at1: round(at(1), 3),
    ndcg10: round(gain.reduce((a, b) => a + b, 0) / ranked.length, 3),
  };
}

async function measure(
  name: string,
  plan: FileSearchPlan,
  sizes: readonly number[],
  recallQuestions: number,
  runner: FileSearchRunner,
  log: (message: string) => void,
): Promise<FileSearchResults> {
  const node = runner.direct !== undefined;

  // Throughput on the articles as files; on their paragraphs, each a file (the recall store).
  const articles = Array.from({ length: plan.articles.count }, (_, i) => articleFile(i, plan.articles.paragraphs));
  log(`${name}: indexing ${articles.map((f) => f.name).join(', ')}`);
  const articleRun = await throughput(`${name}: articles`, runner, articles, null, log, node);

  const paragraphs = PARAGRAPHS.slice(0, plan.recall.paragraphs);
  log(`${name}: indexing ${paragraphs.length} paragraphs, a file each`);
  const paragraphRun = await throughput(
    `${name}: one-paragraph files`,
    runner,
    paragraphs.map(({ text }, i) => paragraphFile(text, i)),
    null,
    log,
    node,
  );

  // Recall: questions about the paragraphs indexed, each answered by one of them.
  const where = new Map(paragraphs.map(({ a, p }, i) => [`${a}/${p}`, i]));
  const allQuestions = SET.questions
    .filter((q) => where.has(`${q.article}/${q.paragraph}`))
    .slice(0, plan.recall.questions);
  const questions = spread(allQuestions, recallQuestions);
  const answers = questions.map((q) => where.get(`${q.article}/${q.paragraph}`)!);
  const fileIndex = new Map(paragraphRun.indexing.fileIds.map((id, i) => [id, i]));
  log(`${name}: recall@${RECALL_AT} through the API, ${questions.length} questions`);
  const searched = await runner.search(
    paragraphRun.indexing.storeId,
    questions.map((q) => q.question),
    NDCG_AT,
  );
  const ranked = searched.map((s) => s.fileIds.map((id) => fileIndex.get(id)!));
  const recallFigures: FileSearchResults['recall'] = { paragraphs: paragraphs.length, api: recall(ranked, answers) };
  log(`${name}: recall@${RECALL_AT} through the API: ${recallFigures.api.at5} (@1 ${recallFigures.api.at1})`);
  if (runner.direct) {
    const browserQuestions = new Set(spread(allQuestions, plan.recall.browserQuestions));
    const picked = questions.flatMap((q, i) => (browserQuestions.has(q) ? [i] : []));
    recallFigures.apiBrowserQuestions = recall(
      picked.map((i) => ranked[i]!),
      picked.map((i) => answers[i]!),
    );
    const asked = [...questions.map((q) => q.question), ...OFF_TOPIC];
    const loaded = await runner.direct.load(paragraphRun.indexing.storeId, asked);
    const hits = (i: number, mode: NonNullable<SearchOptions['mode']>) =>
      loaded.index.search({ queries: [asked[i]!], queryVectors: [loaded.vectors[i]!], maxResults: NDCG_AT, mode });
    const byMode = (mode: NonNullable<SearchOptions['mode']>) =>
      recall(
        questions.map((_, i) => hits(i, mode).map((hit) => fileIndex.get(hit.chunk.fileId)!)),
        answers,
      );
    const best = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => hits(from + i, 'hybrid')[0]?.score ?? 0);
    const offTopic = best(questions.length, asked.length);
    recallFigures.direct = {
      text: byMode('text'),
      vector: byMode('vector'),
      hybrid: byMode('hybrid'),
      scores: {
        questions: round(median(best(0, questions.length)), 3),
        offTopic: round(median(offTopic), 3),
        offTopicMax: round(Math.max(...offTopic), 3),
      },
    };
    const d = recallFigures.direct;
    log(
      `${name}: recall@${RECALL_AT}, HybridIndex alone: text ${d.text.at5}, vector ${d.vector.at5}, hybrid ` +
        `${d.hybrid.at5} (nDCG@${NDCG_AT} ${d.hybrid.ndcg10}); best score p50: questions ${d.scores!.questions}, ` +
        `off-topic ${d.scores!.offTopic} (max ${d.scores!.offTopicMax})`,
    );
  }

  // Search latency and storage, a store of each size.
  const queries = spread(SET.questions, plan.queries).map((q) => q.question);
  const files = sizedFiles(Math.max(...sizes) / CHUNKS_PER_FILE);
  const bySize: Record<string, SizeFigures> = {};
  for (const size of sizes) {
    log(`${name}: a store of ${size} chunks (${size / CHUNKS_PER_FILE} files)`);
    const { figures: indexing, indexing: store } = await throughput(
      `${name}: ${size} chunks`,
      runner,
      files.slice(0, size / CHUNKS_PER_FILE),
      SMALL_CHUNKS,
      log,
      node,
    );
    const [first, ...rest] = await runner.search(store.storeId, [queries[0]!, ...queries], LATENCY_RESULTS);
    const records = await runner.records(store.storeId);
    if (records.chunks !== size) throw new Error(`${name}: the store holds ${records.chunks} chunks, not ${size}.`);
    const figures: SizeFigures = {
      chunks: records.chunks,
      queries: rest.length,
      indexing,
      firstSearchMs: round(first!.ms, 1),
      search: latency(rest.map((r) => r.ms)),
      storage: {
        grownPerChunk: Math.round(store.storageGrown / records.chunks),
        textPerChunk: Math.round(records.textBytes / records.chunks),
        vectorPerChunk: Math.round(records.vectorBytes / records.chunks),
        windowsPerChunk: round(records.windows / records.chunks, 2),
        dimensions: records.dimensions,
        storedSnapshotBytes: records.snapshotBytes,
      },
    };
    if (runner.direct) {
      const loaded = await runner.direct.load(store.storeId, queries);
      const timed = (mode: NonNullable<SearchOptions['mode']>) => {
        const search = (i: number) =>
          loaded.index.search({
            queries: [queries[i]!],
            queryVectors: [loaded.vectors[i]!],
            maxResults: LATENCY_RESULTS,
            mode,
          });
        search(0);
        return latency(
          queries.map((_, i) => {
            const started = performance.now();
            search(i);
            return performance.now() - started;
          }),
        );
      };
      figures.direct = {
        snapshotBytes: loaded.snapshotBytes,
        buildMs: round(loaded.buildMs, 1),
        restoreMs: round(loaded.restoreMs, 1),
        queryEmbedMs: round(median(loaded.embedMs), 2),
        hybrid: timed('hybrid'),
        text: timed('text'),
        vector: timed('vector'),
      };
    }
    bySize[size] = figures;
    log(
      `${name}: ${size} chunks: first search ${figures.firstSearchMs} ms, then p50 ${figures.search.p50} / p95 ` +
        `${figures.search.p95} ms; ${figures.storage.grownPerChunk} bytes stored per chunk` +
        (figures.direct
          ? `; HybridIndex.search p50 ${figures.direct.hybrid.p50} ms (text ${figures.direct.text.p50}, vector ` +
            `${figures.direct.vector.p50}), query embedding ${figures.direct.queryEmbedMs} ms`
          : ''),
    );
  }
  return {
    throughput: { articles: articleRun.figures, paragraphs: paragraphRun.figures },
    recall: recallFigures,
    sizes: bySize,
  };
}

/** Bytes of every record file under `dir` (not the writes in progress in its `.tmp`, which come and go). */
async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.parentPath.startsWith(join(dir, '.tmp'))) continue;
    total += await stat(join(entry.parentPath, entry.name)).then(
      (found) => found.size,
      () => 0, // deleted meanwhile
    );
  }
  return total;
}

/** The engine with its `embed` timed: what the library's indexing spends in the model. */
function timedEngine(engine: Engine) {
  const spent = { ms: 0, calls: 0 };
  const timed = new Proxy(engine, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === 'embed') {
        return async (...args: Parameters<Engine['embed']>) => {
          const started = performance.now();
          try {
            return await target.embed(...args);
          } finally {
            spent.ms += performance.now() - started;
            spent.calls += 1;
          }
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { engine: timed, spent };
}

/** In Node: the openai SDK calling the handler, its documents in a temporary directory. */
export async function fileSearchNode(plan: FileSearchPlan, log: (message: string) => void): Promise<FileSearchResults> {
  const dir = await mkdtemp(join(tmpdir(), 'lantern-bench-files-'));
  try {
    const base = createEngine({ profile: benchProfile(MODELS) });
    const { engine, spent } = timedEngine(base);
    const keys = new KeyRing();
    const storage = directoryDocumentStorage(dir);
    const handler = createHandler({
      engine,
      keys,
      documents: storage,
      rateLimits: { requestsPerMinute: 1e6 },
      onServerError: (error) => log(`file search: server error: ${String(error)}`),
    });
    // A key a store: as in Chromium, where a key's searches are rate-limited.
    const clientOf = new Map<string, ReturnType<typeof openaiClient>>();
    const runner: FileSearchRunner = {
      async index(files, chunking) {
        const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
        const before = { ...spent, bytes: await directoryBytes(dir) };
        const indexed = await indexFiles(client, files, chunking, (file) =>
          toFile(Buffer.from(file.text), file.name, { type: file.type }),
        );
        clientOf.set(indexed.storeId, client);
        return {
          ...indexed,
          embedMs: spent.ms - before.ms,
          embedCalls: spent.calls - before.calls,
          storageGrown: (await directoryBytes(dir)) - before.bytes,
        };
      },
      search: (storeId, queries, maxResults) => searchStore(clientOf.get(storeId)!, storeId, queries, maxResults),
      records: (storeId) => chunkRecords(storage, storeId),
      direct: {
        async load(storeId, queries) {
          const { chunks } = await storedChunks(storage, storeId);
          let started = performance.now();
          const index = new HybridIndex();
          index.add(chunks);
          const buildMs = performance.now() - started;
          const snapshot = index.fullTextSnapshot();
          started = performance.now();
          HybridIndex.restore(snapshot, chunks);
          const restoreMs = performance.now() - started;
          const vectors: Float32Array[] = [];
          const embedMs: number[] = [];
          for (const query of queries) {
            started = performance.now();
            const { embeddings } = await base.embed(EMBED, { input: [query] });
            embedMs.push(performance.now() - started);
            vectors.push(embeddings[0]!);
          }
          return {
            index,
            vectors,
            embedMs,
            buildMs,
            restoreMs,
            snapshotBytes: Buffer.byteLength(snapshot),
          };
        },
      },
    };
    return await measure('node', plan, plan.sizes, plan.recall.questions, runner, log);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The server of this section's bench page: of its own, cross-origin isolated as bench/run.ts serves it. */
const PORT = 4200;
const HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/** In Chromium without WebGPU: the SDK in the bench page, through the service worker and the engine worker. */
export async function fileSearchBrowser(
  plan: FileSearchPlan,
  log: (message: string) => void,
): Promise<FileSearchResults & { device: DeviceInfo | null; chromium: string }> {
  const server = await startServer(PORT, HEADERS);
  try {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
    });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (error) => log(`file search: page error: ${error.message}`));
      await page.goto(`${server.origin}/bench/browser/bench.html?device=wasm`);
      await page.waitForFunction(() => (window as { bench?: Bench }).bench !== undefined, undefined, {
        timeout: 120_000,
      });
      const device = (await page.evaluate(() => (window as unknown as { bench: Bench }).bench.device())) ?? null;
      const keyOf = new Map<string, string>();
      const runner: FileSearchRunner = {
        async index(files, chunking) {
          const key = await page.evaluate(() => (window as unknown as { bench: Bench }).bench.fileSearchKey());
          const indexed = await page.evaluate(
            (a) => (window as unknown as { bench: Bench }).bench.fileSearchIndex(a.key, a.files, a.chunking),
            { key, files, chunking },
          );
          keyOf.set(indexed.storeId, key);
          return indexed;
        },
        search: (storeId, queries, maxResults) =>
          page.evaluate(
            (a) => (window as unknown as { bench: Bench }).bench.fileSearchSearch(a.key, a.storeId, a.queries, a.max),
            { key: keyOf.get(storeId)!, storeId, queries: [...queries], max: maxResults },
          ),
        records: (storeId) =>
          page.evaluate((id) => (window as unknown as { bench: Bench }).bench.fileSearchRecords(id), storeId),
      };
      const results = await measure('wasm', plan, plan.browserSizes, plan.recall.browserQuestions, runner, log);
      return { ...results, device, chromium: browser.version() };
    } finally {
      await browser.close();
    }
  } finally {
    await server.close();
  }
}

/** The section's table for the bench's markdown: one column an environment. */
export function fileSearchTable(columns: Record<string, FileSearchResults>): string {
  const names = Object.keys(columns);
  const row = (label: string, cell: (r: FileSearchResults) => string | number | null | undefined) => {
    const cells = names.map((n) => cell(columns[n]!) ?? '–');
    return cells.every((c) => c === '–') ? [] : [`| ${label} | ${cells.join(' | ')} |`];
  };
  const any = <T>(of: (r: FileSearchResults) => T | undefined) =>
    names.map((n) => of(columns[n]!)).find((value) => value !== undefined);
  const percent = (share: number | undefined) => (share === undefined ? '–' : `${Math.round(share * 100)}%`);
  const throughputRows = (label: string, of: (r: FileSearchResults) => Throughput | undefined) => {
    const first = any(of);
    if (!first) return [];
    return [
      ...row(
        `Indexing ${label} (${first.files} files, ${first.pages} pages, ${first.chunks} chunks): pages/s, end to end (s)`,
        (r) => {
          const t = of(r);
          return t && `${t.pagesPerSecond} (${t.seconds} s)`;
        },
      ),
      ...row(`… of that time: embedding / uploads / extraction and chunking (Node)`, (r) => {
        const t = of(r);
        return t && `${percent(t.embedShare)} / ${percent(t.uploadShare)} / ${percent(t.extractShare)}`;
      }),
    ];
  };
  const sizes = [...new Set(names.flatMap((n) => Object.keys(columns[n]!.sizes)))].sort((a, b) => +a - +b);
  const largest = sizes.at(-1);
  const recallCell = (r: Recall | undefined) => r && `${r.at5} (${r.at1}), ${r.ndcg10 ?? '–'}`;
  const rows = [
    ...throughputRows('the articles as Markdown, HTML and PDF, `auto` chunking', (r) => r.throughput.articles),
    ...throughputRows('the same text a paragraph a file', (r) => r.throughput.paragraphs),
    ...(largest
      ? throughputRows(
          `a store of ${Number(largest).toLocaleString('en')} chunks (static, 100 tokens; .txt)`,
          (r) => r.sizes[largest]?.indexing,
        )
      : []),
    ...sizes.flatMap((size) => {
      const at = (r: FileSearchResults) => r.sizes[size];
      const n = Number(size).toLocaleString('en');
      const queries = any(at)!.queries;
      return [
        ...row(`${n} chunks: \`vectorStores.search\` ms, first (index loaded) / p50 / p95 of ${queries}`, (r) => {
          const s = at(r);
          return s && `${s.firstSearchMs} / ${s.search.p50} / ${s.search.p95}`;
        }),
        ...row(
          `${n} chunks: of the search p50, the index / the query's embedding / the rest (storage, handler, SDK)`,
          (r) => {
            const s = at(r);
            const d = s?.direct;
            return (
              d && `${d.hybrid.p50} / ${d.queryEmbedMs} / ${round(s.search.p50 - d.hybrid.p50 - d.queryEmbedMs, 2)}`
            );
          },
        ),
        ...row(`${n} chunks: \`HybridIndex.search\` alone ms p50 (p95): hybrid; text; vector`, (r) => {
          const d = at(r)?.direct;
          return (
            d && `${d.hybrid.p50} (${d.hybrid.p95}); ${d.text.p50} (${d.text.p95}); ${d.vector.p50} (${d.vector.p95})`
          );
        }),
        ...row(`${n} chunks: query embedding ms p50; index built from chunks / restored from snapshot, ms`, (r) => {
          const d = at(r)?.direct;
          return d && `${d.queryEmbedMs}; ${d.buildMs} / ${d.restoreMs}`;
        }),
        ...row(
          `${n} chunks: bytes stored per chunk: storage grown (records: text + vectors, windows × dims × 4)`,
          (r) => {
            const s = at(r)?.storage;
            return (
              s &&
              `${s.grownPerChunk} (${s.textPerChunk} + ${s.vectorPerChunk}, ${s.windowsPerChunk} × ${s.dimensions} × 4)`
            );
          },
        ),
        ...row(`${n} chunks: full-text snapshot, bytes (per chunk); stored by the library`, (r) => {
          const s = at(r);
          if (!s) return undefined;
          const stored = s.storage.storedSnapshotBytes === null ? 'none yet' : `${s.storage.storedSnapshotBytes}`;
          return s.direct
            ? `${s.direct.snapshotBytes} (${Math.round(s.direct.snapshotBytes / s.chunks)}); ${stored}`
            : stored;
        }),
      ];
    }),
    ...row(
      `Recall@${RECALL_AT} (@1), nDCG@${NDCG_AT}, \`HybridIndex\` alone: full text; vectors; hybrid (questions)`,
      (r) =>
        r.recall.direct &&
        `${recallCell(r.recall.direct.text)}; ${recallCell(r.recall.direct.vector)}; ` +
          `${recallCell(r.recall.direct.hybrid)} (${r.recall.direct.hybrid.questions})`,
    ),
    ...row(
      `Recall@${RECALL_AT} (@1), nDCG@${NDCG_AT} through \`vectorStores.search\`, hybrid (questions)`,
      (r) => `${recallCell(r.recall.api)} (${r.recall.api.questions})`,
    ),
    ...row(
      `… on the questions Chromium asks`,
      (r) =>
        (r.recall.apiBrowserQuestions &&
          `${recallCell(r.recall.apiBrowserQuestions)} (${r.recall.apiBrowserQuestions.questions})`) ??
        (r.recall.direct ? undefined : `${recallCell(r.recall.api)} (${r.recall.api.questions})`),
    ),
    ...row(`Best hit's score, hybrid, p50: the questions; ${OFF_TOPIC.length} off-topic queries (max)`, (r) => {
      const s = r.recall.direct?.scores;
      return s && `${s.questions}; ${s.offTopic} (${s.offTopicMax})`;
    }),
  ];
  const paragraphs = any((r) => r.recall.paragraphs);
  return [
    `| Measure (bundled tiny-embed, \`${EMBED}\`: trained on everyday paraphrases; ${paragraphs} paragraphs, chance@${RECALL_AT} ` +
      `${paragraphs ? round(RECALL_AT / paragraphs, 3) : '–'}) | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    ...rows,
  ].join('\n');
}

// Alone: `tsx bench/file-search.ts [--smoke] [--node | --chromium]` (Chromium on the dist-e2e build; `--node`: Node
// only; `--chromium`: Chromium only).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = process.argv.includes('--smoke') ? FILE_SEARCH_SMOKE_PLAN : FILE_SEARCH_PLAN;
  const log = (message: string) => console.log(`[bench] ${message}`);
  // The machine's load around each run: figures taken beside other work are slower and noisier.
  const load = () =>
    loadavg()
      .map((l) => round(l, 1))
      .join(' ');
  const timed = async <T>(name: string, run: () => Promise<T>) => {
    const started = performance.now();
    const before = load();
    const result = await run();
    log(
      `file search, ${name}: ${round((performance.now() - started) / 1000, 1)} s (load average ${before} → ${load()})`,
    );
    return result;
  };
  log(`file search: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores, Node ${process.version}`);
  const columns: Record<string, FileSearchResults> = {};
  if (!process.argv.includes('--chromium')) columns.Node = await timed('Node', () => fileSearchNode(plan, log));
  if (!process.argv.includes('--node')) {
    const { device, chromium, ...wasm } = await timed('Chromium', () => fileSearchBrowser(plan, log));
    log(`file search: Chromium ${chromium}, ${JSON.stringify(device)}`);
    columns['Chromium, wasm'] = wasm;
  }
  console.log(`\n${fileSearchTable(columns)}\n\n${JSON.stringify(columns)}`);
}
