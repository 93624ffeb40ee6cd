import { EngineError } from '../engine-interface/index.ts';
import type { NativeSampling, NativeStep, StepOutput } from './sampling-plan.ts';

/**
 * One request as the decode loop sees it: a prompt and the rows (choices) to generate from it. The request decides
 * each row's tokens from its logits; the loop runs the model.
 */
export interface DecodeJob {
  /** The prompt's ids; positions that are not tokens (an image's) are negative, and `embed` gives their input. */
  readonly prompt: readonly number[];
  /**
   * The input of prompt positions `from` to `to`, for a prompt with positions that are not tokens (a vision model's
   * images): its prefill feeds this instead of ids. The loop hands it to the engine's batch as it is (transformers.js:
   * the input embeddings, a Tensor `[1, to - from, hidden]`). It runs its model work in the realm's queue itself.
   */
  embed?(from: number, to: number): Promise<unknown>;
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
   * The tokens row `row` appends after a forward pass that ended with `output`: its logits (its own row of them, free
   * to be changed), or the token the engine drew for it where it ran natively (see `native`); then any its constraint
   * forces (jump-forward), where `mayJump`. The loop feeds them at the next step unless the row is done.
   */
  next(row: number, output: StepOutput, mayJump: boolean, proposed?: number): number[];
  /** Whether row `row` is over (ended, stopped, or at its limit). */
  done(row: number): boolean;
  /**
   * Speculation: tokens row `row` is likely to generate after `context` (its prompt, what it generated, and the tokens
   * it feeds next), at most `limit`; `alone` where the row is the only one of the step (a draft model's passes would
   * hold other rows up). The loop feeds them in the same pass as the row's own and checks each against the model, in
   * order: `next` gets the proposed token beside the logits before it, and the first token it draws that differs ends
   * the check (the rest are taken back out of the cache). A job without it does not speculate.
   */
  propose?(
    row: number,
    context: readonly number[],
    limit: number,
    alone: boolean,
  ): readonly number[] | Promise<readonly number[]>;
  /**
   * Row `row`'s next step where the engine draws it itself (its sampling plan, which the batch executes whole: see
   * DecodeBatch.executes), else undefined: its logits are handed over. A job answers for row 0 at the prefill only
   * where its rows may share the prompt's first draw (one row, or greedy ones).
   */
  native?(row: number): NativeStep | undefined;
  /**
   * Prompt positions before its end where a later prompt is likely to part from this one (the start of its newest
   * turn: an edit of the newest message, a system prompt shared by many conversations), for a batch that keeps
   * checkpoints (BatchCapabilities.reuse): each is checkpointed as the prefill passes it. Asked only by such a batch.
   */
  checkpoints?(): readonly number[] | Promise<readonly number[]>;
}

/** A row's (choice's) own 31-bit seed from a request's 31-bit `seed`: reproducible, and apart for each row. */
export const rowSeed = (seed: number, row: number) => (Math.imul(seed ^ (row + 1), 0x9e3779b1) >>> 1) % 0x7fffffff;

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

/**
 * What a batch's cache can do with a prefix of what it holds, for prefix reuse:
 * - `cut`: keep any prefix (attention keys and values: a position's entries depend on the tokens before it only);
 * - `checkpoints`: keep only a state it saved as a checkpoint (BatchCapabilities.checkpoint) or the whole of what it
 *   holds (a recurrent or convolution state, a sliding window's cache: it is one state of the whole sequence so far,
 *   which cannot be taken back to an earlier position);
 * - `extend`: keep only the whole of what it holds, for a prompt that extends it (such a state, on a runtime that
 *   cannot save one).
 */
export type CacheReuse = 'cut' | 'checkpoints' | 'extend';
export const DEFAULT_KV_BYTES = 512 * 2 ** 20;

/**
 * A prompt's prefill is cut into pieces of this many tokens while other rows are decoding, with a step of theirs
 * between pieces, so that a long prompt delays the tokens of those already running by one piece at a time; and alone,
 * where the batch asks for it (DecodeBatch.prefillsInPieces), so that an abort is heard within a piece.
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
  /** Tokens proposed by speculation (see DecodeJob.propose) and fed, and of those the ones the model accepted. */
  proposedTokens: number;
  acceptedTokens: number;
}

/** What a piece of a prefill feeds: the prompt's ids, or what the job's `embed` made of those positions. */
export type PrefillInput = { readonly tokens: readonly number[] } | { readonly embeds: unknown };

