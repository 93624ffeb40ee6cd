import { DynamicCache, Tensor, type PreTrainedModel } from '@huggingface/transformers';
import { EngineError } from '../../engine-interface/index.ts';
import type { TaskQueue } from '../task-queue.ts';
import { disposeReplaced, KVBatch, pastOf } from './kv-batch.ts';
import { cacheBytes, type PrefixReuse } from './prefix-reuse.ts';

/**
 * One request as the decode loop sees it: a prompt and the rows (choices) to generate from it. The request decides
 * each row's tokens from its logits; the loop runs the model.
 */
export interface DecodeJob {
  /** The prompt's ids; positions that are not tokens (an image's) are negative, and `embed` gives their input. */
  readonly prompt: readonly number[];
  /**
   * The input embeddings `[1, to - from, hidden]` of prompt positions `from` to `to`, for a prompt with positions
   * that are not tokens (a vision model's images): its prefill feeds these instead of ids. It runs its model work in
   * the realm's queue itself.
   */
  embed?(from: number, to: number): Promise<Tensor>;
  readonly rows: number;
  /**
   * Whose cached prefixes it may start from, and under which its rows' caches are kept (ChatRequest.cacheScope): the
   * rows of one batch may be of different keys.
   */
  readonly scope?: string | undefined;
  /** The most tokens a row may generate: with the prompt, what its keys and values may come to. */
  readonly maxNewTokens: number;
  readonly signal?: AbortSignal | undefined;
  /**
   * The tokens row `row` appends after a forward pass that ended with `logits` (its own row of them, free to be
   * changed): the token drawn, then any its constraint forces (jump-forward), where `mayJump`. The loop feeds them at
   * the next step unless the row is done.
   */
  next(row: number, logits: Float32Array, mayJump: boolean): number[];
  /** Whether row `row` is over (ended, stopped, or at its limit). */
  done(row: number): boolean;
}

/** How the loop batches. */
export interface BatchLimits {
  /** Rows decoded together at most (default 8). A request of `n` choices needs `n`. */
  maxRows?: number | undefined;
  /**
   * Bytes of keys and values the batch may hold at most (default 512 MiB), counted for each row at the longest any row
   * may grow to. A request that would pass it waits for rows to finish; one alone always runs.
   */
  kvBytes?: number | undefined;
}

export const DEFAULT_MAX_ROWS = 8;
export const DEFAULT_KV_BYTES = 512 * 2 ** 20;

/**
 * A prompt's prefill is cut into pieces of this many tokens while other rows are decoding, with a step of theirs
 * between pieces, so that a long prompt delays the tokens of those already running by one piece at a time.
 */
const PREFILL_PIECE = 256;

/** What the loop has done, since the model loaded. */
export interface DecodeStats {
  /** Forward passes run (a prefill piece or a step of the batch). */
  forwardPasses: number;
  /** Row-steps: one per row per step (what decoding without batching would have spent in passes). */
  rowSteps: number;
  /** Tokens appended by jump-forward, each one a forward pass saved. */
  forcedTokens: number;
}

interface Waiting {
  job: DecodeJob;
  resolve: (value: { cachedPromptTokens: number }) => void;
  reject: (error: unknown) => void;
  /** Set once its prefill has started: from then on the loop, not its abort listener, takes it out of the queue. */
  started?: boolean;
  /** Its prefill: the one-row cache being filled and how many prompt tokens it holds. */
  cache?: DynamicCache;
  cached?: number;
  filled?: number;
}

interface Row {
  waiting: Waiting;
  index: number;
  /** The tokens its columns hold: the prompt, then what it generated and fed. */
  held: number[];
  /** The tokens it feeds at the next step. */
  pending: number[];
}

