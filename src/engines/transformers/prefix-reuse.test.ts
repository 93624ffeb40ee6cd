import { DynamicCache, Tensor } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { cacheBytes, PrefixReuse } from './prefix-reuse.ts';

/**
 * The cache plumbing on hand-made tensors whose every value says where it sits ([batch, heads, sequence, width]), in
 * fp32 and in fp16 (the keys and values of q4f16 models, which no adapter here can run). Whole answers equal to
 * recomputing are tested on real models in test/prefix-reuse.test.ts and test/e2e/prefix-reuse.spec.ts.
 */
const [BATCH, HEADS, SEQ, WIDTH] = [2, 2, 20, 3];
const value = (b: number, h: number, s: number, w: number) => b * 1000 + h * 100 + s * 4 + w;

function cache(type: 'float32' | 'float16'): DynamicCache {
  const entries: Record<string, Tensor> = {};
  for (const name of ['past_key_values.0.key', 'past_key_values.0.value']) {
    const data =
      type === 'float32' ? new Float32Array(BATCH * HEADS * SEQ * WIDTH) : new Uint16Array(BATCH * HEADS * SEQ * WIDTH);
    for (let b = 0; b < BATCH; b++)
      for (let h = 0; h < HEADS; h++)
        for (let s = 0; s < SEQ; s++)
          for (let w = 0; w < WIDTH; w++) data[((b * HEADS + h) * SEQ + s) * WIDTH + w] = value(b, h, s, w);
    entries[name] = new Tensor(type, data, [BATCH, HEADS, SEQ, WIDTH]);
  }
  return new DynamicCache(entries);
}

/** Two rows of tokens, the cache's 20 and the one never fed back: they share 10, then differ. */
const rows = [0, 1].map((row) => Array.from({ length: SEQ + 1 }, (_, i) => (i < 10 ? i : 100 * (row + 1) + i)));

/** Row `row` of a two-row cache, as a cache of its own. */
function rowCache(type: 'float32' | 'float16', row: number): DynamicCache {
  const entries: Record<string, Tensor> = {};
  for (const [name, t] of Object.entries(cache(type))) {
    const size = HEADS * SEQ * WIDTH;
    entries[name] = new Tensor(type, (t.data as Float32Array).slice(row * size, (row + 1) * size), [
      1,
      HEADS,
      SEQ,
      WIDTH,
    ]);
  }
  return new DynamicCache(entries);
}

/** Both rows kept, each an entry of its own (as the decode loop keeps the rows of one request). */
function keepBoth(reuse: PrefixReuse, type: 'float32' | 'float16' = 'float32') {
  reuse.keep(rows[0]!, rowCache(type, 0));
  reuse.keep(rows[1]!, rowCache(type, 1));
}

describe.each(['float32', 'float16'] as const)('PrefixReuse on %s keys and values', (type) => {
  it('copies the shared prefix of the matching entry, keeping the entry', async () => {
    const reuse = new PrefixReuse();
    keepBoth(reuse, type);
    // Row 1's first 17 tokens, then new ones.
    const prompt = [...rows[1]!.slice(0, 17), 7, 7];
    const { cache: past, length } = await reuse.prepare(prompt);
    expect(length).toBe(17);
    expect(past.get_seq_length()).toBe(17);
    for (const tensor of Object.values(past)) {
      expect(tensor.dims).toEqual([1, HEADS, 17, WIDTH]);
      expect(tensor.type).toBe(type);
      const data = tensor.data as Float32Array | Uint16Array;
      for (let h = 0; h < HEADS; h++)
        for (let s = 0; s < 17; s++)
          for (let w = 0; w < WIDTH; w++) expect(data[(h * 17 + s) * WIDTH + w]).toBe(value(1, h, s, w));
    }
    // The entry stayed, and row 0's too.
    expect((await reuse.prepare(prompt)).length).toBe(17);
    expect((await reuse.prepare([...rows[0]!.slice(0, 18), 5])).length).toBe(18);
  });

  it('hands a one-row cache over whole when the prompt extends all of it, and keeps it no more', async () => {
    const reuse = new PrefixReuse();
    const one = cache(type);
    // A one-row cache: row 0 alone.
    const single = new DynamicCache(
      Object.fromEntries(
        Object.entries(one).map(([name, t]) => [
          name,
          new Tensor(type, (t.data as Float32Array).slice(0, HEADS * SEQ * WIDTH), [1, HEADS, SEQ, WIDTH]),
        ]),
      ),
    );
    reuse.keep(rows[0]!, single);
    const prompt = [...rows[0]!, 9, 9];
    expect((await reuse.prepare(prompt)).cache).toBe(single);
    expect((await reuse.prepare(prompt)).length).toBe(0);
  });
});

describe('PrefixReuse', () => {
  it('never reuses less than 16 tokens by copy, nor the prompt’s last token, nor with a budget of 0', async () => {
    const reuse = new PrefixReuse();
    keepBoth(reuse);
    expect((await reuse.prepare([...rows[0]!.slice(0, 12), 5])).length).toBe(0);
    // The whole prompt is cached: all but its last token is reused.
    expect((await reuse.prepare(rows[0]!.slice(0, 18))).length).toBe(17);
    const off = new PrefixReuse(0);
    keepBoth(off);
    expect((await off.prepare([...rows[0]!.slice(0, 18), 5])).length).toBe(0);
  });
});

