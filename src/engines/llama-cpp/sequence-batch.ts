import { EngineError } from '../../engine-interface/index.ts';
import type { BatchStats, CacheReuse, DecodeBatch, PrefillInput } from '../../generation/decode-loop.ts';
import type { NativeSampling, NativeStep, StepOutput } from '../../generation/sampling-plan.ts';

/**
 * One llama.cpp sequence as a runtime offers it (node-llama-cpp's context sequences in Node, wllama's one sequence in
 * browsers): it holds keys and values of the tokens fed to it, in order.
 */
export interface LlamaSequence {
  /** What of a row's sampling plan the runtime's own sampler draws (the same for every sequence of a model). */
  readonly executes: NativeSampling;
  /**
   * Feeds tokens after those it holds. With `next`, returns the token after the last: `'distribution'`, the model's
   * next-token log-probabilities (temperature 1, nothing cut; {@link LOWEST_LOGPROB} for a probability of 0); a
   * NativeStep (whose plan `executes` covers), that token as the runtime's own sampler draws it. The array is the
   * sequence's own, written again by its next evaluation (a row's logits are read before its next step): a new one
   * each token would be a vocabulary's worth of garbage a token. A sequence that fails holds nothing afterwards.
   */
  evaluate(tokens: number[], next: 'distribution' | NativeStep | undefined): Promise<StepOutput | undefined>;
  /**
   * Feeds tokens as `evaluate` does and gives, for each of them from the one at `from` on, what `evaluate` gives of the
   * token after it (each a draw of its own where `next` is a NativeStep, as if the tokens fed after `from` up to it had
   * been generated): speculated tokens are checked this way. A runtime whose pass gives only its last token's logits
   * (wllama 2) has none, and its model does not speculate.
   */
  evaluateEach?(tokens: number[], next: 'distribution' | NativeStep, from: number): Promise<StepOutput[]>;
  /**
   * What its cache can do with a prefix of what it holds (see CacheReuse): `cut` for a model of attention alone;
   * `checkpoints` where the runtime saves and restores states (node-llama-cpp's context checkpoints); `extend` where
   * it cannot (wllama 2) on a model whose memory cannot be cut back (recurrent, hybrid).
   */
  readonly reuse: CacheReuse;
  /**
   * Of the first `length` tokens it holds, how many it keeps without evaluating any of them again (restoring the
   * latest checkpoint at or before them): for a sequence of `checkpoints`, whose `truncate` to a position between
   * checkpoints evaluates the tokens after the checkpoint again.
   */
  restorable?(length: number): number;
  /** Saves its state as it stands, as a checkpoint `truncate` restores (a sequence of `checkpoints`). */
  checkpoint?(): Promise<void>;
  /** Keeps the first `length` tokens it holds. */
  truncate(length: number): Promise<void>;
  /** Forgets every token it holds. */
  clear(): Promise<void>;
}

/**
 * One of the context's sequences: its keys and values, what they hold, and whether a row (or a prefill) has it.
 * Between requests a sequence keeps what it holds, for the next prompt that starts the same way (prefix reuse).
 */
interface Slot {
  readonly sequence: LlamaSequence;
  /** The tokens its keys and values hold, in order, as far as they may be reused (none of another scope's). */
  tokens: number[];
  /** How many tokens the sequence holds, reusable or not. */
  held: number;
  /** Whose prompts may start from what it holds (ChatRequest.cacheScope). */
  scope: string | undefined;
  /**
   * What its cache can do with a prefix (see LlamaSequence.reuse): as declared, or `extend` once a cut failed (a
   * runtime whose memory refused to be cut back: a hybrid model's on a runtime that did not say so).
   */
  reuse: CacheReuse;
  busy: boolean;
  /** When it was last let go: the least recently used is reused first. */
  freedAt: number;
}

/**
 * A prompt starts from a sequence's tokens only when it shares at least this many: as transformers.js' prefix reuse
 * counts it, so that usage reports the same cached tokens on either engine (a template's opening is not worth one).
 */
const MIN_REUSED_TOKENS = 16;

/**
 * The lowest log-probability a token is given: llama.cpp gives its probabilities in single precision, and one too small
 * for that is 0. Finite, so that a grammar can still pick among such tokens (all tied), and the value the OpenAI API
 * reports for a token it deems impossible.
 */
export const LOWEST_LOGPROB = -9999;