/**
 * Lantern's own decode loop over a transformers.js causal LM: the model's forward pass with its key/value cache,
 * driven step by step, with continuous batching. Requests for the model join the running batch between steps: each
 * one's prompt is prefilled once (from the longest cached prefix, in pieces while others decode), its `n` rows join
 * with copies of that cache, and every step feeds each row's next token(s) to one forward pass of the whole batch. A
 * finished row leaves at once (its cache kept for prefix reuse), and a waiting request joins as soon as rows and the
 * key/value budget allow, first come first served. Every pass runs through the realm's task queue, so embeddings and
 * other models interleave between steps.
 *
 * Batching rows of different lengths pads them (see KVBatch), which needs a model whose attention honours its
 * attention mask. Some exports do not (ONNX Runtime's GroupQueryAttention reads only how many tokens each row holds).
 * The first time the batch would hold more than one row the loop checks this once on the model itself: the same
 * tokens decoded alone and padded in a batch must give the same logits. A model that fails it runs one request at a
 * time (its `n` rows, kept equal in length, still batched).
 */
export class DecodeLoop {
  readonly #model: PreTrainedModel;
  /** Whether the model takes `num_logits_to_keep` (optimum's newer exports): then it computes only the logits used. */
  readonly #keepsLogits: boolean;
  readonly #queue: TaskQueue;
  readonly #prefixes: PrefixReuse;
  readonly #maxRows: number;
  readonly #kvBytes: number;
  readonly #waiting: Waiting[] = [];
  #rows: Row[] = [];
  readonly #batch = new KVBatch();
  #running = false;
  /** Whether padded batches give the same logits as rows alone: unknown until first needed. */
  #padding: Promise<boolean> | undefined;
  /** The answer of `#padding`, once known. */
  #pads = false;
  /** Bytes of keys and values per token, from the first cache seen. */
  #tokenBytes = 0;
  readonly stats: DecodeStats = { forwardPasses: 0, rowSteps: 0, forcedTokens: 0 };

  constructor(model: PreTrainedModel, queue: TaskQueue, prefixes: PrefixReuse, limits: BatchLimits = {}) {
    this.#model = model;
    const { sessions } = model as unknown as { sessions: Record<string, { inputNames: string[] } | undefined> };
    this.#keepsLogits = sessions['model']?.inputNames.includes('num_logits_to_keep') ?? false;
    this.#queue = queue;
    this.#prefixes = prefixes;
    this.#maxRows = Math.max(1, limits.maxRows ?? DEFAULT_MAX_ROWS);
    this.#kvBytes = limits.kvBytes ?? DEFAULT_KV_BYTES;
  }

