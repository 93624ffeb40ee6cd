import { describe, expect, it } from 'vitest';
import { CHUNKING_BOUNDS, chunkText, DEFAULT_CHUNKING, type ChunkingOptions, type TextChunk } from './chunk-text.ts';
import { countTokens, forEachToken } from './count-tokens.ts';

/** The token boundaries of `text` (0 and each token's end), as the chunker counts them. */
const boundaries = (text: string) => {
  const offsets = [0];
  forEachToken(text, (end) => offsets.push(end));
  return offsets;
};

/** What every chunking must hold, whatever the text and options. */
function expectSound(text: string, chunks: TextChunk[], { maxChunkTokens, overlapTokens }: ChunkingOptions): void {
  const offsets = boundaries(text);
  const indexOf = new Map(offsets.map((offset, index) => [offset, index]));
  let covered = 0;
  chunks.forEach((chunk, index) => {
    expect(chunk.text).toBe(text.slice(chunk.start, chunk.end));
    expect(chunk.text.trim()).not.toBe('');
    expect(chunk.tokens).toBeGreaterThan(0);
    expect(chunk.tokens).toBeLessThanOrEqual(maxChunkTokens);
    // Cut at token boundaries, and its tokens are the ones between them.
    const first = indexOf.get(chunk.start)!;
    const last = indexOf.get(chunk.end)!;
    expect(first).toBeDefined();
    expect(last - first).toBe(chunk.tokens);
    if (index > 0) {
      const previous = chunks[index - 1]!;
      expect(chunk.start).toBeGreaterThan(previous.start);
      expect(chunk.end).toBeGreaterThan(previous.end);
      // Each starts `overlapTokens` before the previous one's end, or a whitespace-only one's left out after it.
      const windowEnd = offsets[first + overlapTokens]!;
      expect(windowEnd).toBeGreaterThanOrEqual(previous.end);
      expect(text.slice(previous.end, windowEnd).trim()).toBe('');
    }
    // Everything up to here is in some chunk, but for whitespace.
    expect(text.slice(covered, chunk.start).trim()).toBe('');
    covered = Math.max(covered, chunk.end);
  });
  expect(text.slice(covered).trim()).toBe('');
}

const sentence = (n: number) => `This is sentence number ${n} of a paragraph about chunking text well.`;
const paragraph = (n: number, sentences = 5) =>
  Array.from({ length: sentences }, (_, index) => sentence(n * 100 + index)).join(' ');