/** What a batch counts of its own work, for the loop's DecodeStats and its key/value budget. */
export interface BatchStats {
  /** Forward passes it has run, for whatever purpose (its own checks included). */
  forwardPasses: number;
  /**
   * Bytes of keys and values one token of one row holds: 0 until known (from the first prefill), and while it is 0
   * the loop's key/value budget admits by rows alone.
   */
  tokenBytes: number;
}

/**
 * The rows an engine decodes together, and their keys and values: what the decode loop drives. The loop decides who
 * runs when (admission, the key/value budget, prefill in pieces, who leaves, failures, aborts); the batch runs the
 * model. Rows are numbered `0 … rows - 1` in the order they joined, and renumbered that way whenever rows leave.
 *
 * Required: what every engine does (start and feed a prefill, join it as rows, step every row, let rows and prefills
 * go). What an engine may do beyond that it declares as BatchCapabilities; each one it leaves out has a default, which
 * the loop applies once (`capabilitiesOf`).
 *
 * `Prefill` is the engine's own handle on a prompt being prefilled for rows not yet in the batch (transformers.js: a
 * one-row key/value cache): the loop holds it between pieces and hands it back, and it is the batch's to free through
 * `join` or `release`.
 *
 * An engine that runs one row at a time and keeps its own key/value cache (llama.cpp) implements it with `maxRows` 1:
 * the loop then never asks `mixesLengths`, and only ever has rows from one request running; a request of `n` choices
 * still joins as `n` rows (`join` may refuse that by throwing, which fails that request alone).
 */
export interface DecodeBatch<Prefill> extends Partial<BatchCapabilities> {
  /** What it has done so far; read whenever the loop needs it, so the batch may update it in place. */
  readonly stats: BatchStats;
  /**
   * Starts a prefill of `prompt` for rows that will join: from the longest prefix of it cached for `scope`, leaving at
   * least its last token to feed (its logits are the first draw's). `cached`: how many tokens it starts with, only
   * those truly reused (none evaluated again behind the loop's back). One that fails holds nothing: whatever it took
   * (a sequence, a cached entry) is free again; where reuse failed, it starts from nothing rather than fail.
   */
  begin(prompt: readonly number[], scope: string | undefined): Promise<{ prefill: Prefill; cached: number }>;
  /**
   * Feeds prompt positions `from` to `to` to a prefill that holds `from` of them (one forward pass of its own, not the
   * batch's). When `last`, the prompt is all in: the logits of its last position (a new array), or the token drawn
   * by `native`'s plan.
   */
  fill(
    prefill: Prefill,
    from: number,
    to: number,
    input: PrefillInput,
    last: boolean,
    native?: NativeStep,
  ): Promise<StepOutput | undefined>;
  /** A prefill with all its prompt in joins as `copies` rows after those running; the batch owns it from then on. */
  join(prefill: Prefill, copies: number): Promise<void>;
  /**
   * Lets go of a prefill that does not join. With `kept` (none of its rows joined: all were done at their first draw)
   * it is kept for prefix reuse, as holding `kept.tokens` under `kept.scope`; without (a failed or aborted request's)
   * it is freed.
   */
  release(prefill: Prefill, kept?: { tokens: readonly number[]; scope: string | undefined }): void;
  /**
   * One forward pass of every row, row `i` feeding `tokens[i]` (at least one token each, fewer than another row's
   * where it jumped forward less). Gives row `i`'s logits after the token at `at` of those it fed (default: the last),
   * a new array each call, or the token drawn by `native[i]`'s plan where it is set. `from[i]`, where given
   * (a step with speculated tokens): the first of row `i`'s positions it will be asked for, each one after it too;
   * otherwise its last only.
   */
  step(
    tokens: readonly (readonly number[])[],
    native?: readonly (NativeStep | undefined)[],
    from?: readonly number[],
  ): Promise<(row: number, at?: number) => StepOutput>;
  /**
   * Rows leave: each of `leaving` has its keys and values kept for prefix reuse, as holding `tokens` (every token it
   * fed), under `scope`; then the rows `kept`, in that order, are the batch's rows (none: it is empty).
   */
  remove(
    leaving: readonly { row: number; tokens: readonly number[]; scope: string | undefined }[],
    kept: readonly number[],
  ): Promise<void>;
  /** Drops every row and frees what they hold (a failed pass: the batch starts over). */
  clear(): void;
}

/**
 * What a batch may declare beyond what every batch does. Each is optional on DecodeBatch; the default, what leaving it
 * out means, is said with each, and the loop applies it once (`capabilitiesOf`).
 */
