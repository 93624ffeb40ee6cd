/**
 * Cutting a file's text into the chunks a vector store embeds and searches, as OpenAI's `chunking_strategy` describes:
 * windows of at most `max_chunk_size_tokens` tokens, each starting `chunk_overlap_tokens` before the previous one's
 * end, so that a passage cut by one window's end is whole in the next. Tokens are Lantern's estimate of o200k's
 * ({@link countTokens}).
 */
import { forEachToken } from './count-tokens.ts';

export interface ChunkingOptions {
  /** Most tokens in a chunk. */
  maxChunkTokens: number;
  /** Tokens each chunk repeats from the end of the one before. */
  overlapTokens: number;
}

/** OpenAI's `auto` strategy and the defaults of `static`: 800 tokens, 400 overlapping. */
export const DEFAULT_CHUNKING: Readonly<ChunkingOptions> = Object.freeze({ maxChunkTokens: 800, overlapTokens: 400 });

/** OpenAI's bounds: max_chunk_size_tokens 100–4096; chunk_overlap_tokens ≥ 0 and ≤ half of max. */
export const CHUNKING_BOUNDS = Object.freeze({ minChunkTokens: 100, maxChunkTokens: 4096 } as const);

export interface TextChunk {
  /** `text.slice(start, end)` of the chunked text. */
  text: string;
  /** Character offsets into the input (UTF-16 code units, as `String.prototype.slice` counts). */
  start: number;
  end: number;
  /** Its estimated tokens: at most `maxChunkTokens`. */
  tokens: number;
}

/**
 * How far back from a window's full length a chunk may end to end at a better place: the last fifth of the window. A
 * chunk is then at least 80% of the size asked for, and the next one starts past this one's start (since the overlap
 * is at most half the window), while a paragraph or sentence is rarely longer than a fifth of 800 tokens.
 */
const LOOKBACK = 0.2;

/** Places to end a chunk, best last: inside a word, between words, at a line break, a sentence's end, a paragraph's. */
const Break = { Token: 0, Word: 1, Line: 2, Sentence: 3, Paragraph: 4 } as const;
type Break = (typeof Break)[keyof typeof Break];

/** Ends of sentences, the closing quotes and brackets that may follow one, and the full-width ends of CJK sentences. */
const SENTENCE_END = /[.!?…。！？．]/;
const CLOSING = /["'”’)\]»」』]/;
const FULL_WIDTH_END = /[。！？．]/;
const WHITESPACE = /\s/;
/** How far back past whitespace and closing marks a break looks for its kind: bounded, so that chunking is linear. */
const LOOK_BEHIND = 64;

/** What kind of place it is to end a chunk at `offset`, by the characters around it. */
function breakAt(text: string, offset: number): Break {
  let newlines = 0;
  let at = offset - 1;
  const limit = Math.max(0, offset - LOOK_BEHIND);
  for (; at >= limit && WHITESPACE.test(text[at]!); at -= 1) if (text[at] === '\n') newlines += 1;
  if (newlines >= 2) return Break.Paragraph;
  const spaced = at < offset - 1 || offset >= text.length || WHITESPACE.test(text[offset]!);
  while (at >= limit && CLOSING.test(text[at]!)) at -= 1;
  const last = text[at] ?? '';
  if (SENTENCE_END.test(last) && (spaced || FULL_WIDTH_END.test(last))) return Break.Sentence;
  if (newlines === 1) return Break.Line;
  return spaced ? Break.Word : Break.Token;
}

/**
 * Cuts `text` into chunks of at most `maxChunkTokens` tokens, each starting `overlapTokens` before the previous one's
 * end. A chunk ends at the best place in the last fifth of its window: a paragraph break, else a sentence's end, else
 * a line break, else between words (a chunk of Chinese, or of one long word, may end between any two tokens). Each
 * chunk's text is `text.slice(start, end)`; together they cover every character but of whitespace-only stretches,
 * which are not chunks (nor is whitespace-only text: it gives none). Linear in the text's length: tokens are counted
 * once, and each window looks back over a fifth of itself.
 *
 * The API holds its options within {@link CHUNKING_BOUNDS}; here any window of a token or more with a smaller overlap
 * works.
 *
 * @example
 * chunkText(fileText); // 800-token chunks overlapping by 400
 * chunkText(fileText, { maxChunkTokens: 200, overlapTokens: 0 });
 * @see https://platform.openai.com/docs/api-reference/vector-stores-files/createFile#vector-stores-files-createfile-chunking_strategy
 */
export function chunkText(text: string, options: ChunkingOptions = DEFAULT_CHUNKING): TextChunk[] {
  const { maxChunkTokens: max, overlapTokens: overlap } = options;
  if (!Number.isInteger(max) || max < 1 || !Number.isInteger(overlap) || overlap < 0 || overlap >= max) {
    throw new RangeError(`Chunking needs whole numbers with 0 ≤ overlap < max; got max ${max}, overlap ${overlap}.`);
  }
  if (!/\S/.test(text)) return [];

  // offsets[i]: where token boundary i lies (0: the text's start); breaks[i]: what kind of place it is to end a chunk.
  const offsets = [0];
  const breaks: Break[] = [Break.Token];
  forEachToken(text, (end) => {
    offsets.push(end);
    breaks.push(breakAt(text, end));
  });
  const last = offsets.length - 1;

  const chunks: TextChunk[] = [];
  for (let start = 0; ;) {
    const end = start + max >= last ? last : bestEnd(breaks, start, max, overlap);
    const chunk = text.slice(offsets[start], offsets[end]);
    if (/\S/.test(chunk)) chunks.push({ text: chunk, start: offsets[start]!, end: offsets[end]!, tokens: end - start });
    if (end === last) return chunks;
    start = end - overlap;
  }
}

/**
 * The boundary to end the window `start + max` at: the best kind of break in its last fifth, the latest of that kind,
 * but past `start + overlap`, so that the next chunk starts later than this one.
 */
function bestEnd(breaks: Break[], start: number, max: number, overlap: number): number {
  const full = start + max;
  const earliest = Math.max(start + overlap + 1, full - Math.floor(max * LOOKBACK));
  let best = full;
  for (let at = full - 1; at >= earliest && breaks[best]! < Break.Paragraph; at -= 1) {
    if (breaks[at]! > breaks[best]!) best = at;
  }
  return best;
}