/**
 * llama.cpp's sequences as the decode loop's batch (DecodeBatch): each row is one sequence of one context, and a step
 * evaluates every row's tokens at once (node-llama-cpp gathers the sequences' evaluations of one tick into one llama.cpp
 * batch; wllama has one sequence). A prompt starts from the free sequence that holds the longest prefix of it under the
 * same scope; a sequence a row leaves keeps its keys and values for the next.
 *
 * The logits the generation core works on are llama.cpp's next-token probabilities at temperature 1 with no truncation,
 * as log-probabilities: the same distribution, shifted by a constant, which no step of the core (penalties, bias, the
 * grammar mask, temperature, top_p, logprobs) tells apart from the logits. Runtimes hand them over slowly (node-llama-cpp
 * builds a sorted list one N-API call per token: 10 ms a step for a 32,000-token vocabulary, twice the forward pass of a
 * 0.5B model), so a row whose sampling plan the runtime's sampler covers (LlamaSequence.executes) is drawn by the
 * runtime and handed back as that token alone.
 */
export class SequenceBatch implements DecodeBatch<Slot> {
  readonly #slots: Slot[];
  #rows: Slot[] = [];
  readonly stats: BatchStats;
  readonly maxRows: number;
  /** Present where the runtime checks speculated tokens (see LlamaSequence.evaluateEach). */
  readonly retract?: (row: number, count: number) => Promise<void>;
  /** A distribution per position costs a sorted list of the vocabulary each: only native rows speculate. */
  readonly checksNativeOnly = true;
  readonly executes: NativeSampling | undefined;
  /** What its sequences' caches can do with a prefix (the least able of them). */
  readonly reuse: CacheReuse;
  /**
   * Neither runtime stops a pass once asked (node-llama-cpp's evaluations take no signal; wllama's decode checks one
   * only between its own batches, and leaves its count of cached tokens behind when it stops): a prompt is fed a piece
   * at a time, and an aborted one stops at the end of its piece, its sequence holding the pieces fed.
   */
  readonly prefillsInPieces = true;

  /** Whether a prompt starts from what a sequence holds at all (off: every prompt computed from nothing). */
  readonly #reuses: boolean;