export interface BatchCapabilities {
  /** Rows it can hold at most, whatever BatchLimits say. Default: no limit of its own. */
  readonly maxRows: number | undefined;
  /**
   * What of a row's sampling plan the batch draws itself (see executesPlan). Default: none, every row's logits are
   * handed over. Declared, never found out by a failure.
   */
  readonly executes: NativeSampling | undefined;
  /**
   * Whether rows of different lengths, in one step, give each the logits it would get alone: the loop then batches
   * different requests together and lets rows jump forward by different numbers of tokens. Asked once, the first
   * time the batch would hold rows of two requests; a failure counts as no. Default: no (one request at a time).
   */
  mixesLengths(): Promise<boolean>;
  /**
   * Takes the last `count` tokens row `row` fed back out of its keys and values (speculated tokens the model did not
   * accept): its next token goes where the first of them was. Default: none, and the batch is not given speculated
   * tokens.
   */
  retract?(row: number, count: number): Promise<void>;
  /**
   * Whether speculated tokens should be given only to rows the engine draws for (DecodeJob.native): an engine that
   * hands a whole distribution over slowly would spend more on one per position than the accepted tokens save.
   * Default: no, every row that proposes is checked.
   */
  readonly checksNativeOnly: boolean;
  /**
   * Whether a prompt prefilled alone is fed in pieces too (PREFILL_PIECE tokens a pass), with its caller's abort heard
   * between them: an engine whose pass cannot be stopped (llama.cpp) would otherwise evaluate all of a long prompt, for
   * a caller long gone, before the next request could start. Default: no, only beside running rows.
   */
  readonly prefillsInPieces: boolean;
  /** After a step from which no row left: a chance to pack away what its rows no longer use. Default: nothing. */
  compact(): Promise<void>;
  /**
   * What its cache can do with a prefix of what it holds (see CacheReuse). The loop checkpoints prefills only on a
   * batch of `checkpoints`; `begin` alone decides what of a cached state it reuses. Default: `cut`.
   */
  readonly reuse: CacheReuse;
  /**
   * Saves a prefill's state as it stands, holding `tokens` (the prompt's first positions), for later prompts of `scope`
   * that start with them: the loop calls it after a piece of the prefill that ended at a checkpoint position (the
   * prompt's end but its last token, which is fed again for the first draw; and each of DecodeJob.checkpoints). Its
   * bytes count against the batch's own cache budget. A failure loses that checkpoint only. Default: none.
   */
  checkpoint?(prefill: unknown, tokens: readonly number[], scope: string | undefined): Promise<void>;
}

/** A batch's capabilities, each one it leaves out given its default (see BatchCapabilities). */
function capabilitiesOf(batch: DecodeBatch<unknown>): BatchCapabilities {
  const { retract, mixesLengths, compact, checkpoint } = batch;
  const reuse = batch.reuse ?? 'cut';
  return {
    reuse,
    maxRows: batch.maxRows,
    executes: batch.executes,
    checksNativeOnly: batch.checksNativeOnly ?? false,
    prefillsInPieces: batch.prefillsInPieces ?? false,
    mixesLengths: mixesLengths ? () => mixesLengths.call(batch) : () => Promise.resolve(false),
    compact: compact ? () => compact.call(batch) : () => Promise.resolve(),
    ...(retract && { retract: (row: number, count: number) => retract.call(batch, row, count) }),
    ...(checkpoint &&
      reuse === 'checkpoints' && {
        checkpoint: (prefill: unknown, tokens: readonly number[], scope: string | undefined) =>
          checkpoint.call(batch, prefill, tokens, scope),
      }),
  };
}

interface Waiting<Prefill> {
  job: DecodeJob;
  resolve: (value: { cachedPromptTokens: number }) => void;
  reject: (error: unknown) => void;
  /** Set once its prefill has started: from then on the loop, not its abort listener, takes it out of the queue. */
  started?: boolean;
  /**
   * Its prefill: the engine's handle, how many prompt tokens came from the prefix cache and how many it holds, and
   * the positions still to checkpoint as it passes them (ascending; on a batch that keeps checkpoints).
   */
  filling?: { prefill: Prefill; cached: number; filled: number; marks: number[] };
}

interface Row<Prefill> {
  waiting: Waiting<Prefill>;
  index: number;
  /** The tokens its columns hold: the prompt, then what it generated and fed. */
  held: number[];
  /** The tokens it feeds at the next step. */
  pending: number[];
}

