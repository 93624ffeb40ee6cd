import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { beforeEach, describe, expect, it } from 'vitest';
import { indexedDbResponseStore } from './indexeddb-response-store.ts';
import { memoryResponseStore, recordSize, type ResponseStoreLimits, type StoredResponse } from './response-store.ts';

/**
 * The response store's contract, on both stores: the memory one and the IndexedDB one on fake-indexeddb (an in-memory
 * IndexedDB that fires the browser's `close` and `versionchange` events).
 */
let connections: IDBDatabase[];
beforeEach(() => {
  connections = [];
  const factory = new IDBFactory();
  const open = factory.open.bind(factory);
  factory.open = (...args: Parameters<IDBFactory['open']>) => {
    const request = open(...args);
    request.addEventListener('success', () => connections.push(request.result));
    return request;
  };
  globalThis.indexedDB = factory;
});

const record = (n: number, extra: Partial<StoredResponse> = {}): StoredResponse => ({
  id: `resp_${n}`,
  owner: 'key_a',
  storedAt: 1_000 + n,
  itemIds: [`msg_${n}`, `fc_${n}`],
  data: { response: { id: `resp_${n}`, output_text: 'x'.repeat(10) }, input: [{ role: 'user', content: `turn ${n}` }] },
  ...extra,
});

const stores = {
  memory: (limits?: Partial<ResponseStoreLimits>) => memoryResponseStore(limits),
  indexedDB: (limits?: Partial<ResponseStoreLimits>) => indexedDbResponseStore('responses-test', limits),
};

describe.each(Object.entries(stores))('%s response store', (_name, make) => {
  it('keeps copies, finds them by id and by item id, and deletes them', async () => {
    const store = make();
    const kept = record(1);
    await store.put(kept);
    (kept.data as { input: unknown[] }).input.push('changed after put');
    expect(await store.get('resp_1')).toEqual(record(1));
    const got = (await store.get('resp_1'))!;
    got.itemIds.push('msg_other');
    expect(await store.findItem('msg_other')).toBeUndefined();
    expect((await store.findItem('fc_1'))?.id).toBe('resp_1');
    expect(await store.get('resp_2')).toBeUndefined();
    expect(await store.delete('resp_1')).toBe(true);
    expect(await store.delete('resp_1')).toBe(false);
    expect(await store.get('resp_1')).toBeUndefined();
    expect(await store.findItem('msg_1')).toBeUndefined();
  });

  it('lets the oldest go past the most responses it keeps', async () => {
    const store = make({ maxResponses: 3 });
    for (const n of [1, 2, 3, 4, 5]) await store.put(record(n));
    expect(await Promise.all([1, 2, 3, 4, 5].map(async (n) => (await store.get(`resp_${n}`)) !== undefined))).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
    expect(await store.findItem('msg_2')).toBeUndefined();
  });

  it('lets the oldest go past the most bytes it keeps, and keeps nothing larger than that alone', async () => {
    const size = recordSize(record(1));
    const store = make({ maxBytes: size * 2 + 10 });
    for (const n of [1, 2, 3]) await store.put(record(n));
    expect(await store.get('resp_1')).toBeUndefined();
    expect(await store.get('resp_2')).toBeDefined();
    expect(await store.get('resp_3')).toBeDefined();
    const huge = record(4, { data: 'x'.repeat(size * 3) });
    await store.put(huge);
    expect(await store.get('resp_4')).toBeUndefined();
    expect(await store.get('resp_3')).toBeDefined();
  });

  it('replaces a record put again under its id, with its new items only', async () => {
    const store = make({ maxResponses: 2 });
    await store.put(record(1));
    await store.put(record(1, { itemIds: ['msg_new'] }));
    expect(await store.findItem('msg_1')).toBeUndefined();
    expect((await store.findItem('msg_new'))?.id).toBe('resp_1');
    await store.put(record(2));
    expect(await store.get('resp_1')).toBeDefined();
  });
});

describe('indexedDbResponseStore', () => {
  it('is shared by every context of the origin: what one keeps, another finds', async () => {
    const serviceWorker = indexedDbResponseStore('responses-test');
    const page = indexedDbResponseStore('responses-test');
    await serviceWorker.put(record(1));
    expect((await page.get('resp_1'))?.owner).toBe('key_a');
  });

  it('opens again after the browser closes its connection (site data cleared)', async () => {
    const store = indexedDbResponseStore('responses-test');
    await store.put(record(1));
    forceCloseDatabase(connections[0]! as unknown as typeof IDBDatabase);
    expect((await store.get('resp_1'))?.id).toBe('resp_1');
    await store.put(record(2));
    expect(connections).toHaveLength(2);
  });
});