  constructor(sequences: readonly LlamaSequence[], tokenBytes: number, reuses = true) {
    this.#reuses = reuses;
    this.#slots = sequences.map((sequence) => ({
      sequence,
      tokens: [],
      held: 0,
      scope: undefined,
      reuse: sequence.reuse,
      busy: false,
      freedAt: 0,
    }));
    this.maxRows = this.#slots.length;
    this.executes = sequences[0]?.executes;
    this.reuse = sequences.some((s) => s.reuse === 'extend')
      ? 'extend'
      : sequences.some((s) => s.reuse === 'checkpoints')
        ? 'checkpoints'
        : 'cut';
    this.stats = { forwardPasses: 0, tokenBytes };
    // Speculated tokens are taken back out by a cut: only where any position can be cut to.
    if (this.reuse === 'cut' && sequences.every((s) => s.evaluateEach)) {
      this.retract = (row, count) => {
        const slot = this.#rows[row]!;
        return this.#truncate(slot, slot.held - count);
      };
    }
  }

  async begin(prompt: readonly number[], scope: string | undefined): Promise<{ prefill: Slot; cached: number }> {
    const slot = this.#take(prompt, scope);
    try {
      // At least the prompt's last token is fed again: its logits are the first draw's.
      return {
        prefill: slot,
        cached: await this.#keep(slot, Math.min(commonPrefix(slot.tokens, prompt), prompt.length - 1)),
      };
    } catch (error) {
      // Not even a cleared sequence: the request fails, and the sequence is free for the next.
      this.#free(slot);
      throw error;
    }
  }

  async checkpoint(slot: Slot): Promise<void> {
    await slot.sequence.checkpoint?.();
  }

  /**
   * Keeps what a slot holds of the first `length` tokens as far as its cache can without evaluating any again, and
   * says how many that is: the tokens the prompt truly reuses. A cut that fails starts the sequence from nothing, and
   * its slot reuses only whole extensions from then on.
   */
  async #keep(slot: Slot, length: number): Promise<number> {
    const keep = this.#reusable(slot, length);
    try {
      await this.#truncate(slot, keep);
      return keep;
    } catch {
      if (keep > 0) slot.reuse = 'extend';
      await this.#wipe(slot);
      return 0;
    }
  }

  async fill(slot: Slot, from: number, to: number, input: PrefillInput, last: boolean, native?: NativeStep) {
    if (!('tokens' in input)) throw new Error('llama.cpp reads prompts of tokens only');
    if (slot.tokens.length !== from)
      throw new Error(`a prefill holding ${slot.tokens.length} tokens was fed from ${from}`);
    const tokens = [...input.tokens];
    this.stats.forwardPasses++;
    const logits = await this.#evaluate(slot, tokens, last, native);
    return last ? logits : undefined;
  }

  async join(slot: Slot, copies: number): Promise<void> {
    const prompt = slot.tokens;
    const others: Slot[] = [];
    try {
      for (let copy = 1; copy < copies; copy++) others.push(this.#take(prompt, slot.scope));
    } catch (error) {
      for (const other of others) this.#free(other);
      throw error;
    }
    if (others.length > 0) this.stats.forwardPasses++;
    // The other choices' sequences hold the prompt too: llama.cpp's sequences share no keys and values here, so each
    // evaluates what it lacks of the prompt (all of them in one batch).
    const filled = await Promise.allSettled(
      others.map(async (other) => {
        await this.#keep(other, commonPrefix(other.tokens, prompt));
        if (other.tokens.length < prompt.length) await this.#evaluate(other, prompt.slice(other.tokens.length), false);
      }),
    );
    const failure = filled.find((result) => result.status === 'rejected');
    if (failure) {
      // The request fails (its prefill is released by the loop); the other sequences it took are free again.
      for (const other of others) this.#free(other);
      throw failure.reason;
    }
    this.#rows.push(slot, ...others);
  }

  release(slot: Slot, kept?: { scope: string | undefined }): void {
    // Kept or not, a sequence holds what its tokens say: even a failed or aborted prefill's may serve the next prompt.
    if (kept) slot.scope = kept.scope;
    this.#free(slot);
  }

  async step(
    tokens: readonly (readonly number[])[],
    native?: readonly (NativeStep | undefined)[],
    from?: readonly number[],
  ): Promise<(row: number, at?: number) => StepOutput> {
    const rows = this.#rows;
    if (tokens.length !== rows.length) throw new Error(`${tokens.length} rows fed to a batch of ${rows.length}`);
    // One pass: node-llama-cpp gathers the evaluations of one tick into one llama.cpp batch.
    this.stats.forwardPasses++;
    const logits = await Promise.all(
      rows.map((slot, row) => {
        const fed = [...tokens[row]!];
        const first = from?.[row] ?? fed.length - 1;
        return first < fed.length - 1
          ? this.#evaluateEach(slot, fed, first, native?.[row])
          : this.#evaluate(slot, fed, true, native?.[row]).then((last) => [last]);
      }),
    );
    return (row, at) => {
      const each = logits[row]!;
      const fed = tokens[row]!.length;
      return each[each.length - (fed - (at ?? fed - 1))]!;
    };
  }

  async remove(
    leaving: readonly { row: number; tokens: readonly number[]; scope: string | undefined }[],
    kept: readonly number[],
  ): Promise<void> {
    for (const { row, scope } of leaving) {
      const slot = this.#rows[row]!;
      slot.scope = scope;
      this.#free(slot);
    }
    this.#rows = kept.map((row) => this.#rows[row]!);
  }

  clear(): void {
    // A pass failed: what the rows' sequences hold is not known, so none of it is reused.
    for (const slot of this.#rows) {
      this.#forget(slot);
      this.#free(slot);
    }
    this.#rows = [];
  }

  /** llama.cpp gives each sequence of a batch its own positions and attention: rows of any lengths mix. */
  async mixesLengths(): Promise<boolean> {
    return true;
  }

  /** How many of a slot's first `length` tokens a prompt would truly reuse (see #keep): none below the threshold. */
  #reusable(slot: Slot, length: number): number {
    let keep = length;
    if (!this.#reuses) keep = 0;
    else if (slot.reuse === 'extend' && length < slot.held) keep = 0;
    else if (slot.reuse === 'checkpoints' && length < slot.held) keep = slot.sequence.restorable?.(length) ?? 0;
    return keep < MIN_REUSED_TOKENS ? 0 : keep;
  }

  /** A free sequence for a prompt: the one holding the longest prefix of it under its scope, else the longest unused. */
  #take(prompt: readonly number[], scope: string | undefined): Slot {
    let best: Slot | undefined;
    let bestRank: readonly number[] = [];
    for (const slot of this.#slots) {
      if (slot.busy) continue;
      // First what it would truly reuse (a state that cannot be cut, only as far as a checkpoint; below the threshold
      // a sequence is as good as empty); then, among those that reuse, the one sharing the most (the same history, so
      // the same keys and values to the last bit); then the least recently used, so that the checkpoints of the one
      // used last (a prompt asked again) outlive a prompt that reuses less.
      const common = slot.scope === scope ? commonPrefix(slot.tokens, prompt) : 0;
      const shared = this.#reusable(slot, Math.min(common, prompt.length - 1));
      const rank = [shared, shared > 0 ? common : 0, -slot.freedAt];
      if (!best || outranks(rank, bestRank)) {
        best = slot;
        bestRank = rank;
      }
    }
    if (!best) {
      throw new EngineError(
        'invalid_request',
        `This model decodes at most ${this.#slots.length} choices at once: ask for fewer (n).`,
        { param: 'n' },
      );
    }
    if (best.scope !== scope) {
      best.tokens.length = 0; // another scope's: never read, wiped below
      best.scope = scope;
    }
    best.busy = true;
    return best;
  }

  #free(slot: Slot): void {
    slot.busy = false;
    slot.freedAt = performance.now();
  }

  /** Keeps the first `length` tokens of what a sequence holds. */
  async #truncate(slot: Slot, length: number): Promise<void> {
    if (slot.held > length) {
      try {
        await slot.sequence.truncate(length);
      } catch (error) {
        // What it holds after a failed cut is not known: nothing of it is reused.
        slot.tokens = [];
        throw error;
      }
    }
    slot.held = length;
    slot.tokens.length = Math.min(slot.tokens.length, length);
  }

  /** Empties a sequence (a cleared one holds nothing, whatever its memory), waiting for it. */
  async #wipe(slot: Slot): Promise<void> {
    slot.tokens = [];
    slot.held = 0;
    await slot.sequence.clear();
  }

  /** Forgets what a sequence holds and clears it in the background (after a failure, where nothing waits for it). */
  #forget(slot: Slot): void {
    slot.tokens = [];
    slot.held = 0;
    void slot.sequence.clear().catch(() => {});
  }

  /** Feeds tokens to a slot's sequence: what it gives of the token after each from the one at `from` on. */
  #evaluateEach(slot: Slot, tokens: number[], from: number, native?: NativeStep): Promise<StepOutput[]> {
    return this.#feed(slot, tokens, () => slot.sequence.evaluateEach!(tokens, native ?? 'distribution', from));
  }

  /** Feeds tokens to a slot's sequence; with `logits`, what the sequence gives of the token after the last. */
  async #evaluate(slot: Slot, tokens: number[], logits: true, native?: NativeStep): Promise<StepOutput>;
  async #evaluate(slot: Slot, tokens: number[], logits: boolean, native?: NativeStep): Promise<StepOutput | undefined>;
  async #evaluate(slot: Slot, tokens: number[], logits: boolean, native?: NativeStep): Promise<StepOutput | undefined> {
    const output = await this.#feed(slot, tokens, () =>
      slot.sequence.evaluate(tokens, logits ? (native ?? 'distribution') : undefined),
    );
    if (logits && !output) throw new Error('llama.cpp gave nothing for the next token');
    return output;
  }

  /** Runs an evaluation of `tokens` on a slot's sequence and counts them held; a failed one leaves it empty. */
  async #feed<T>(slot: Slot, tokens: readonly number[], evaluation: () => Promise<T>): Promise<T> {
    let output: T;
    try {
      output = await evaluation();
    } catch (error) {
      this.#forget(slot);
      throw error;
    }
    slot.tokens.push(...tokens);
    slot.held += tokens.length;
    return output;
  }
}

/**
 * A distribution as llama.cpp's runtimes list it (token and probability) as the logits the generation core reads,
 * written into `out` (a vocabulary's length).
 */
export function logProbabilities(
  out: Float32Array,
  entries: Iterable<readonly [token: number, probability: number]>,
): Float32Array {
  out.fill(LOWEST_LOGPROB);
  for (const [token, p] of entries) if (p > 0) out[token] = Math.log(p);
  return out;
}

/** Whether `a` comes before `b` in order of their first element that differs, higher first. */
function outranks(a: readonly number[], b: readonly number[]): boolean {
  const at = a.findIndex((value, i) => value !== b[i]);
  return at >= 0 && a[at]! > b[at]!;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const end = Math.min(a.length, b.length);
  let i = 0;
  while (i < end && a[i] === b[i]) i++;
  return i;
}
