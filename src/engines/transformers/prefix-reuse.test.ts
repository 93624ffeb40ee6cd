import { DynamicCache, Tensor } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { PrefixReuse } from './prefix-reuse.ts';

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
    const past = await reuse.prepare(prompt);
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
    expect((await reuse.prepare(prompt)).get_seq_length()).toBe(17);
    expect((await reuse.prepare([...rows[0]!.slice(0, 18), 5])).get_seq_length()).toBe(18);
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
    expect(await reuse.prepare(prompt)).toBe(single);
    expect((await reuse.prepare(prompt)).get_seq_length()).toBe(0);
  });
});

describe('PrefixReuse', () => {
  it('never reuses less than 16 tokens by copy, nor the prompt’s last token, nor with a budget of 0', async () => {
    const reuse = new PrefixReuse();
    keepBoth(reuse);
    expect((await reuse.prepare([...rows[0]!.slice(0, 12), 5])).get_seq_length()).toBe(0);
    // The whole prompt is cached: all but its last token is reused.
    expect((await reuse.prepare(rows[0]!.slice(0, 18))).get_seq_length()).toBe(17);
    const off = new PrefixReuse(0);
    keepBoth(off);
    expect((await off.prepare([...rows[0]!.slice(0, 18), 5])).get_seq_length()).toBe(0);
  });

  it('keeps no cache holding other state than attention keys and values (recurrent models)', async () => {
    const reuse = new PrefixReuse();
    const hybrid = cache('float32');
    hybrid.update({ 'past_conv.1': new Tensor('float32', new Float32Array(BATCH * 4), [BATCH, 4]) });
    reuse.keep(rows[0]!, hybrid);
    expect((await reuse.prepare([...rows[0]!.slice(0, 18), 5])).get_seq_length()).toBe(0);
    expect(hybrid['past_key_values.0.key']!.location).toBe('none'); // freed
  });
});
