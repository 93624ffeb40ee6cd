import { DynamicCache, Tensor, type PreTrainedModel } from '@huggingface/transformers';
import type { DecodeBatch, PrefillInput } from '../../generation/decode-loop.ts';
import type { TaskQueue } from '../task-queue.ts';
import { disposeReplaced, hasStates, KVBatch, pastOf } from './kv-batch.ts';
import { cacheBytes, type PrefixReuse } from './prefix-reuse.ts';

/**
 * A prompt being prefilled for rows that will join: the one-row cache being filled, replaced by each piece, and how
 * many tokens it holds.
 */
export interface TransformersPrefill {
  cache: DynamicCache;
  length: number;
}

/**
 * The decode loop's batch (DecodeBatch) on a transformers.js causal LM: the model's forward pass, fed the inputs
 * onnxruntime names (`input_ids` or `inputs_embeds`, `attention_mask`, `position_ids`, `past_key_values.*`), over one
 * padded key/value layout of every row (KVBatch), with finished rows' caches kept for prefix reuse (PrefixReuse).
 * Every pass runs through the realm's task queue.
 *
 * Batching rows of different lengths pads them (see KVBatch), which needs a model whose attention honours its
 * attention mask. Some exports do not (ONNX Runtime's GroupQueryAttention reads only how many tokens each row holds).
 * The first time the batch would hold more than one request's rows the loop asks `mixesLengths`, which checks this
 * once on the model itself: the same tokens decoded alone and padded in a batch must give the same logits. A model
 * that fails it runs one request at a time (its `n` rows, kept equal in length, still batched).
 *
 * A hybrid or recurrent model (LFM2, Qwen3.5, Granite 4.0-H: its cache holds states beside keys and values, see
 * hasStates) cannot pad a row, nor take tokens back out of a state: it never mixes lengths (no probe) and has no
 * `retract` (so no speculation), and its cache is reused only whole (`reuse` `checkpoints`): at the end of a finished
 * row, or at a checkpoint the decode loop asks for while prefilling (`checkpoint`).
 */
export class TransformersBatch implements DecodeBatch<TransformersPrefill> {
  readonly #model: PreTrainedModel;
  /** Whether the model takes `num_logits_to_keep` (optimum's newer exports): then it computes only the logits used. */
  readonly #keepsLogits: boolean;
  readonly #queue: TaskQueue;
  readonly #prefixes: PrefixReuse;
  readonly #batch = new KVBatch();
  /** Bytes of keys and values per token from the first cache seen, and the passes run. */
  readonly stats = { forwardPasses: 0, tokenBytes: 0 };
  /** Whether the model honours its attention mask over padding and holes (see probePadding): once asked. */
  #pads: Promise<boolean> | undefined;
  /** Whether its cache holds states (a hybrid or recurrent model): read once, from the model's inputs. */
  readonly #states: boolean;
  /**
   * What its cache can do with a prefix (the decode loop's CacheReuse): keys and values alone are cut back to any
   * prefix; a cache with states is reused only whole, from checkpoints.
   */
  readonly reuse: 'cut' | 'checkpoints';
  /**
   * Takes the last `count` tokens row `row` fed back out of its cache (speculated tokens the model did not accept).
   * Absent on a model with states, whose state holds every token fed: the loop then speculates nothing.
   */
  readonly retract?: (row: number, count: number) => Promise<void>;