/** The speculation of a row in a step: the tokens proposed after its pending ones. */
type Proposal = readonly number[];

/**
 * Lantern's own decode loop over an engine's batch of rows (DecodeBatch): the model's forward pass with its key/value
 * cache, driven step by step, with continuous batching. Requests for the model join the running batch between steps:
 * each one's prompt is prefilled once (from the longest cached prefix, in pieces while others decode), its `n` rows
 * join with copies of that cache, and every step feeds each row's next token(s) to one forward pass of the whole
 * batch. A finished row leaves at once (its cache kept for prefix reuse), and a waiting request joins as soon as rows
 * and the key/value budget allow, first come first served. Every pass runs through the realm's task queue (the batch's
 * business), so embeddings and other models interleave between steps.
 *
 * Rows of different lengths in one batch need an engine that gives each row the logits it would get alone
 * (`mixesLengths`; on transformers.js, a model whose attention honours its attention mask). The first time the batch
 * would hold the rows of more than one request the loop asks this once. An engine that cannot runs one request at a
 * time (its `n` rows, kept equal in length, still batched).
 */
export class DecodeLoop<Prefill> {
  readonly #batch: DecodeBatch<Prefill>;
  /** What the batch declared it does beyond the required, with the defaults of what it left out. */
  readonly #can: BatchCapabilities;
  readonly #maxRows: number;
  readonly #kvBytes: number;
  readonly #waiting: Waiting<Prefill>[] = [];
  #rows: Row<Prefill>[] = [];
  #running = false;
  /** Whether rows of different lengths may share a step: unknown until first needed. */
  #padding: Promise<boolean> | undefined;
  /** The answer of `#padding`, once known. */
  #pads = false;
  readonly stats: DecodeStats;

  constructor(batch: DecodeBatch<Prefill>, limits: BatchLimits = {}) {
    this.#batch = batch;
    this.#can = capabilitiesOf(batch);
    this.#maxRows = Math.max(1, Math.min(limits.maxRows ?? DEFAULT_MAX_ROWS, this.#can.maxRows ?? Infinity));
    this.#kvBytes = limits.kvBytes ?? DEFAULT_KV_BYTES;
    this.stats = {
      get forwardPasses() {
        return batch.stats.forwardPasses;
      },
      rowSteps: 0,
      forcedTokens: 0,
      proposedTokens: 0,
      acceptedTokens: 0,
    };
  }