  /** Runs a job to its end; resolves with how many of its prompt tokens came from the prefix cache. */
  run(job: DecodeJob): Promise<{ cachedPromptTokens: number }> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting = { job, resolve, reject };
      const { signal } = job;
      if (signal?.aborted) return reject(aborted());
      // A job still waiting to join is answered at once when its caller goes.
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.#waiting.indexOf(waiting);
          if (at >= 0 && !waiting.started) {
            this.#waiting.splice(at, 1);
            reject(aborted());
          }
        },
        { once: true },
      );
      this.#waiting.push(waiting);
      if (!this.#running) void this.#drive();
    });
  }

  async #drive(): Promise<void> {
    this.#running = true;
    try {
      while (this.#waiting.length > 0 || this.#rows.length > 0) {
        // Rows whose caller went leave first, so that a request sent again at once finds their caches.
        if (this.#rows.some((r) => r.waiting.job.signal?.aborted)) {
          for (const row of this.#rows) if (row.waiting.job.signal?.aborted) row.pending = [];
          await this.#leave(new Map());
        }
        await this.#admit();
        if (this.#rows.length > 0) await this.#step();
      }
    } catch (error) {
      // A failure outside any one request's pass (a relayout that ran out of memory): nothing running can go on.
      const jobs = new Set([...this.#rows.map((r) => r.waiting), ...this.#waiting.splice(0)]);
      this.#rows = [];
      this.#batch.dispose();
      for (const waiting of jobs) waiting.reject(EngineError.from(error));
    } finally {
      this.#running = false;
    }
  }

  /** Prefills the first waiting job (one piece of it while rows are decoding) and lets it join once filled. */
  async #admit(): Promise<void> {
    const head = this.#waiting[0];
    if (!head) return;
    const dequeue = () => this.#waiting.splice(this.#waiting.indexOf(head), 1);
    if (head.job.signal?.aborted) {
      dequeue();
      if (head.cache) this.#prefixes.discard(head.cache);
      return head.reject(aborted());
    }
    if (!head.started) {
      if (!(await this.#fits(head.job))) return;
      // Its caller may have gone while the padding check ran: its listener has answered it and taken it out.
      if (this.#waiting[0] !== head) return;
      head.started = true;
    }
    try {
      const logits = await this.#prefill(head);
      if (!logits) return; // more pieces to go
      dequeue();
      await this.#join(head, logits);
    } catch (error) {
      if (this.#waiting.includes(head)) dequeue();
      if (head.cache) this.#prefixes.discard(head.cache);
      head.reject(EngineError.from(error));
    }
  }

  /** Whether a job may join the rows running now: room in rows and bytes, and a model that pads when needed. */
  async #fits(job: DecodeJob): Promise<boolean> {
    const running = this.#rows.length;
    if (running === 0) return true;
    if (running + job.rows > this.#maxRows) return false;
    if (this.#tokenBytes > 0) {
      const longest = Math.max(
        job.prompt.length + job.maxNewTokens,
        ...this.#rows.map((r) => r.waiting.job.prompt.length + r.waiting.job.maxNewTokens),
      );
      if ((running + job.rows) * longest * this.#tokenBytes > this.#kvBytes) return false;
    }
    return this.#padsCorrectly();
  }

  /** Whether this model may run padded batches (checked once, on first need). */
  #padsCorrectly(): Promise<boolean> {
    this.#padding ??= probePadding(this.#model, (inputs) => this.#forward(inputs, 0))
      .catch(() => false)
      .then((pads) => (this.#pads = pads));
    return this.#padding;
  }

  /**
   * Runs the next piece of a job's prefill; returns the logits of the prompt's last token once it is all in. The
   * first piece starts from the longest cached prefix.
   */
  async #prefill(waiting: Waiting): Promise<Float32Array | undefined> {
    const prompt = waiting.job.prompt;
    if (!waiting.cache) {
      waiting.cache = await this.#prefixes.prepare(prompt, waiting.job.scope);
      waiting.cached = waiting.filled = waiting.cache.get_seq_length();
    }
    const from = waiting.filled!;
    // Alone, the whole prompt in one pass, as transformers.js' generate() does; beside running rows, a piece of it.
    const to = this.#rows.length > 0 ? Math.min(prompt.length, from + PREFILL_PIECE) : prompt.length;
    // A job that embeds its prompt itself (images) takes its own turns of the queue to do it.
    const { embed } = waiting.job;
    const inputs = embed
      ? embedsInputs(await embed(from, to), from, waiting.cache)
      : oneRowInputs(prompt.slice(from, to), from, waiting.cache);
    const outputs = await this.#forward(inputs, 1);
    const past = pastOf(outputs);
    disposeReplaced(waiting.cache, past);
    waiting.cache = new DynamicCache(past);
    waiting.filled = to;
    if (!this.#tokenBytes) this.#tokenBytes = cacheBytes(waiting.cache) / to;
    if (to < prompt.length) return undefined;
    return lastLogits(outputs.logits!, 0, 1);
  }

  /** A prefilled job's rows draw their first tokens and join the batch (those already done leave at once). */
  async #join(waiting: Waiting, logits: Float32Array): Promise<void> {
    const { job } = waiting;
    const cache = waiting.cache!;
    const rows: Row[] = [];
    // Rows jump forward by different numbers of tokens: beside other rows, only on a model that pads correctly.
    const mayJump = this.#pads || (this.#rows.length === 0 && job.rows === 1);
    for (let index = 0; index < job.rows; index++) {
      const pending = job.next(index, Float32Array.from(logits), mayJump);
      this.stats.forcedTokens += pending.length - 1;
      if (!job.done(index)) rows.push({ waiting, index, held: [...job.prompt], pending });
    }
    this.stats.rowSteps += job.rows;
    if (rows.length === 0) {
      this.#prefixes.keep([...job.prompt], cache, job.scope);
      return waiting.resolve({ cachedPromptTokens: waiting.cached! });
    }
    if (this.#rows.length === 0 && rows.length === 1) {
      this.#batch.adopt(cache);
    } else {
      await this.#batch.relayout(
        this.#rows.map((_, i) => i),
        [{ cache, copies: rows.length }],
      );
      // Each row keeps its own cache, the prompt's included, when it leaves.
      this.#prefixes.discard(cache);
    }
    this.#rows.push(...rows);
  }

  /** One forward pass of every row; each row draws its next tokens; finished rows leave. */
  async #step(): Promise<void> {
    const rows = this.#rows;
    const fed = rows.map((r) => r.pending.length);
    const query = Math.max(...fed);
    let logits: Tensor;
    try {
      const outputs = await this.#forward(this.#batch.stepInputs(rows.map((r) => r.pending)), query);
      this.#batch.advance(pastOf(outputs), fed);
      logits = outputs.logits!;
    } catch (error) {
      // The pass itself failed: every row in it fails with it, and the batch starts over.
      this.#rows = [];
      this.#batch.dispose();
      for (const waiting of new Set(rows.map((r) => r.waiting))) waiting.reject(EngineError.from(error));
      return;
    }
    this.stats.rowSteps += rows.length;
    // Rows jump forward by different numbers of tokens: beside other rows, only on a model that pads correctly.
    const mayJump = rows.length === 1 || this.#pads;
    const failures = new Map<Waiting, unknown>();
    for (const [b, row] of rows.entries()) {
      row.held.push(...row.pending);
      row.pending = [];
      const { job } = row.waiting;
      if (failures.has(row.waiting)) continue;
      try {
        const next = job.next(row.index, lastLogits(logits, b, query, fed[b]! - 1), mayJump);
        this.stats.forcedTokens += next.length - 1;
        if (!job.done(row.index)) row.pending = next;
      } catch (error) {
        failures.set(row.waiting, error);
      }
    }
    // A job that failed loses all its rows, those that drew before the failure too.
    for (const row of rows) if (failures.has(row.waiting)) row.pending = [];
    await this.#leave(failures);
  }

  /**
   * Rows with nothing to feed leave the batch; their caches go to prefix reuse. A job none of whose rows remain is
   * settled: failed, aborted, or done.
   */
  async #leave(failures: ReadonlyMap<Waiting, unknown>): Promise<void> {
    const rows = this.#rows;
    const leaving = rows.filter((r) => r.pending.length === 0);
    if (leaving.length === 0) {
      // Holes left by rows that fed fewer tokens than others are packed away once they are half the batch.
      if (this.#batch.waste > (this.#batch.rows * this.#batch.width) / 2) {
        await this.#batch.relayout(rows.map((_, i) => i));
      }
      return;
    }
    for (const row of leaving) {
      // A row holds every token it fed; the last one it drew was never fed.
      const cache = await this.#batch.takeRow(rows.indexOf(row));
      this.#prefixes.keep(row.held, cache, row.waiting.job.scope);
    }
    this.#rows = rows.filter((r) => r.pending.length > 0);
    if (this.#rows.length === 0) this.#batch.dispose();
    else await this.#batch.relayout(rows.flatMap((r, i) => (r.pending.length > 0 ? [i] : [])));
    const settled = new Set(leaving.map((r) => r.waiting));
    for (const waiting of settled) {
      if (this.#rows.some((r) => r.waiting === waiting)) continue;
      if (failures.has(waiting)) waiting.reject(failures.get(waiting));
      else if (waiting.job.signal?.aborted) waiting.reject(aborted());
      else waiting.resolve({ cachedPromptTokens: waiting.cached! });
    }
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

const aborted = () => new EngineError('aborted', 'The request was cancelled by the client.');

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
        { cache: ca, copies: 1 },
        { cache: cb, copies: 1 },
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