  constructor(model: PreTrainedModel, queue: TaskQueue, prefixes: PrefixReuse) {
    this.#model = model;
    const { sessions } = model as unknown as { sessions: Record<string, { inputNames: string[] } | undefined> };
    this.#keepsLogits = sessions['model']?.inputNames.includes('num_logits_to_keep') ?? false;
    this.#queue = queue;
    this.#prefixes = prefixes;
    this.#states = hasStates(model as unknown as Parameters<typeof hasStates>[0]);
    this.reuse = this.#states ? 'checkpoints' : 'cut';
    if (!this.#states) this.retract = (row, count) => this.#retract(row, count);
  }

  async begin(
    prompt: readonly number[],
    scope: string | undefined,
  ): Promise<{ prefill: TransformersPrefill; cached: number }> {
    const { cache, length } = await this.#prefixes.prepare(prompt, scope, this.reuse);
    return { prefill: { cache, length }, cached: length };
  }

  async fill(
    prefill: TransformersPrefill,
    from: number,
    to: number,
    input: PrefillInput,
    last: boolean,
  ): Promise<Float32Array | undefined> {
    // A job's `embed` (chat-model's image prompt) gives the input embeddings as a Tensor.
    const inputs =
      'embeds' in input
        ? embedsInputs(input.embeds as Tensor, from, prefill.cache)
        : oneRowInputs(input.tokens, from, prefill.cache);
    const outputs = await this.#forward(inputs, 1);
    const past = pastOf(outputs);
    disposeReplaced(prefill.cache, past);
    prefill.cache = new DynamicCache(past);
    prefill.length = to;
    if (!this.stats.tokenBytes) this.stats.tokenBytes = cacheBytes(prefill.cache) / to;
    return last ? lastLogits(outputs.logits!, 0, 1) : undefined;
  }

  /**
   * Keeps a copy of a prefill's cache as it stands, holding `tokens` (the prompt's first positions), for later prompts
   * of `scope` that start with them: the decode loop calls it where the prefill reached a checkpoint position (the
   * prompt's end but its last token; its newest turn's start). On a model with states only (`reuse` `checkpoints`).
   */
  async checkpoint(prefill: TransformersPrefill, tokens: readonly number[], scope: string | undefined): Promise<void> {
    if (tokens.length !== prefill.length)
      throw new Error(`A checkpoint of ${tokens.length} tokens at ${prefill.length}.`);
    await this.#prefixes.keepCopy(tokens, prefill.cache, scope);
  }

  async join(prefill: TransformersPrefill, copies: number): Promise<void> {
    if (this.#batch.rows === 0 && copies === 1) {
      this.#batch.adopt(prefill.cache, prefill.length);
      return;
    }
    await this.#batch.relayout(this.#all(), [{ cache: prefill.cache, length: prefill.length, copies }]);
    // Each row keeps its own cache, the prompt's included, when it leaves.
    this.#prefixes.discard(prefill.cache);
  }

  release(prefill: TransformersPrefill, kept?: { tokens: readonly number[]; scope: string | undefined }): void {
    if (kept && this.#holds(kept.tokens, prefill.length)) this.#prefixes.keep(kept.tokens, prefill.cache, kept.scope);
    else this.#prefixes.discard(prefill.cache);
  }

  async step(tokens: readonly (readonly number[])[]): Promise<(row: number, at?: number) => Float32Array> {
    const fed = tokens.map((t) => t.length);
    const query = Math.max(...fed);
    const outputs = await this.#forward(this.#batch.stepInputs(tokens), query);
    this.#batch.advance(pastOf(outputs), fed);
    const logits = outputs.logits!;
    return (row, at = fed[row]! - 1) => lastLogits(logits, row, query, at);
  }

  async #retract(row: number, count: number): Promise<void> {
    this.#batch.retract(row, count);
    // Their columns are masked: holes, as a row that fed fewer tokens than another leaves. A model whose attention
    // does not honour the mask has them packed away at once.
    if (!(await this.mixesLengths())) await this.#batch.relayout(this.#all());
  }

  async remove(
    leaving: readonly { row: number; tokens: readonly number[]; scope: string | undefined }[],
    kept: readonly number[],
  ): Promise<void> {
    for (const { row, tokens, scope } of leaving) {
      const length = this.#batch.length(row);
      const cache = await this.#batch.takeRow(row);
      if (this.#holds(tokens, length)) this.#prefixes.keep(tokens, cache, scope);
      else this.#prefixes.discard(cache);
    }
    if (kept.length === 0) this.#batch.dispose();
    else await this.#batch.relayout(kept);
  }

  async compact(): Promise<void> {
    // Holes left by rows that fed fewer tokens than others are packed away once they are half the batch.
    if (this.#batch.waste > (this.#batch.rows * this.#batch.width) / 2) await this.#batch.relayout(this.#all());
  }

  clear(): void {
    this.#batch.dispose();
  }

  /**
   * Whether this model may run padded batches (asked once, on first need): see probePadding. Never one with states,
   * which would take a shorter row's padding in as tokens.
   */
  mixesLengths(): Promise<boolean> {
    if (this.#states) return Promise.resolve(false);
    this.#pads ??= probePadding(this.#model, (inputs) => this.#forward(inputs, 0)).catch(() => false);
    return this.#pads;
  }

  /**
   * Whether a cache of `length` tokens may be kept as holding `tokens`: a state holds exactly the tokens fed, and
   * kept as any others it would be reused wrong; keys and values are kept for as many of them as they hold.
   */
  #holds(tokens: readonly number[], length: number): boolean {
    return !this.#states || tokens.length === length;
  }

  /** Every row of the batch, in order. */
  #all(): number[] {
    return Array.from({ length: this.#batch.rows }, (_, i) => i);
  }

  /** One forward pass, in the realm's queue. `keep`: how many trailing positions' logits are needed (0: all). */
  #forward(inputs: Record<string, unknown>, keep: number): Promise<Record<string, Tensor>> {
    this.stats.forwardPasses += 1;
    return this.#queue.run(async () => {
      const withKeep = keep > 0 && this.#keepsLogits ? { ...inputs, num_logits_to_keep: logitsToKeep(keep) } : inputs;
      return (await this.#model.forward(withKeep)) as Record<string, Tensor>;
    });
  }
}

function logitsToKeep(keep: number): Tensor {
  return new Tensor('int64', [BigInt(keep)], []);
}

/**
 * The inputs of a pass of one row feeding `tokens` at positions `from` on, after the `from` tokens of `cache` (a
 * prefill, or a piece of one).
 */
function oneRowInputs(tokens: readonly number[], from: number, cache: DynamicCache) {
  return {
    input_ids: new Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]),
    ...rowPlaces(tokens.length, from, cache),
  };
}