  /** Runs a job to its end; resolves with how many of its prompt tokens came from the prefix cache. */
  run(job: DecodeJob): Promise<{ cachedPromptTokens: number }> {
    return new Promise((resolve, reject) => {
      const waiting: Waiting<Prefill> = { job, resolve, reject };
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
      const queued = this.#waiting.splice(0);
      const jobs = new Set([...this.#rows.map((r) => r.waiting), ...queued]);
      this.#rows = [];
      this.#batch.clear();
      // A prefill under way holds what its batch took for it (a sequence): let go, or no later job could have it.
      for (const waiting of queued) if (waiting.filling) this.#batch.release(waiting.filling.prefill);
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
      if (head.filling) this.#batch.release(head.filling.prefill);
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
      if (head.filling) this.#batch.release(head.filling.prefill);
      head.reject(EngineError.from(error));
    }
  }

  /** Whether a job may join the rows running now: room in rows and bytes, and an engine that mixes lengths when needed. */
  async #fits(job: DecodeJob): Promise<boolean> {
    const running = this.#rows.length;
    if (running === 0) return true;
    if (running + job.rows > this.#maxRows) return false;
    const tokenBytes = this.#batch.stats.tokenBytes;
    if (tokenBytes > 0) {
      const longest = Math.max(
        job.prompt.length + job.maxNewTokens,
        ...this.#rows.map((r) => r.waiting.job.prompt.length + r.waiting.job.maxNewTokens),
      );
      if ((running + job.rows) * longest * tokenBytes > this.#kvBytes) return false;
    }
    return this.#mixesLengths();
  }

  /** Whether the engine may run rows of different lengths together (asked once, on first need). */
  #mixesLengths(): Promise<boolean> {
    this.#padding ??= this.#can
      .mixesLengths()
      .catch(() => false)
      .then((pads) => (this.#pads = pads));
    return this.#padding;
  }

  /**
   * Runs the next piece of a job's prefill; returns what it gives of the token after the prompt once it is all in. The
   * first piece starts from the longest cached prefix.
   */
  async #prefill(waiting: Waiting<Prefill>): Promise<StepOutput | undefined> {
    const { job } = waiting;
    const prompt = job.prompt;
    if (!waiting.filling) {
      // Where to checkpoint is asked before the prefill starts: once it has, the batch holds something to free.
      const wanted = this.#can.checkpoint ? await checkpointPositions(job) : [];
      const { prefill, cached } = await this.#batch.begin(prompt, job.scope);
      const marks = wanted.filter((at) => at > cached);
      waiting.filling = { prefill, cached, filled: cached, marks };
    }
    const filling = waiting.filling;
    const from = filling.filled;
    // Alone, the whole prompt in one pass, as transformers.js' generate() does; beside running rows, or on a batch
    // that asks for it, a piece of it (an aborted job is let go before its next piece: see #admit). A piece ends at
    // the next checkpoint position.
    const inPieces = this.#rows.length > 0 || this.#can.prefillsInPieces;
    const to = Math.min(
      inPieces ? Math.min(prompt.length, from + PREFILL_PIECE) : prompt.length,
      filling.marks[0] ?? Infinity,
    );
    // A job that embeds its prompt itself (images) takes its own turns of the queue to do it.
    const { embed } = job;
    const input: PrefillInput = embed ? { embeds: await embed(from, to) } : { tokens: prompt.slice(from, to) };
    const last = to === prompt.length;
    const logits = await this.#batch.fill(filling.prefill, from, to, input, last, last ? job.native?.(0) : undefined);
    filling.filled = to;
    if (filling.marks[0] === to) {
      filling.marks.shift();
      // A checkpoint that fails is one fewer to reuse later: the request goes on.
      await this.#can.checkpoint!(filling.prefill, prompt.slice(0, to), job.scope).catch(() => {});
    }
    return logits;
  }

  /** A prefilled job's rows draw their first tokens and join the batch (those already done leave at once). */
  async #join(waiting: Waiting<Prefill>, output: StepOutput): Promise<void> {
    const { job } = waiting;
    const { prefill, cached } = waiting.filling!;
    const rows: Row<Prefill>[] = [];
    // Rows jump forward by different numbers of tokens: beside other rows, only on an engine that mixes lengths.
    const mayJump = this.#pads || (this.#rows.length === 0 && job.rows === 1);
    for (let index = 0; index < job.rows; index++) {
      // Each row may change its logits: a copy each. A native draw is shared by rows that share it (greedy ones).
      const pending = job.next(index, output instanceof Float32Array ? Float32Array.from(output) : output, mayJump);
      this.stats.forcedTokens += pending.length - 1;
      if (!job.done(index)) rows.push({ waiting, index, held: [...job.prompt], pending });
    }
    this.stats.rowSteps += job.rows;
    if (rows.length === 0) {
      this.#batch.release(prefill, { tokens: job.prompt, scope: job.scope });
      return waiting.resolve({ cachedPromptTokens: cached });
    }
    await this.#batch.join(prefill, rows.length);
    this.#rows.push(...rows);
  }

  /** One forward pass of every row; each row draws its next tokens; finished rows leave. */
  async #step(): Promise<void> {
    const rows = this.#rows;
    // A job whose proposer failed fails after this step (as one whose draw failed); the others go on.
    const failures = new Map<Waiting<Prefill>, unknown>();
    const proposals = await this.#proposals(rows, failures);
    let logits: (row: number, at?: number) => StepOutput;
    try {
      // A speculating row's proposal is checked at each of its positions: where the engine draws, by the token it
      // draws there (a draw from the model's distribution, which the proposal either is or is not).
      const native = rows.map((r) => r.waiting.job.native?.(r.index));
      const speculating = proposals.some((p) => p.length > 0);
      logits = await this.#batch.step(
        rows.map((r, i) => (proposals[i]!.length > 0 ? [...r.pending, ...proposals[i]!] : r.pending)),
        native.some(Boolean) ? native : undefined,
        speculating ? rows.map((r) => r.pending.length - 1) : undefined,
      );
    } catch (error) {
      // The pass itself failed: every row in it fails with it, and the batch starts over.
      this.#rows = [];
      this.#batch.clear();
      for (const waiting of new Set(rows.map((r) => r.waiting))) waiting.reject(EngineError.from(error));
      return;
    }
    this.stats.rowSteps += rows.length;
    // Rows jump forward by different numbers of tokens: beside other rows, only on an engine that mixes lengths.
    const mayJump = rows.length === 1 || this.#pads;
    const retracts: { row: number; count: number }[] = [];
    for (const [b, row] of rows.entries()) {
      const proposal = proposals[b]!;
      const fed = row.pending.length;
      row.held.push(...row.pending);
      row.pending = [];
      const { job } = row.waiting;
      if (failures.has(row.waiting)) continue;
      try {
        // The row's own draw, then each proposed token in turn while the model draws it too.
        let accepted = 0;
        let next: number[];
        let forced: number;
        for (;;) {
          const proposed = proposal[accepted];
          next = job.next(row.index, logits(b, fed - 1 + accepted), mayJump, proposed);
          forced = next.length - 1;
          if (proposed === undefined || next[0] !== proposed) break;
          // Accepted: it is in the cache already. What the draw forced after it (jump-forward) is fed next.
          accepted += 1;
          row.held.push(proposed);
          next = next.slice(1);
          if (next.length > 0 || job.done(row.index)) break;
        }
        this.stats.forcedTokens += forced;
        this.stats.proposedTokens += proposal.length;
        this.stats.acceptedTokens += accepted;
        if (accepted < proposal.length) retracts.push({ row: b, count: proposal.length - accepted });
        if (!job.done(row.index)) row.pending = next;
      } catch (error) {
        failures.set(row.waiting, error);
      }
    }
    for (const { row, count } of retracts) await this.#can.retract!(row, count);
    // A job that failed loses all its rows, those that drew before the failure too.
    for (const row of rows) if (failures.has(row.waiting)) row.pending = [];
    await this.#leave(failures);
  }

  /**
   * Each row's speculated tokens for the next step (none where it does not speculate): only on an engine that takes
   * them back (`retract`), and beside other rows only where rows of different lengths may share a step.
   */
  async #proposals(rows: readonly Row<Prefill>[], failures: Map<Waiting<Prefill>, unknown>): Promise<Proposal[]> {
    const none: Proposal = [];
    if (!this.#can.retract || (rows.length > 1 && !this.#pads)) return rows.map(() => none);
    const alone = rows.length === 1;
    return Promise.all(
      rows.map(async (row) => {
        const { job } = row.waiting;
        if (!job.propose || (this.#can.checksNativeOnly && !job.native?.(row.index))) return none;
        const generated = row.held.length + row.pending.length - job.prompt.length;
        // The last token a row may generate is drawn, never proposed: a proposal past it could not be accepted.
        const limit = job.maxNewTokens - generated - 1;
        if (limit <= 0) return none;
        try {
          return (await job.propose(row.index, [...row.held, ...row.pending], limit, alone)).slice(0, limit);
        } catch (error) {
          failures.set(row.waiting, error);
          return none;
        }
      }),
    );
  }

  /**
   * Rows with nothing to feed leave the batch; their caches go to prefix reuse. A job none of whose rows remain is
   * settled: failed, aborted, or done.
   */
  async #leave(failures: ReadonlyMap<Waiting<Prefill>, unknown>): Promise<void> {
    const rows = this.#rows;
    const leaving = rows.filter((r) => r.pending.length === 0);
    if (leaving.length === 0) return this.#can.compact();
    // A row holds every token it fed; the last one it drew was never fed.
    await this.#batch.remove(
      leaving.map((row) => ({ row: rows.indexOf(row), tokens: row.held, scope: row.waiting.job.scope })),
      rows.flatMap((r, i) => (r.pending.length > 0 ? [i] : [])),
    );
    this.#rows = rows.filter((r) => r.pending.length > 0);
    const settled = new Set(leaving.map((r) => r.waiting));
    for (const waiting of settled) {
      if (this.#rows.some((r) => r.waiting === waiting)) continue;
      if (failures.has(waiting)) waiting.reject(failures.get(waiting));
      else if (waiting.job.signal?.aborted) waiting.reject(aborted());
      else waiting.resolve({ cachedPromptTokens: waiting.filling!.cached });
    }
  }
}

/**
 * The positions of a job's prompt to checkpoint, ascending: its end but the last token (a prompt sent again, or
 * extended, reuses all of it that a checkpoint can give: the last token is fed again for the first draw), and those
 * the job names. Those it fails to name are left out.
 */
async function checkpointPositions(job: DecodeJob): Promise<number[]> {
  const end = job.prompt.length - 1;
  const named = await Promise.resolve()
    .then(() => job.checkpoints?.() ?? [])
    .catch(() => []);
  return [...new Set([...named, end])].filter((at) => at > 0 && at <= end).sort((a, b) => a - b);
}

const aborted = () => new EngineError('aborted', 'The request was cancelled by the client.');
