import { describe, expect, it } from 'vitest';
import { DecodeLoop, type CacheReuse, type DecodeJob } from '../../generation/decode-loop.ts';
import type { NativeStep, StepOutput } from '../../generation/sampling-plan.ts';
import { SequenceBatch, type LlamaSequence } from './sequence-batch.ts';

/**
 * SequenceBatch's prefix reuse and failures on fake sequences that behave like llama.cpp's memories: attention alone
 * (cut anywhere), a recurrent or hybrid state on a runtime without checkpoints (wllama 2: a cut fails, as
 * `llama_memory_seq_rm` does on it), and one with checkpoints (node-llama-cpp: a cut restores the latest checkpoint at
 * or before it and evaluates the rest again). The fake's "model" makes the token after `t` be `t + 1`. The real
 * runtimes run the same cases on the hybrid fixture in test/hybrid-reuse.test.ts.
 */
const VOCAB = 512;

class FakeSequence implements LlamaSequence {
  readonly executes = { greedy: false, logitBias: false, penalties: false, grammar: false, logprobs: false } as never;
  held: number[] = [];
  checkpointsAt: number[] = [];
  /** Tokens evaluated, in all: what a reuse saved shows here. */
  evaluated = 0;
  failTruncate = false;
  failClear = false;

  constructor(readonly reuse: CacheReuse) {}

  evaluate(tokens: number[], next: 'distribution' | NativeStep | undefined): Promise<StepOutput | undefined> {
    this.held.push(...tokens);
    this.evaluated += tokens.length;
    if (next === undefined) return Promise.resolve(undefined);
    const logits = new Float32Array(VOCAB).fill(-10);
    logits[(this.held.at(-1)! + 1) % VOCAB] = 0;
    return Promise.resolve(logits);
  }

  restorable(length: number): number {
    if (length >= this.held.length) return length;
    return Math.max(0, ...this.checkpointsAt.filter((at) => at <= length));
  }

  checkpoint(): Promise<void> {
    this.checkpointsAt.push(this.held.length);
    return Promise.resolve();
  }

  truncate(length: number): Promise<void> {
    if (this.failTruncate || (this.reuse === 'extend' && length > 0)) {
      return Promise.reject(new Error('llama_memory_seq_rm failed: the state cannot be cut'));
    }
    if (this.reuse === 'checkpoints') {
      // node-llama-cpp: the latest checkpoint at or before the cut, then the rest evaluated again.
      const at = this.restorable(length);
      this.evaluated += length - at;
      this.checkpointsAt = this.checkpointsAt.filter((c) => c <= length);
    }
    this.held.length = length;
    return Promise.resolve();
  }

  clear(): Promise<void> {
    if (this.failClear) return Promise.reject(new Error('the worker is gone'));
    this.held = [];
    this.checkpointsAt = [];
    return Promise.resolve();
  }
}

/** A greedy job of `length` tokens per row. */
function job(prompt: number[], length: number, options: Partial<DecodeJob> = {}) {
  const out: number[][] = Array.from({ length: options.rows ?? 1 }, () => []);
  const decodeJob: DecodeJob = {
    prompt,
    rows: 1,
    maxNewTokens: length,
    next(row, output) {
      const token = output instanceof Float32Array ? output.indexOf(Math.max(...output)) : output.token;
      out[row]!.push(token);
      return [token];
    },
    done: (row) => out[row]!.length >= length,
    ...options,
  };
  return { decodeJob, out };
}

const range = (from: number, length: number) => Array.from({ length }, (_, i) => from + i);

function engine(reuse: CacheReuse, sequences = 1) {
  const fakes = Array.from({ length: sequences }, () => new FakeSequence(reuse));
  const batch = new SequenceBatch(fakes, 64);
  return { fakes, batch, loop: new DecodeLoop(batch as never, { maxRows: batch.maxRows }) };
}

