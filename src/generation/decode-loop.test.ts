import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { DecodeLoop, type DecodeBatch, type DecodeJob, type PrefillInput } from './decode-loop.ts';
import { DraftModel } from './draft-model.ts';
import type { StepOutput } from './sampling-plan.ts';

/**
 * The decode loop's scheduling on a fake batch (no model): a row's logits favour the token after the last one it fed,
 * so a row of prompt `[p]` generates `p + 1, p + 2, …`. What the loop does on a real model (the tokens of every row
 * equal to those alone, prefix reuse, the padding check) is tested on the bundled models in test/decode-loop.test.ts.
 */
const VOCAB = 64;

interface FakePrefill {
  tokens: number[];
}

class FakeBatch implements DecodeBatch<FakePrefill> {
  rows: number[][] = [];
  readonly stats = { forwardPasses: 0, tokenBytes: 0 };
  mixesAsked = 0;
  failStep = false;
  readonly kept: number[][] = [];
  readonly maxRows: number | undefined;
  readonly #mixes: boolean;

  constructor(options: { maxRows?: number; mixes?: boolean } = {}) {
    this.maxRows = options.maxRows;
    this.#mixes = options.mixes ?? true;
  }

  begin(prompt: readonly number[]) {
    // The longest kept prefix, leaving at least the prompt's last token.
    let cached = 0;
    for (const kept of this.kept) {
      let n = 0;
      while (n < kept.length && n < prompt.length - 1 && kept[n] === prompt[n]) n++;
      cached = Math.max(cached, n);
    }
    return Promise.resolve({ prefill: { tokens: prompt.slice(0, cached) }, cached });
  }

  fill(prefill: FakePrefill, _from: number, to: number, input: PrefillInput, last: boolean) {
    this.stats.forwardPasses += 1;
    if ('embeds' in input) prefill.tokens.push(...(input.embeds as number[]));
    else prefill.tokens.push(...input.tokens);
    this.stats.tokenBytes ||= 100;
    expect(prefill.tokens.length).toBe(to);
    return Promise.resolve(last ? logitsAfter(prefill.tokens.at(-1)!) : undefined);
  }

  join(prefill: FakePrefill, copies: number) {
    if (this.maxRows !== undefined && this.rows.length + copies > this.maxRows) throw new Error('no room');
    for (let c = 0; c < copies; c++) this.rows.push([...prefill.tokens]);
    return Promise.resolve();
  }

  release(_prefill: FakePrefill, kept?: { tokens: readonly number[] }) {
    if (kept) this.kept.push([...kept.tokens]);
  }

  step(tokens: readonly (readonly number[])[]) {
    this.stats.forwardPasses += 1;
    expect(tokens.length).toBe(this.rows.length);
    if (this.failStep) return Promise.reject(new Error('the pass failed'));
    tokens.forEach((fed, r) => this.rows[r]!.push(...fed));
    return Promise.resolve((row: number) => logitsAfter(this.rows[row]!.at(-1)!));
  }

  remove(leaving: readonly { row: number; tokens: readonly number[] }[], kept: readonly number[]) {
    for (const { row, tokens } of leaving) {
      // A row holds every token it fed (the fake holds what a job embedded in place of its prompt's ids).
      expect(this.rows[row]!.slice(-1)).toEqual(tokens.slice(-1));
      expect(this.rows[row]!.length).toBe(tokens.length);
      this.kept.push([...tokens]);
    }
    this.rows = kept.map((r) => this.rows[r]!);
    return Promise.resolve();
  }

  clear() {
    this.rows = [];
  }