/** The same, fed `embeds` (`[1, positions, hidden]`) instead of token ids: a prompt with images. */
function embedsInputs(embeds: Tensor, from: number, cache: DynamicCache) {
  return { inputs_embeds: embeds, ...rowPlaces(embeds.dims[1]!, from, cache) };
}

/** Where `count` new positions of one row go: after the `from` of `cache`, all of them attended. */
function rowPlaces(count: number, from: number, cache: DynamicCache) {
  return {
    attention_mask: new Tensor('int64', new BigInt64Array(from + count).fill(1n), [1, from + count]),
    position_ids: new Tensor(
      'int64',
      BigInt64Array.from({ length: count }, (_, i) => BigInt(from + i)),
      [1, count],
    ),
    past_key_values: cache,
  };
}

/**
 * Row `row`'s logits at query position `at` (default: the last) of a pass's `[rows, positions, vocabulary]` logits,
 * of which the model returned the last `positions` or all of them; as a new float32 array.
 */
function lastLogits(logits: Tensor, row: number, query: number, at = query - 1): Float32Array {
  const [, positions, vocab] = logits.dims as [number, number, number];
  // The model may have returned every position of the query or only the last `query` of them.
  const index = positions - query + at;
  const data = logits.type === 'float32' ? (logits.data as Float32Array) : (logits.to('float32').data as Float32Array);
  const start = (row * positions + index) * vocab;
  return data.slice(start, start + vocab);
}

/**
 * Whether the model gives a row the same logits padded in a batch as alone: row A decodes `a` alone, and in a batch
 * beside a longer row B, with A padded on the left and, after a step in which B fed two tokens to A's one, a hole.
 * Runs on a few tokens; a model whose attention ignores the mask fails it.
 */
async function probePadding(
  model: PreTrainedModel,
  forward: (inputs: Record<string, unknown>) => Promise<Record<string, Tensor>>,
): Promise<boolean> {
  const solo = (tokens: number[]) => forward(oneRowInputs(tokens, 0, new DynamicCache()));
  const vocab = (model.config as { vocab_size?: number }).vocab_size ?? 100;
  const token = (i: number) => (7 + i * 13) % Math.max(2, Math.min(vocab, 1000));
  const a = [1, 2, 3].map(token);
  const b = [4, 5, 6, 7, 8, 9].map(token);
  const batch = new KVBatch();
  try {
    const prefill = async (tokens: number[]) => new DynamicCache(pastOf(await solo(tokens)));
    const [ca, cb] = [await prefill(a.slice(0, 2)), await prefill(b.slice(0, 3))];
    await batch.relayout(
      [],
      [
        { cache: ca, length: 2, copies: 1 },
        { cache: cb, length: 3, copies: 1 },
      ],
    );
    // Step 1: A feeds one token, B two (A's query is padded on the right: a hole after it).
    let outputs = await forward(batch.stepInputs([[a[2]!], [b[3]!, b[4]!]]));
    batch.advance(pastOf(outputs), [1, 2]);
    // Step 2: one token each; A's next token sits after the hole.
    const [a3, b5] = [token(20), b[5]!];
    outputs = await forward(batch.stepInputs([[a3], [b5]]));
    const batched = [lastLogits(outputs.logits!, 0, 1), lastLogits(outputs.logits!, 1, 1)];
    const alone = [
      lastLogits((await solo([...a, a3])).logits!, 0, 1),
      lastLogits((await solo([...b.slice(0, 5), b5])).logits!, 0, 1),
    ];
    return batched.every((logits, i) => close(logits, alone[i]!));
  } finally {
    batch.dispose();
  }
}

/** Whether two logit rows agree to within float error (relative to their scale). */
function close(a: Float32Array, b: Float32Array): boolean {
  let scale = 1e-6;
  let diff = 0;
  for (let i = 0; i < a.length; i++) {
    scale = Math.max(scale, Math.abs(a[i]!));
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
  }
  return diff <= 1e-3 * scale;
}
