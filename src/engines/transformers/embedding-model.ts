import {
  AutoModel,
  mean_pooling,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Tensor,
} from '@huggingface/transformers';
import { EngineError, throwIfAborted, type EmbedResult } from '../../engine-interface/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { refuseLongInput } from '../prompt-budget.ts';
import { loadPretrained, type TransformersLoadOptions } from './load-pretrained.ts';
import { yieldToEventLoop } from './yield-to-event-loop.ts';

/**
 * Inputs per forward pass. Batching amortises the per-call overhead of the runtime; past a few dozen short texts the
 * padded batch stops getting cheaper per input, and memory grows with batch × longest input.
 */
const BATCH_SIZE = 32;

/** The longest the inputs are tokenized without letting the event loop run. */
const TOKENIZE_SLICE_MS = 20;

/**
 * A sentence-embedding model on transformers.js: mean pooling over the last hidden state, then L2 normalisation,
 * exactly as its `feature-extraction` pipeline with `{ pooling: 'mean', normalize: true }` computes them.
 */
export class TransformersEmbeddingModel {
  readonly #tokenizer: PreTrainedTokenizer;
  readonly #model: PreTrainedModel;
  /** Longest input, in tokens (special tokens included). */
  readonly maxInputTokens: number;

  private constructor(tokenizer: PreTrainedTokenizer, model: PreTrainedModel, trainedTokens: number) {
    this.#tokenizer = tokenizer;
    this.#model = model;
    const config = model.config as { max_position_embeddings?: number };
    this.maxInputTokens = Math.min(
      tokenizer.model_max_length ?? Infinity,
      config.max_position_embeddings ?? Infinity,
      trainedTokens,
    );
  }

  /**
   * Loads tokenizer and model in parallel. `maxInputTokens` caps inputs below what the model's positions allow, where
   * it was made for shorter ones (sentence-transformers' `max_seq_length`).
   */
  static async load(
    source: string,
    options: TransformersLoadOptions & { maxInputTokens?: number | undefined },
  ): Promise<TransformersEmbeddingModel> {
    const [tokenizer, model] = await loadPretrained(source, AutoModel, options);
    return new TransformersEmbeddingModel(tokenizer, model, options.maxInputTokens ?? Infinity);
  }

  async embed(input: string[], options: Omit<RunOptions, 'onEvent'> = {}): Promise<EmbedResult> {
    // Count every input's tokens first: an input over the limit is refused, not silently truncated. Thousands of
    // inputs take seconds to tokenize: the event loop is let go every few milliseconds meanwhile (in Node it is the
    // server's; in a browser the worker's, which hears aborts and heartbeats on it).
    let promptTokens = 0;
    let slice = performance.now();
    for (const [index, text] of input.entries()) {
      if (performance.now() - slice > TOKENIZE_SLICE_MS) {
        await yieldToEventLoop();
        throwIfAborted(options.signal);
        slice = performance.now();
      }
      const tokens = this.#tokenizer.encode(text).length;
      refuseLongInput(index, tokens, this.maxInputTokens);
      promptTokens += tokens;
    }

    const embeddings: Float32Array[] = [];
    for (let start = 0; start < input.length; start += BATCH_SIZE) {
      throwIfAborted(options.signal);
      const batch = input.slice(start, start + BATCH_SIZE);
      try {
        const inputs = this.#tokenizer(batch, { padding: true, truncation: true }) as { attention_mask: Tensor };
        const outputs = (await this.#model(inputs)) as { last_hidden_state: Tensor };
        const pooled = mean_pooling(outputs.last_hidden_state, inputs.attention_mask).normalize(2, -1);
        const [rows, dims] = pooled.dims as [number, number];
        const data = pooled.data as Float32Array;
        for (let row = 0; row < rows; row++) embeddings.push(data.slice(row * dims, (row + 1) * dims));
      } catch (error) {
        throw EngineError.from(error);
      }
    }
    return { embeddings, usage: { promptTokens } };
  }
}