  mixesLengths() {
    this.mixesAsked += 1;
    return Promise.resolve(this.#mixes);
  }
}

/** The fake with only what every batch must do: each capability (BatchCapabilities) left to its default. */
function requiredOnly(batch: FakeBatch): DecodeBatch<FakePrefill> {
  return {
    stats: batch.stats,
    begin: (prompt) => batch.begin(prompt),
    fill: (prefill, from, to, input, last) => batch.fill(prefill, from, to, input, last),
    join: (prefill, copies) => batch.join(prefill, copies),
    release: (prefill, kept) => batch.release(prefill, kept),
    step: (tokens) => batch.step(tokens),
    remove: (leaving, kept) => batch.remove(leaving, kept),
    clear: () => batch.clear(),
  };
}

/** The fake's logits' one likely token. */
const tokenOf = (output: StepOutput) =>
  output instanceof Float32Array ? output.indexOf(Math.max(...output)) : output.token;

function logitsAfter(token: number): Float32Array {
  const logits = new Float32Array(VOCAB);
  logits[(token + 1) % VOCAB] = 1;
  return logits;
}

/** A job generating `length` tokens per row by argmax; `fail` throws at that many tokens of row 0. */
function job(prompt: number[], length: number, options: Partial<DecodeJob> & { fail?: number } = {}) {
  const out: number[][] = [];
  const rows = options.rows ?? 1;
  for (let r = 0; r < rows; r++) out.push([]);
  const decodeJob: DecodeJob = {
    prompt,
    rows,
    maxNewTokens: length,
    next(row, logits) {
      if (row === 0 && out[0]!.length === options.fail) throw new EngineError('invalid_output', 'stuck');
      const token = tokenOf(logits);
      out[row]!.push(token);
      return [token];
    },
    done: (row) => out[row]!.length >= length,
    ...options,
  };
  return { decodeJob, out };
}

describe('DecodeLoop', () => {
  it('batches concurrent jobs into shared passes, each getting the tokens it gets alone', async () => {
    const batch = new FakeBatch();
    const loop = new DecodeLoop(batch);
    const a = job([1, 2, 3], 5);
    const b = job([10, 11], 4, { rows: 2 });
    await Promise.all([loop.run(a.decodeJob), loop.run(b.decodeJob)]);
    expect(a.out).toEqual([[4, 5, 6, 7, 8]]);
    expect(b.out).toEqual([
      [12, 13, 14, 15],
      [12, 13, 14, 15],
    ]);
    expect(loop.stats.rowSteps).toBe(5 + 4 * 2);
    expect(loop.stats.forwardPasses).toBe(batch.stats.forwardPasses);
    expect(loop.stats.forwardPasses).toBeLessThan(loop.stats.rowSteps);
    expect(batch.mixesAsked).toBe(1);
    expect(batch.rows).toEqual([]);
  });

  it('reports the prompt tokens a job started from', async () => {
    const batch = new FakeBatch();
    const loop = new DecodeLoop(batch);
    await loop.run(job([1, 2, 3], 3).decodeJob);
    // The finished row held its prompt and the tokens it fed (not its last draw).
    expect(batch.kept).toEqual([[1, 2, 3, 4, 5]]);
    expect(await loop.run(job([1, 2, 3, 4, 5, 6], 1).decodeJob)).toEqual({ cachedPromptTokens: 5 });
  });

  it('on a one-row engine, runs jobs one after another and never asks about mixed lengths', async () => {
    const batch = new FakeBatch({ maxRows: 1 });
    const loop = new DecodeLoop(batch, { maxRows: 8 });
    const jobs = [job([1], 3), job([20], 3), job([40], 3)];
    await Promise.all(jobs.map((j) => loop.run(j.decodeJob)));
    expect(jobs.map((j) => j.out)).toEqual([[[2, 3, 4]], [[21, 22, 23]], [[41, 42, 43]]]);
    expect(batch.mixesAsked).toBe(0);
    expect(loop.stats.forwardPasses).toBe(loop.stats.rowSteps);
  });

  it('runs a batch that declares no capability with their defaults: one job at a time, whole prefills, no speculation', async () => {
    const fake = new FakeBatch();
    const loop = new DecodeLoop(requiredOnly(fake));
    // Longer than a prefill piece: fed in one pass, since the batch did not ask for pieces.
    const long = Array.from({ length: 300 }, (_, i) => i % VOCAB);
    const a = job(long, 3);
    let proposals = 0;
    a.decodeJob.propose = (_row, context) => (proposals++, [context.at(-1)! + 1]);
    const b = job([20], 3);
    await Promise.all([loop.run(a.decodeJob), loop.run(b.decodeJob)]);
    expect(a.out).toEqual([[44, 45, 46]]);
    expect(b.out).toEqual([[21, 22, 23]]);
    // No pass was shared by the two jobs nor spent on a second prefill piece; nothing was proposed to a batch that
    // cannot take tokens back, and mixed lengths were never asked of one that cannot answer.
    expect(loop.stats.forwardPasses).toBe(loop.stats.rowSteps);
    expect(proposals).toBe(0);
    expect(fake.mixesAsked).toBe(0);
    expect(fake.kept).toEqual([
      [...long, 44, 45],
      [20, 21, 22],
    ]);
  });

  it('fails only the job whose row failed', async () => {
    const loop = new DecodeLoop(new FakeBatch());
    const a = job([1], 6, { fail: 2 });
    const b = job([30], 6);
    const [ra, rb] = await Promise.allSettled([loop.run(a.decodeJob), loop.run(b.decodeJob)]);
    expect(ra.status === 'rejected' && (ra.reason as EngineError).kind).toBe('invalid_output');
    expect(rb.status).toBe('fulfilled');
    expect(b.out).toEqual([[31, 32, 33, 34, 35, 36]]);
  });

  it('fails every row of a pass that failed, and goes on with the next job', async () => {
    const batch = new FakeBatch();
    const loop = new DecodeLoop(batch);
    batch.failStep = true;
    const [ra, rb] = await Promise.allSettled([loop.run(job([1], 4).decodeJob), loop.run(job([9], 4).decodeJob)]);
    expect(ra.status).toBe('rejected');
    expect(rb.status).toBe('rejected');
    batch.failStep = false;
    const c = job([5], 2);
    await loop.run(c.decodeJob);
    expect(c.out).toEqual([[6, 7]]);
  });

  it('answers a job aborted while it waits at once, and one aborted while running once its rows leave', async () => {
    const loop = new DecodeLoop(new FakeBatch(), { maxRows: 1 });
    const running = new AbortController();
    const waiting = new AbortController();
    const drawn: number[] = [];
    const a = job([1], 50, {
      signal: running.signal,
      next(_row, logits) {
        if (drawn.length === 3) running.abort();
        const token = tokenOf(logits);
        drawn.push(token);
        return [token];
      },
    });
    const b = job([2], 3, { signal: waiting.signal });
    const pa = loop.run(a.decodeJob);
    const pb = loop.run(b.decodeJob);
    waiting.abort();
    const [ra, rb] = await Promise.allSettled([pa, pb]);
    expect(rb).toMatchObject({ status: 'rejected', reason: { kind: 'aborted' } });
    expect(b.out).toEqual([[]]);
    expect(ra).toMatchObject({ status: 'rejected', reason: { kind: 'aborted' } });
    expect(drawn).toEqual([2, 3, 4, 5]);
  });

  it('holds a job back while the key/value budget is spent', async () => {
    const batch = new FakeBatch();
    // 100 bytes a token: a row of 1 + 5 tokens costs 600.
    const loop = new DecodeLoop(batch, { kvBytes: 1000 });
    const first = job([1], 5);
    const second = job([20], 5);
    const running = loop.run(first.decodeJob);
    await loop.run(second.decodeJob);
    await running;
    expect(batch.mixesAsked).toBe(0);
    expect(loop.stats.forwardPasses).toBe(loop.stats.rowSteps);
  });

  it('passes what a job embeds to the batch', async () => {
    const loop = new DecodeLoop(new FakeBatch());
    const a = job([-1, -1, 7], 2, { embed: (from, to) => Promise.resolve([50, 51, 52].slice(from, to)) });
    await loop.run(a.decodeJob);
    expect(a.out).toEqual([[53, 54]]);
  });
});

/** Where the fake below fails: each step a prefill goes through on its way into the batch. */
type AdmissionStep = 'begin' | 'first piece' | 'last piece' | 'checkpoint' | 'join' | 'step' | 'remove';

/**
 * A batch that keeps checkpoints (CacheReuse `checkpoints`), counts what it holds (prefills begun and not yet joined or
 * released) and fails once at a chosen admission step.
 */
class CheckpointingBatch extends FakeBatch {
  readonly reuse = 'checkpoints' as const;
  readonly prefillsInPieces = true;
  readonly checkpoints: { tokens: number[]; scope: string | undefined }[] = [];
  /** Prefills begun and not yet joined or released: what a failure must not leave behind. */
  held = 0;
  failAt: AdmissionStep | undefined;

