import { throwIfAborted, type EmbedResult } from '../../engine-interface/index.ts';
import type { EmbeddingModel } from '../model-loaders.ts';
import { refuseLongInput } from '../prompt-budget.ts';

/** What a llama.cpp runtime (node-llama-cpp, wllama) gives an embedding model of one loaded GGUF. */
export interface LlamaEmbedder {
  /** The longest input, in tokens, the context reads in one pass. */
  maxInputTokens: number;
  /** The ids of `text`, without special tokens. */
  tokenize(text: string): Promise<number[]> | number[];
  /** The BOS and EOS the model puts around its input (BERT's CLS and SEP), where it adds them. */
  bos: number | undefined;
  eos: number | undefined;
  /** The pooled embedding of one input's ids, read alone. */
  embed(tokens: number[]): Promise<readonly number[]>;
}

/**
 * A GGUF embedding model on llama.cpp: every input checked against the window before any is embedded (400 naming
 * `input`), then embedded one by one, L2-normalised as OpenAI's embeddings are.
 */
export function llamaEmbeddingModel(embedder: LlamaEmbedder): EmbeddingModel {
  const { maxInputTokens, bos, eos } = embedder;
  return {
    maxInputTokens,
    async embed(input, options = {}): Promise<EmbedResult> {
      const ids: number[][] = [];
      for (const [index, text] of input.entries()) {
        const tokens = [
          ...(bos !== undefined ? [bos] : []),
          ...(await embedder.tokenize(text)),
          ...(eos !== undefined ? [eos] : []),
        ];
        refuseLongInput(index, tokens.length, maxInputTokens);
        ids.push(tokens);
      }
      const embeddings: Float32Array[] = [];
      for (const tokens of ids) {
        throwIfAborted(options.signal);
        embeddings.push(normalized(await embedder.embed(tokens)));
      }
      return { embeddings, usage: { promptTokens: ids.reduce((sum, t) => sum + t.length, 0) } };
    },
  };
}

/** L2-normalised. */
function normalized(vector: readonly number[]): Float32Array {
  const out = Float32Array.from(vector);
  let sum = 0;
  for (const x of out) sum += x * x;
  const norm = Math.sqrt(sum) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}