describe('chunkText', () => {
  it("defaults to OpenAI's auto strategy, within OpenAI's bounds", () => {
    expect(DEFAULT_CHUNKING).toEqual({ maxChunkTokens: 800, overlapTokens: 400 });
    expect(CHUNKING_BOUNDS).toEqual({ minChunkTokens: 100, maxChunkTokens: 4096 });
    expect(Object.isFrozen(DEFAULT_CHUNKING)).toBe(true);
    const text = Array.from({ length: 60 }, (_, index) => paragraph(index)).join('\n\n');
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(5);
    expectSound(text, chunks, DEFAULT_CHUNKING);
    // Every chunk but the last is at least the 80% of a window that it may end within.
    for (const chunk of chunks.slice(0, -1)) expect(chunk.tokens).toBeGreaterThanOrEqual(640);
  });

  it('refuses windows it cannot step through', () => {
    expect(() => chunkText('text', { maxChunkTokens: 0, overlapTokens: 0 })).toThrow(RangeError);
    expect(() => chunkText('text', { maxChunkTokens: 10, overlapTokens: 10 })).toThrow(RangeError);
    expect(() => chunkText('text', { maxChunkTokens: 10, overlapTokens: -1 })).toThrow(RangeError);
    expect(() => chunkText('text', { maxChunkTokens: 10.5, overlapTokens: 1 })).toThrow(RangeError);
  });

  it('gives no chunks for empty or whitespace-only text, and one for a short text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n\t ')).toEqual([]);
    const text = '  A short note.\n';
    expect(chunkText(text)).toEqual([{ text, start: 0, end: text.length, tokens: countTokens(text) }]);
  });

  it('ends a chunk after a paragraph break in the last fifth of its window, though a sentence ends later', () => {
    // A paragraph of about 90 tokens, then sentences running past the window of 100.
    const first = paragraph(1, 6);
    const text = `${first}\n\n${paragraph(2, 10)}`;
    const options = { maxChunkTokens: 100, overlapTokens: 0 };
    expect(countTokens(first)).toBeGreaterThan(80);
    expect(countTokens(first)).toBeLessThan(100);
    const [chunk] = chunkText(text, options);
    expect(chunk!.text).toBe(`${first}\n\n`);
    expectSound(text, chunkText(text, options), options);
  });

  it('ends it at a sentence end when no paragraph break is near, and between words when no sentence ends', () => {
    const options = { maxChunkTokens: 50, overlapTokens: 10 };
    const prose = paragraph(3, 20);
    for (const chunk of chunkText(prose, options).slice(0, -1)) expect(chunk.text).toMatch(/\.$/);
    expectSound(prose, chunkText(prose, options), options);

    const words = Array.from({ length: 400 }, (_, index) => `word${'s'.repeat(index % 5)}`).join(' ');
    for (const chunk of chunkText(words, options).slice(0, -1)) {
      expect(chunk.text).toMatch(/s*$/);
      expect(words[chunk.end]).toBe(' ');
    }
    expectSound(words, chunkText(words, options), options);
  });

  it('does not end at a paragraph break early in the window, but fills it', () => {
    const options = { maxChunkTokens: 100, overlapTokens: 0 };
    const text = `Title\n\n${paragraph(4, 20)}`;
    const [chunk] = chunkText(text, options);
    expect(chunk!.tokens).toBeGreaterThanOrEqual(80);
  });

  it('cuts Chinese, which has no spaces, after a full stop where one is near, and within 100 tokens', () => {
    const text = '这种语言具有非常简捷而清晰的语法特点，适合完成各种高层任务。'.repeat(40);
    const options = { maxChunkTokens: 100, overlapTokens: 20 };
    const chunks = chunkText(text, options);
    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.text.endsWith('。')).toBe(true);
    expectSound(text, chunks, options);
  });

  it('cuts one long word into windows of the full size', () => {
    const text = 'x'.repeat(10_000);
    const options = { maxChunkTokens: 100, overlapTokens: 25 };
    const chunks = chunkText(text, options);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.tokens).toBe(100);
    expect(chunks[1]!.start).toBe(chunks[0]!.end - 100);
    expectSound(text, chunks, options);
  });

  it('leaves out windows of whitespace alone, and covers everything else', () => {
    const text = `start ${' '.repeat(10_000)}\n${'\n'.repeat(3000)} end`;
    const options = { maxChunkTokens: 20, overlapTokens: 5 };
    const chunks = chunkText(text, options);
    expect(chunks.at(0)!.text.startsWith('start')).toBe(true);
    expect(chunks.at(-1)!.text.endsWith(' end')).toBe(true);
    expectSound(text, chunks, options);
  });

  it('holds for random texts and windows: coverage, offsets, sizes, overlaps', () => {
    const random = seeded(7);
    const pieces = [
      ...['the', 'chunk', ' ', ' ', ' ', 'internationalization', 'a'.repeat(37), 'Ünïcödé', "don't"],
      ...['.', '. ', '? ', '!"', ',', ' (', ')', '\n', '\n\n', '\n \n', '\t', '   '],
      ...['2024', '3.14', '这种语言', '。', '한국어', 'カタカナ', '😀', '𠀀', 'e\u0301'],
    ];
    for (let round = 0; round < 100; round += 1) {
      const length = Math.floor(random() * 400);
      const text = Array.from({ length }, () => pieces[Math.floor(random() * pieces.length)]).join('');
      const maxChunkTokens = 1 + Math.floor(random() * 60);
      const options = { maxChunkTokens, overlapTokens: Math.floor(random() * maxChunkTokens) };
      const chunks = chunkText(text, options);
      expectSound(text, chunks, options);
      for (const chunk of chunks) {
        // No chunk splits a surrogate pair.
        expect(/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(chunk.text), JSON.stringify(chunk.text)).toBe(false);
      }
    }
  });

  it('chunks a megabyte of text in one pass', () => {
    const text = Array.from({ length: 3000 }, (_, index) => paragraph(index)).join('\n\n');
    expect(text.length).toBeGreaterThan(1_000_000);
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(500);
    expect(chunks.at(-1)!.end).toBe(text.length);
  });
});

/** A small seeded generator (mulberry32), so that a failing case can be run again. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
