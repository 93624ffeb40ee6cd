import { describe, expect, it } from 'vitest';
import { concatBytes, readAtMost } from './byte-chunks.ts';

/** A stream of `chunks` that records whether it was cancelled, and fails at chunk `failAt` where given. */
function chunked(chunks: number[][], failAt?: number) {
  const seen = { cancelled: false, pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled === failAt) return controller.error(new Error('the connection broke'));
      const next = chunks[seen.pulled++];
      if (next) controller.enqueue(Uint8Array.from(next));
      else controller.close();
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { reader: stream.getReader(), seen };
}

describe('concatBytes', () => {
  it('joins chunks in order into a new array of its own', () => {
    const backing = Uint8Array.from([9, 1, 2, 9]);
    const parts = [backing.subarray(1, 3), new Uint8Array(0), Uint8Array.from([3])];
    const joined = concatBytes(parts);
    expect([...joined]).toEqual([1, 2, 3]);
    expect(joined.byteOffset).toBe(0);
    expect(joined.buffer.byteLength).toBe(3);
    joined[0] = 7;
    expect(backing[1]).toBe(1);
  });

  it('copies a single chunk rather than handing it back', () => {
    const one = Uint8Array.from([4, 5]);
    const joined = concatBytes([one]);
    expect(joined).not.toBe(one);
    expect([...joined]).toEqual([4, 5]);
    expect([...concatBytes([])]).toEqual([]);
  });
});

describe('readAtMost', () => {
  it('reads a stream to its end, telling the size as it grows', async () => {
    const { reader, seen } = chunked([[1, 2], [3], [4, 5, 6]]);
    const sizes: number[] = [];
    const bytes = await readAtMost(reader, 6, (size) => sizes.push(size));
    expect([...bytes!]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sizes).toEqual([2, 3, 6]);
    expect(seen.cancelled).toBe(false);
  });

  it('stops at the chunk that passes the limit, cancels the stream and answers undefined', async () => {
    const { reader, seen } = chunked([[1, 2], [3, 4], [5], [6]]);
    const sizes: number[] = [];
    expect(await readAtMost(reader, 3, (size) => sizes.push(size))).toBeUndefined();
    expect(sizes).toEqual([2]);
    expect(seen.pulled).toBeLessThan(4);
    expect(seen.cancelled).toBe(true);
  });

  it('cancels the stream when `onBytes` throws, and passes its error on', async () => {
    const { reader, seen } = chunked([[1], [2], [3]]);
    const refused = new Error('refused at 2 bytes');
    await expect(
      readAtMost(reader, 10, (size) => {
        if (size >= 2) throw refused;
      }),
    ).rejects.toBe(refused);
    expect(seen.cancelled).toBe(true);
  });

  it('passes on a read that failed', async () => {
    const { reader } = chunked([[1], [2]], 1);
    await expect(readAtMost(reader, 10)).rejects.toThrow('the connection broke');
  });
});
