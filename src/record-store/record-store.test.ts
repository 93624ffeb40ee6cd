import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import { beforeEach, describe, expect, it } from 'vitest';
import { indexedDbRecordStore } from './indexeddb-record-store.ts';
import { creationClock, memoryRecordStore, type KeptRecord, type RecordStore } from './record-store.ts';

/** The record store's contract, on the memory store and on the IndexedDB one (fake-indexeddb, fresh for each test). */
beforeEach(() => {
  globalThis.indexedDB = new IDBFactory();
});

type Data = { model: string; n: number };

const record = (n: number, extra: Partial<KeptRecord<Data>> = {}): KeptRecord<Data> => ({
  id: `rec_${String(n).padStart(3, '0')}`,
  owner: 'key_a',
  createdAt: 1_000 + n,
  storedAt: 1_000 + n,
  data: { model: n % 2 ? 'odd' : 'even', n },
  ...extra,
});

const ids = (page: { records: KeptRecord<Data>[] }) => page.records.map((r) => r.data.n);

const stores: [string, (limits?: { maxRecords?: number; maxBytes?: number }) => RecordStore<Data>][] = [
  ['memory', (limits) => memoryRecordStore<Data>(limits)],
  ['IndexedDB', (limits) => indexedDbRecordStore<Data>('tests', { limits: limits ?? {} })],
];

describe.each(stores)('%s record store', (_name, make) => {
  it('keeps copies per key: another key finds nothing, and changing a record after a put changes nothing kept', async () => {
    const store = make();
    const kept = record(1);
    expect(await store.put(kept)).toBe(true);
    kept.data.n = 99;
    expect((await store.get('key_a', 'rec_001'))?.data.n).toBe(1);
    expect(await store.get('key_b', 'rec_001')).toBeUndefined();
    expect(await store.delete('key_b', 'rec_001')).toBe(false);
    expect(ids(await store.list('key_b', { limit: 10, order: 'asc' }))).toEqual([]);
    expect(await store.delete('key_a', 'rec_001')).toBe(true);
    expect(await store.get('key_a', 'rec_001')).toBeUndefined();
  });

  it('lists by creation, a page after a cursor, in either order, with a filter', async () => {
    const store = make();
    for (const n of [3, 1, 5, 2, 4]) await store.put(record(n));
    await store.put(record(9, { owner: 'key_b' }));
    expect(ids(await store.list('key_a', { limit: 10, order: 'asc' }))).toEqual([1, 2, 3, 4, 5]);
    const first = await store.list('key_a', { limit: 2, order: 'desc' });
    expect(ids(first)).toEqual([5, 4]);
    expect(first.hasMore).toBe(true);
    const second = await store.list('key_a', { limit: 2, order: 'desc', after: 'rec_004' });
    expect(ids(second)).toEqual([3, 2]);
    expect(second.hasMore).toBe(true);
    const last = await store.list('key_a', { limit: 2, order: 'desc', after: 'rec_002' });
    expect(ids(last)).toEqual([1]);
    expect(last.hasMore).toBe(false);
    expect(ids(await store.list('key_a', { limit: 2, order: 'asc', after: 'rec_003' }))).toEqual([4, 5]);
    const odd = await store.list('key_a', { limit: 2, order: 'asc', filter: (data) => data.model === 'odd' });
    expect(ids(odd)).toEqual([1, 3]);
    expect(odd.hasMore).toBe(true);
    // An unknown cursor (or another key's) is an empty page.
    expect(ids(await store.list('key_a', { limit: 2, order: 'asc', after: 'rec_009' }))).toEqual([]);
  });

  it("keeps each key within its limits, the least recently written leaving first, never another key's", async () => {
    const store = make({ maxRecords: 3 });
    for (const n of [1, 2, 3]) await store.put(record(n));
    await store.put(record(9, { owner: 'key_b' }));
    // Rewriting record 1 makes it the most recent: record 2 leaves for record 4.
    await store.put(record(1, { storedAt: 2_000 }));
    await store.put(record(4, { storedAt: 2_001 }));
    expect(ids(await store.list('key_a', { limit: 10, order: 'asc' }))).toEqual([1, 3, 4]);
    expect(ids(await store.list('key_b', { limit: 10, order: 'asc' }))).toEqual([9]);
  });

  it('does not keep a record over the byte limit, and forgets the copy it replaced', async () => {
    const store = make({ maxBytes: 400 });
    expect(await store.put(record(1))).toBe(true);
    const big = record(1);
    (big.data as Data & { text?: string }).text = 'x'.repeat(1000);
    expect(await store.put(big)).toBe(false);
    expect(await store.get('key_a', 'rec_001')).toBeUndefined();
  });
});

describe('creationClock', () => {
  it('never gives one value twice or goes back', () => {
    const clock = creationClock(() => 5);
    const values = [clock(), clock(), clock()];
    expect(new Set(values).size).toBe(3);
    expect([...values].sort((a, b) => a - b)).toEqual(values);
  });
});
