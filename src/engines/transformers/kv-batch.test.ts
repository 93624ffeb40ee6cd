import { DynamicCache, Tensor } from '@huggingface/transformers';
import { describe, expect, it } from 'vitest';
import { hasStates, isKeyValue, KVBatch, pastOf } from './kv-batch.ts';

/**
 * KVBatch on hand-made caches laid out as LFM2's (transformers.js' `lfm2`): attention keys and values
 * `past_key_values.<i>.{key,value}` `[rows, heads, sequence, dim]` beside short-convolution states `past_conv.<i>`
 * `[rows, hidden, L]`, which have no sequence axis. Every value says where it sits, so a row's data is recognised
 * wherever it lands. Whole answers on a real hybrid model are tested in test/hybrid-reuse.test.ts.
 */
const [HEADS, DIM, HIDDEN, CONV] = [2, 3, 4, 3];

/** A key/value tensor of one row holding `length` tokens: value = tag·1000 + head·100 + position·10 + d. */
function keyValue(tag: number, length: number): Tensor {
  const data = new Float32Array(HEADS * length * DIM);
  for (let h = 0; h < HEADS; h++)
    for (let s = 0; s < length; s++)
      for (let d = 0; d < DIM; d++) data[(h * length + s) * DIM + d] = tag * 1000 + h * 100 + s * 10 + d;
  return new Tensor('float32', data, [1, HEADS, length, DIM]);
}

/** A convolution state of one row: value = tag·1000 + 500 + index. */
function convState(tag: number): Tensor {
  return new Tensor(
    'float32',
    Float32Array.from({ length: HIDDEN * CONV }, (_, i) => tag * 1000 + 500 + i),
    [1, HIDDEN, CONV],
  );
}

/** A one-row LFM2-like cache of `length` tokens: layer 0 a convolution, layer 1 attention. */
function hybridCache(tag: number, length: number): DynamicCache {
  return new DynamicCache({
    'past_conv.0': convState(tag),
    'past_key_values.1.key': keyValue(tag, length),
    'past_key_values.1.value': keyValue(tag, length),
  });
}

/** The state of row `row` of a `[rows, HIDDEN, CONV]` tensor. */
function stateRow(tensor: Tensor, row: number): number[] {
  const size = HIDDEN * CONV;
  return Array.from((tensor.data as Float32Array).subarray(row * size, (row + 1) * size));
}

/** The tags of each row of a batch's state, read back from a step's inputs. */
function stateTags(batch: KVBatch): number[] {
  const inputs = batch.stepInputs(Array.from({ length: batch.rows }, () => [1]));
  const state = inputs.past_key_values['past_conv.0']!;
  expect(state.dims).toEqual([batch.rows, HIDDEN, CONV]);
  return Array.from({ length: batch.rows }, (_, r) => {
    const values = stateRow(state, r);
    expect(values).toEqual(stateRow(convState(Math.floor(values[0]! / 1000)), 0));
    return Math.floor(values[0]! / 1000);
  });
}

describe('pastOf', () => {
  it('names each output as transformers.js does: keys and values past_key_values.*, states past_<kind>.*', () => {
    const t = new Tensor('float32', new Float32Array(1), [1]);
    const names = Object.keys(
      pastOf({
        logits: t,
        'present.1.key': t,
        'present.1.value': t,
        present_conv: t,
        'present_conv.0': t,
        'present_ssm.2': t,
        'present_recurrent.3': t,
      }),
    );
    expect(names.sort()).toEqual(
      [
        'past_key_values.1.key',
        'past_key_values.1.value',
        'past_conv',
        'past_conv.0',
        'past_ssm.2',
        'past_recurrent.3',
      ].sort(),
    );
  });
});

describe('hasStates and isKeyValue', () => {
  it('tell a hybrid model’s cache from attention keys and values by name and shape', () => {
    const session = (inputNames: string[]) => ({ sessions: { model: { inputNames } } });
    expect(
      hasStates(session(['input_ids', 'attention_mask', 'past_key_values.0.key', 'past_key_values.0.value'])),
    ).toBe(false);
    expect(hasStates(session(['input_ids', 'past_conv.0', 'past_key_values.1.key', 'past_key_values.1.value']))).toBe(
      true,
    );
    expect(hasStates(session(['input_ids', 'past_recurrent.0', 'past_conv.0']))).toBe(true);
    expect(isKeyValue('past_key_values.1.key', keyValue(0, 2))).toBe(true);
    expect(isKeyValue('past_conv.0', convState(0))).toBe(false);
  });
});

describe('KVBatch with states beside keys and values', () => {
  it('copies each row’s state whole with its row: joining as copies, reordered, taken out', async () => {
    const batch = new KVBatch();
    const a = hybridCache(1, 3);
    batch.adopt(a, 3);
    // Two more rows of another prompt (one request's `n`), after the first.
    await batch.relayout([0], [{ cache: hybridCache(2, 3), length: 3, copies: 2 }]);
    expect(batch.rows).toBe(3);
    expect(stateTags(batch)).toEqual([1, 2, 2]);
    // Reordered and one dropped: each state goes with its row.
    await batch.relayout([2, 0]);
    expect(stateTags(batch)).toEqual([2, 1]);
    // A row taken out has its own state and its own columns.
    const taken = await batch.takeRow(1);
    expect(taken['past_conv.0']!.dims).toEqual([1, HIDDEN, CONV]);
    expect(stateRow(taken['past_conv.0']!, 0)).toEqual(stateRow(convState(1), 0));
    expect(taken['past_key_values.1.key']!.dims).toEqual([1, HEADS, 3, DIM]);
    expect(Array.from(taken['past_key_values.1.key']!.data as Float32Array)).toEqual(
      Array.from(keyValue(1, 3).data as Float32Array),
    );
    // The batch still holds both rows, their states unchanged.
    expect(stateTags(batch)).toEqual([2, 1]);
    batch.dispose();
  });

  it('a one-row batch hands its tensors over whole, states included', async () => {
    const batch = new KVBatch();
    const cache = hybridCache(4, 5);
    batch.adopt(cache, 5);
    const whole = await batch.takeRow(0);
    expect(whole['past_conv.0']).toBe(cache['past_conv.0']);
    expect(batch.rows).toBe(0);
  });

  it('refuses a step in which rows with states feed different numbers of tokens (a state would take in the pad)', async () => {
    const batch = new KVBatch();
    await batch.relayout([], [{ cache: hybridCache(1, 2), length: 2, copies: 2 }]);
    expect(() => batch.stepInputs([[1, 2], [3]])).toThrow(/different numbers of tokens/);
    expect(
      batch.stepInputs([
        [1, 2],
        [3, 4],
      ]).input_ids.dims,
    ).toEqual([2, 2]);
    // Keys and values alone are padded as ever.
    const plain = new KVBatch();
    const kv = (tag: number) =>
      new DynamicCache({ 'past_key_values.0.key': keyValue(tag, 2), 'past_key_values.0.value': keyValue(tag, 2) });
    await plain.relayout([], [{ cache: kv(1), length: 2, copies: 2 }]);
    expect(plain.stepInputs([[1, 2], [3]]).input_ids.dims).toEqual([2, 2]);
  });
});
