import { EngineError, type Engine } from '../engine-interface/index.ts';
import { chunkText, countTokens } from '../documents/index.ts';

/**
 * Embeds texts that may be longer than the embedding model reads: each text as one or more windows, one vector each.
 *
 * A chunk is sized in OpenAI's tokens (800 by default) and the model's own window is not known here (all-MiniLM reads
 * 256 of its tokens; a server's model may read 8,192), and engines refuse an input over their window rather than
 * truncate it. So the first batch is tried whole; a refusal (`context_length_exceeded`) halves the window, in Lantern's
 * token count, until every window fits, and the window learnt is kept for the next batches of this model. The index
 * scores a chunk by its best window, so a long chunk is found by any part of it.
 */
export class WindowedEmbedder {
  readonly #engine: Engine;
  /** Per model: the largest window, in Lantern's tokens, that the model has been seen to accept. */
  readonly #windows = new Map<string, number>();

  constructor(engine: Engine) {
    this.#engine = engine;
  }

  async embed(model: string, texts: string[], signal?: AbortSignal): Promise<Float32Array[][]> {
    for (;;) {
      const window = this.#windows.get(model) ?? Infinity;
      const pieces = texts.map((text) => windowsOf(text, window));
      try {
        const { embeddings } = await this.#engine.embed(model, { input: pieces.flat() }, signal ? { signal } : {});
        let next = 0;
        return pieces.map((windows) => windows.map(() => embeddings[next++]!));
      } catch (error) {
        if (!(error instanceof EngineError && error.kind === 'context_length_exceeded')) throw error;
        const longest = Math.max(...pieces.flat().map(countTokens));
        // A window of 16 tokens that is still too long is not a window problem: the refusal stands.
        if (longest <= MIN_WINDOW_TOKENS) throw error;
        this.#windows.set(model, Math.max(MIN_WINDOW_TOKENS, Math.floor(Math.min(window, longest) / 2)));
      }
    }
  }
}

const MIN_WINDOW_TOKENS = 16;

/** A text's windows of at most `tokens` tokens, overlapping by an eighth so a sentence cut in two is whole in one. */
function windowsOf(text: string, tokens: number): string[] {
  if (!Number.isFinite(tokens) || countTokens(text) <= tokens) return [text];
  const windows = chunkText(text, { maxChunkTokens: tokens, overlapTokens: Math.floor(tokens / 8) }).map((c) => c.text);
  return windows.length ? windows : [text];
}