describe('SequenceBatch prefix reuse by what a cache can do', () => {
  it('declares the least able of its sequences, and speculates only where it can cut', () => {
    expect(engine('cut').batch.reuse).toBe('cut');
    expect(engine('checkpoints').batch.reuse).toBe('checkpoints');
    expect(engine('extend').batch.reuse).toBe('extend');
    const evaluating = (reuse: CacheReuse) =>
      new SequenceBatch([Object.assign(new FakeSequence(reuse), { evaluateEach: () => Promise.resolve([]) })], 64);
    expect(evaluating('cut').retract).toBeDefined();
    expect(evaluating('checkpoints').retract).toBeUndefined();
  });

  it('extend: reuses a whole extension, starts an edit from nothing, and never tries to cut', async () => {
    const { fakes, loop } = engine('extend');
    const turn1 = range(1, 40);
    expect(await loop.run(job(turn1, 5).decodeJob)).toEqual({ cachedPromptTokens: 0 });
    // It holds turn 1 and the 4 tokens fed back (41..44); turn 2 extends that.
    const turn2 = [...range(1, 44), 45, 100, 101];
    expect(await loop.run(job(turn2, 3).decodeJob)).toEqual({ cachedPromptTokens: 44 });
    // An edit of an earlier message: nothing reused, and no cut tried (it would fail).
    const edited = [...range(1, 20), 300, 301, 302];
    const { decodeJob, out } = job(edited, 2);
    expect(await loop.run(decodeJob)).toEqual({ cachedPromptTokens: 0 });
    expect(out).toEqual([[303, 304]]);
    expect(fakes[0]!.held).toEqual([...edited, 303]);
  });

  it('checkpoints: reuses up to the latest checkpoint, counting none evaluated again', async () => {
    const { fakes, loop } = engine('checkpoints');
    const prompt = range(1, 60);
    await loop.run(job(prompt, 3, { checkpoints: () => [30] }).decodeJob);
    expect(fakes[0]!.checkpointsAt).toEqual([30, 59]);
    // The newest message edited at 45: the checkpoint at 30 is the reuse, and nothing is evaluated behind the count.
    const edited = [...range(1, 44), 400, 401, 402];
    const before = fakes[0]!.evaluated;
    const { decodeJob, out } = job(edited, 2);
    expect(await loop.run(decodeJob)).toEqual({ cachedPromptTokens: 30 });
    expect(fakes[0]!.evaluated - before).toBe(edited.length - 30 + 1);
    expect(out).toEqual([[403, 404]]);
  });

  it('a model that says it cuts but cannot: the request is answered from nothing, and no cut is tried again', async () => {
    const { fakes, loop } = engine('cut');
    await loop.run(job(range(1, 40), 3).decodeJob);
    fakes[0]!.failTruncate = true; // a hybrid the runtime did not declare
    const regenerate = job(range(1, 40), 3);
    expect(await loop.run(regenerate.decodeJob)).toEqual({ cachedPromptTokens: 0 });
    expect(regenerate.out).toEqual([[41, 42, 43]]);
    fakes[0]!.failTruncate = false;
    const truncations = spyTruncate(fakes[0]!);
    expect(await loop.run(job(range(1, 39), 1).decodeJob)).toEqual({ cachedPromptTokens: 0 });
    expect(truncations.filter((length) => length > 0)).toEqual([]);
  });

  it('no failure wedges the one sequence: a cut and a clear that fail, then twenty requests', async () => {
    const { fakes, loop } = engine('cut');
    await loop.run(job(range(1, 40), 3).decodeJob);
    fakes[0]!.failTruncate = true;
    fakes[0]!.failClear = true;
    await expect(loop.run(job(range(1, 30), 3).decodeJob)).rejects.toThrow('the worker is gone');
    fakes[0]!.failTruncate = false;
    fakes[0]!.failClear = false;
    // Before, `begin` threw after taking the only sequence: every later request was refused ("at most 1 choices").
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const { decodeJob, out } = job(i % 2 ? range(1, 30) : [200 + i, 201 + i], 2);
        return loop.run(decodeJob).then(() => out[0]);
      }),
    );
    answers.forEach((out, i) => expect(out).toEqual(i % 2 ? [31, 32] : [202 + i, 203 + i]));
  });

  it('n > 1 on a state that cannot be cut: the other sequences evaluate the prompt whole, and a failure frees them', async () => {
    const { fakes, loop } = engine('extend', 3);
    const prompt = range(1, 30);
    const two = job(prompt, 2, { rows: 2 });
    await loop.run(two.decodeJob);
    expect(two.out).toEqual([
      [31, 32],
      [31, 32],
    ]);
    fakes.forEach((fake) => (fake.failClear = true));
    fakes.forEach((fake) => (fake.failTruncate = true));
    await expect(loop.run(job(range(5, 30), 2, { rows: 3 }).decodeJob)).rejects.toThrow();
    fakes.forEach((fake) => ((fake.failClear = false), (fake.failTruncate = false)));
    const three = job(range(50, 20), 2, { rows: 3 });
    await loop.run(three.decodeJob);
    expect(three.out).toEqual([
      [70, 71],
      [70, 71],
      [70, 71],
    ]);
  });
});

function spyTruncate(fake: FakeSequence): number[] {
  const lengths: number[] = [];
  const truncate = fake.truncate.bind(fake);
  fake.truncate = (length) => (lengths.push(length), truncate(length));
  return lengths;
}