  #fails(at: AdmissionStep): boolean {
    if (this.failAt !== at) return false;
    this.failAt = undefined;
    return true;
  }

  override async begin(prompt: readonly number[]) {
    if (this.#fails('begin')) throw new Error('the cache could not be cut');
    const begun = await super.begin(prompt);
    this.held += 1;
    return begun;
  }

  override fill(prefill: FakePrefill, from: number, to: number, input: PrefillInput, last: boolean) {
    if (this.#fails(last ? 'last piece' : 'first piece')) return Promise.reject(new Error('the prefill failed'));
    return super.fill(prefill, from, to, input, last);
  }

  checkpoint(prefill: FakePrefill, tokens: readonly number[], scope: string | undefined) {
    expect(prefill.tokens).toEqual(tokens);
    if (this.#fails('checkpoint')) return Promise.reject(new Error('no memory for a checkpoint'));
    this.checkpoints.push({ tokens: [...tokens], scope });
    return Promise.resolve();
  }

  override async join(prefill: FakePrefill, copies: number) {
    if (this.#fails('join')) throw new Error('no sequence left');
    await super.join(prefill, copies);
    this.held -= 1;
  }

  override release(prefill: FakePrefill, kept?: { tokens: readonly number[] }) {
    super.release(prefill, kept);
    this.held -= 1;
  }

  override step(tokens: readonly (readonly number[])[]) {
    if (this.#fails('step')) {
      this.stats.forwardPasses += 1;
      return Promise.reject(new Error('the pass failed'));
    }
    return super.step(tokens);
  }

  override remove(leaving: readonly { row: number; tokens: readonly number[] }[], kept: readonly number[]) {
    if (this.#fails('remove')) return Promise.reject(new Error('the rows could not be kept'));
    return super.remove(leaving, kept);
  }
}

describe('DecodeLoop checkpoints', () => {
  it('checkpoints a prompt at its end but one token and where the job says its newest turn starts', async () => {
    const batch = new CheckpointingBatch();
    const loop = new DecodeLoop(batch);
    const prompt = Array.from({ length: 600 }, (_, i) => i % 60);
    const { decodeJob, out } = job(prompt, 3, { scope: 'key_a', checkpoints: () => [300, 0, 900] });
    expect(await loop.run(decodeJob)).toEqual({ cachedPromptTokens: 0 });
    // Pieces of 256 end at each checkpoint on the way: 0-256, 256-300, 300-556, 556-599, 599-600.
    expect(batch.checkpoints.map((c) => c.tokens.length)).toEqual([300, 599]);
    expect(batch.checkpoints.every((c) => c.scope === 'key_a')).toBe(true);
    expect(batch.checkpoints[1]!.tokens).toEqual(prompt.slice(0, 599));
    expect(out).toEqual([[60, 61, 62]]); // prompt[599] is 59, and the fake writes the token after the last
  });

  it('checkpoints nothing on a batch that cuts, and nothing before what it reused', async () => {
    const cuts = new FakeBatch();
    let asked = 0;
    const loop = new DecodeLoop(Object.assign(cuts, { checkpoint: () => Promise.reject(new Error('never called')) }));
    await loop.run(job([1, 2, 3, 4], 2, { checkpoints: () => (asked++, [2]) }).decodeJob);
    expect(asked).toBe(0);

    const batch = new CheckpointingBatch();
    const checkpointing = new DecodeLoop(batch);
    await checkpointing.run(job([5, 6, 7, 8], 2).decodeJob);
    expect(batch.checkpoints.map((c) => c.tokens)).toEqual([[5, 6, 7]]);
    // Kept [5..9]: the next prompt extends it, reusing 6 tokens: only its end is checkpointed, not the turn at 2.
    expect(await checkpointing.run(job([5, 6, 7, 8, 9, 10, 11], 1, { checkpoints: () => [2] }).decodeJob)).toEqual({
      cachedPromptTokens: 5,
    });
    expect(batch.checkpoints.map((c) => c.tokens.length)).toEqual([3, 6]);
  });

  it.each<AdmissionStep>(['begin', 'first piece', 'last piece', 'join', 'step', 'remove'])(
    'a failure at %s fails that request alone, frees what it took, and the next twenty are answered',
    async (failAt) => {
      const batch = new CheckpointingBatch({ maxRows: 2 });
      const loop = new DecodeLoop(batch);
      const prompt = Array.from({ length: 300 }, (_, i) => (i * 7) % 50);
      batch.failAt = failAt;
      await expect(loop.run(job(prompt, 4, { rows: 2 }).decodeJob)).rejects.toThrow();
      expect(batch.failAt).toBeUndefined(); // it did fail there
      expect(batch.held).toBe(0);
      expect(batch.rows).toEqual([]);
      const jobs = Array.from({ length: 20 }, (_, i) =>
        job(i % 3 === 0 ? prompt : [i, i + 1, i + 2], 3, { rows: (i % 2) + 1, scope: `key_${i % 4}` }),
      );
      await Promise.all(jobs.map((j) => loop.run(j.decodeJob)));
      for (const [i, j] of jobs.entries()) {
        const start = i % 3 === 0 ? prompt.at(-1)! : i + 2;
        for (const row of j.out) expect(row).toEqual([start + 1, start + 2, start + 3]);
      }
      expect(batch.held).toBe(0);
      expect(batch.rows).toEqual([]);
    },
  );

  it('a checkpoint that fails loses that checkpoint only: the request is answered', async () => {
    const batch = new CheckpointingBatch();
    const loop = new DecodeLoop(batch);
    batch.failAt = 'checkpoint';
    const { decodeJob, out } = job([1, 2, 3, 4, 5, 6], 2, { checkpoints: () => [3] });
    await loop.run(decodeJob);
    expect(out).toEqual([[7, 8]]);
    expect(batch.checkpoints.map((c) => c.tokens.length)).toEqual([5]);
    expect(batch.held).toBe(0);
  });

  it('a job whose checkpoint positions fail is prefilled without them', async () => {
    const batch = new CheckpointingBatch();
    const loop = new DecodeLoop(batch);
    const { decodeJob, out } = job([1, 2, 3, 4], 1, {
      checkpoints: () => Promise.reject(new Error('the template failed')),
    });
    await loop.run(decodeJob);
    expect(out).toEqual([[5]]);
    expect(batch.checkpoints.map((c) => c.tokens)).toEqual([[1, 2, 3]]);
  });
});

describe('DraftModel', () => {
  /** A job whose rows take the draft's proposals where they decode alone, as generateTokens does. */
  const drafted = (prompt: number[], length: number, draft: DraftModel<FakePrefill>, rows = 1) => {
    const made = job(prompt, length, { rows });
    const owners = Array.from({ length: rows }, () => ({}));
    made.decodeJob.propose = (row, context, limit, alone) =>
      alone ? draft.propose(owners[row]!, context, Math.min(4, limit), undefined) : [];
    return { ...made, release: () => Promise.all(owners.map((owner) => draft.release(owner))) };
  };

  it('proposes what the draft model writes greedily, following the row: the same tokens in fewer passes', async () => {
    const plain = new FakeBatch();
    const alone = job([1], 30);
    await new DecodeLoop(plain).run(alone.decodeJob);

    // The draft is wrong after every multiple of 5 (it writes t + 7 there), right elsewhere.
    const draftBatch = new DraftBatch((t) => (t % 5 === 0 ? t + 7 : t + 1));
    const draft = new DraftModel(draftBatch, 1000);
    const batch = new SpeculatingBatch();
    const loop = new DecodeLoop(batch);
    const run = drafted([1], 30, draft);
    await loop.run(run.decodeJob);
    expect(run.out).toEqual(alone.out);
    expect(loop.stats.forwardPasses).toBeLessThan(plain.stats.forwardPasses);
    expect(loop.stats.acceptedTokens).toBeGreaterThan(loop.stats.proposedTokens / 2);
    expect(loop.stats.acceptedTokens).toBeLessThan(loop.stats.proposedTokens);
    // The draft's row held the prompt and the target's tokens (its rejected ones taken back), and nothing more.
    const target = [1, ...alone.out[0]!];
    const held = draftBatch.rows[0]!;
    expect(target.slice(0, held.length)).toEqual(held);
    // Released: its keys and values kept for the draft's prefix reuse, the batch empty.
    await run.release();
    expect(draftBatch.rows).toEqual([]);
    expect(draftBatch.kept.at(-1)).toEqual(held);
    // The next request of that conversation starts from them.
    const next = drafted(target, 5, draft);
    await new DecodeLoop(new SpeculatingBatch()).run(next.decodeJob);
    expect(draftBatch.cachedStarts.at(-1)).toBe(held.length);
  });

  it('drafts only for a row alone, and a draft that fails leaves decoding as without it', async () => {
    const draftBatch = new DraftBatch((t) => t + 1);
    const draft = new DraftModel(draftBatch, 1000);
    const loop = new DecodeLoop(new SpeculatingBatch());
    const two = drafted([1], 6, draft, 2);
    await loop.run(two.decodeJob);
    expect(two.out).toEqual([
      [2, 3, 4, 5, 6, 7],
      [2, 3, 4, 5, 6, 7],
    ]);
    expect(draftBatch.stats.forwardPasses).toBe(0);

    draftBatch.failStep = true;
    const failing = drafted([1], 12, draft);
    await loop.run(failing.decodeJob);
    expect(failing.out).toEqual([[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]]);
    const passes = draftBatch.stats.forwardPasses;
    await loop.run(drafted([1], 12, draft).decodeJob);
    // Broken: never asked again.
    expect(draftBatch.stats.forwardPasses).toBe(passes);
  });

  it('stops at its own window, and never drafts after positions that are not tokens', async () => {
    const draftBatch = new DraftBatch((t) => t + 1);
    const draft = new DraftModel(draftBatch, 6);
    expect(await draft.propose({}, [1, 2, 3, 4], 4, undefined)).toEqual([5, 6]);
    expect(await draft.propose({}, [1, -1, 3], 2, undefined)).toEqual([]);
  });
});

/** A draft model's fake batch: after token t it writes `next(t)`. */
class DraftBatch extends FakeBatch {
  readonly #next: (token: number) => number;
  readonly cachedStarts: number[] = [];

  constructor(next: (token: number) => number) {
    super();
    this.#next = next;
  }

  override begin(prompt: readonly number[]) {
    return super.begin(prompt).then((started) => (this.cachedStarts.push(started.cached), started));
  }

  override fill(prefill: FakePrefill, from: number, to: number, input: PrefillInput, last: boolean) {
    return super.fill(prefill, from, to, input, last).then((logits) => logits && this.#logits(prefill.tokens.at(-1)!));
  }

  override step(tokens: readonly (readonly number[])[]) {
    return super.step(tokens).then(() => (row: number) => this.#logits(this.rows[row]!.at(-1)!));
  }

  retract(row: number, count: number) {
    this.rows[row]!.splice(-count, count);
    return Promise.resolve();
  }

  #logits(token: number): Float32Array {
    const logits = new Float32Array(VOCAB);
    logits[this.#next(token) % VOCAB] = 1;
    return logits;
  }
}

/** The fake batch with speculation: logits after any position a row fed, and speculated tokens taken back. */
class SpeculatingBatch extends FakeBatch {
  readonly retracted: number[] = [];
  #fed: number[] = [];

  override step(tokens: readonly (readonly number[])[]) {
    this.#fed = tokens.map((t) => t.length);
    return super.step(tokens).then(() => (row: number, at = this.#fed[row]! - 1) => {
      const held = this.rows[row]!;
      return logitsAfter(held[held.length - this.#fed[row]! + at]!);
    });
  }

  retract(row: number, count: number) {
    this.retracted.push(count);
    this.rows[row]!.splice(-count, count);
    return Promise.resolve();
  }
}

describe('DecodeLoop speculation', () => {
  /** A job whose proposals are `guess(context)`: each checked by the draw, as generateTokens checks them. */
  const speculating = (prompt: number[], length: number, guess: (context: readonly number[]) => number[]) => {
    const made = job(prompt, length);
    made.decodeJob.propose = (_row, context, limit) => guess(context).slice(0, limit);
    return made;
  };

  it('checks proposals in one pass: the tokens are those without speculation, in fewer passes', async () => {
    const plain = new FakeBatch();
    const alone = job([1], 12);
    await new DecodeLoop(plain).run(alone.decodeJob);

    const batch = new SpeculatingBatch();
    const loop = new DecodeLoop(batch);
    // Right three tokens ahead, except that every third proposal is wrong from its second token on.
    let calls = 0;
    const guessed = speculating([1], 12, (context) => {
      const last = context.at(-1)!;
      calls += 1;
      return calls % 3 === 0 ? [last + 1, 60, 61] : [last + 1, last + 2, last + 3];
    });
    await loop.run(guessed.decodeJob);
    expect(guessed.out).toEqual(alone.out);
    expect(loop.stats.forwardPasses).toBeLessThan(plain.stats.forwardPasses);
    expect(loop.stats.acceptedTokens).toBeGreaterThan(0);
    expect(loop.stats.proposedTokens).toBeGreaterThan(loop.stats.acceptedTokens);
    // Each wrong proposal was taken back out of the row: its two wrong tokens.
    expect(batch.retracted.every((count) => count >= 1)).toBe(true);
    expect(batch.rows).toEqual([]);
  });

  it('never proposes past the row limit, and speculates on an engine that can take tokens back only', async () => {
    const batch = new SpeculatingBatch();
    const loop = new DecodeLoop(batch);
    const limits: number[] = [];
    const guessed = speculating([1], 5, (context) => [context.at(-1)! + 1, context.at(-1)! + 2, 99, 99, 99]);
    const propose = guessed.decodeJob.propose!;
    guessed.decodeJob.propose = (row, context, limit, alone) => (
      limits.push(limit),
      propose(row, context, limit, alone)
    );
    await loop.run(guessed.decodeJob);
    expect(guessed.out).toEqual([[2, 3, 4, 5, 6]]);
    expect(Math.max(...limits)).toBeLessThanOrEqual(3);

    const plain = new FakeBatch();
    const never = speculating([1], 5, () => {
      throw new Error('asked to propose');
    });
    await new DecodeLoop(plain).run(never.decodeJob);
    expect(never.out).toEqual([[2, 3, 4, 5, 6]]);
  });
});