/**
 * A hybrid model's cache (LFM2's layout: a convolution state `past_conv.0` `[1, hidden, 3]` beside attention keys and
 * values) holding `tokens`: its state cannot be cut back, so only a prompt that extends all of it reuses it.
 */
function hybridCache(tokens: readonly number[]): DynamicCache {
  const kv = () =>
    new Tensor('float32', new Float32Array(HEADS * tokens.length * WIDTH), [1, HEADS, tokens.length, WIDTH]);
  return new DynamicCache({
    'past_conv.0': new Tensor(
      'float32',
      Float32Array.from({ length: 4 * 3 }, (_, i) => tokens.length * 100 + i),
      [1, 4, 3],
    ),
    'past_key_values.1.key': kv(),
    'past_key_values.1.value': kv(),
  });
}

describe('PrefixReuse of caches with states (hybrid and recurrent models)', () => {
  const turn = Array.from({ length: 30 }, (_, i) => i + 1);

  it('reuses only an entry the prompt extends whole, never a cut of one, and reports exactly what it took', async () => {
    const reuse = new PrefixReuse();
    const kept = hybridCache(turn);
    reuse.keep(turn, kept);
    // A prompt that parts from it at 25: a cut would have reused 25 tokens of keys and values, but not the state.
    const parted = [...turn.slice(0, 25), 99, 98, 97];
    expect((await reuse.prepare(parted, undefined, 'checkpoints')).length).toBe(0);
    expect((await reuse.prepare(parted, undefined, 'cut')).length).toBe(0);
    // The same tokens exactly: all but the last must be fed again, so it is not whole.
    expect((await reuse.prepare(turn, undefined, 'checkpoints')).length).toBe(0);
    // Another scope's prompt reuses nothing of it.
    expect((await reuse.prepare([...turn, 5], 'other', 'checkpoints')).length).toBe(0);
    // The conversation goes on: the entry is handed over whole, and is kept no more.
    const taken = await reuse.prepare([...turn, 5, 6], undefined, 'checkpoints');
    expect(taken.length).toBe(30);
    expect(taken.cache).toBe(kept);
    expect(reuse.bytes).toBe(0);
    expect((await reuse.prepare([...turn, 5, 6], undefined, 'checkpoints')).length).toBe(0);
  });

  it('keeps a checkpoint beside a longer one, takes the longest the prompt extends, and counts their bytes', async () => {
    const reuse = new PrefixReuse();
    const start = turn.slice(0, 12);
    const early = hybridCache(start);
    const late = hybridCache(turn);
    reuse.keep(start, early);
    reuse.keep(turn, late);
    // A longer entry does not make a shorter one redundant: it could not be cut back to it.
    expect(reuse.bytes).toBe(cacheBytes(early) + cacheBytes(late));
    // An edit after the 12th token: the earlier checkpoint.
    const edited = [...start, 50, 51, 52];
    expect((await reuse.prepare(edited, undefined, 'checkpoints')).cache).toBe(early);
    expect((await reuse.prepare([...turn, 1], undefined, 'checkpoints')).cache).toBe(late);
  });

  it('holds its checkpoints within the byte budget, the least recently used going first', async () => {
    const one = cacheBytes(hybridCache(turn));
    const reuse = new PrefixReuse(one * 2 + 10);
    const caches = [0, 1, 2].map((i) => hybridCache(turn.map((t) => t + i * 100)));
    caches.forEach((cache, i) =>
      reuse.keep(
        turn.map((t) => t + i * 100),
        cache,
      ),
    );
    expect(reuse.bytes).toBe(one * 2);
    expect(caches[0]!['past_conv.0']!.location).toBe('none'); // freed
    expect((await reuse.prepare([...turn.map((t) => t + 200), 1], undefined, 'checkpoints')).length).toBe(30);
  });

  it('keeps a copy of a prefill’s cache at a checkpoint, apart from the cache that goes on', async () => {
    const reuse = new PrefixReuse();
    const filling = hybridCache(turn);
    await reuse.keepCopy(turn, filling);
    // The prefill goes on: its tensors change or are freed; the copy is the checkpoint's own.
    const before = Array.from(filling['past_conv.0']!.data as Float32Array);
    (filling['past_conv.0']!.data as Float32Array).fill(-1);
    const { cache, length } = await reuse.prepare([...turn, 7], undefined, 'checkpoints');
    expect(length).toBe(30);
    expect(cache).not.toBe(filling);
    expect(Array.from(cache['past_conv.0']!.data as Float32Array)).toEqual(before);
    expect(cache['past_key_values.1.key']!.dims).toEqual([1, HEADS, 30, WIDTH]);
    // A checkpoint stays: each prompt that parts there gets a copy of its own (a shared system prompt).
    (cache['past_conv.0']!.data as Float32Array).fill(-2);
    const again = await reuse.prepare([...turn, 8, 9], undefined, 'checkpoints');
    expect(again.length).toBe(30);
    expect(again.cache).not.toBe(cache);
    expect(Array.from(again.cache['past_conv.0']!.data as Float32Array)).toEqual(before);
    expect(reuse.bytes).toBe(cacheBytes(filling));
  });
});
