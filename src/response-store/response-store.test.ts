import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { openDB } from 'idb';
import { beforeEach, describe, expect, it } from 'vitest';
import { limitOrigin } from '../../test/support/origin-quota.ts';
import { indexedDbResponseStore } from './indexeddb-response-store.ts';
import {
  memoryResponseStore,
  recordSize,
  type ResponseStore,
  type ResponseStoreLimits,
  type StoredResponse,
} from './response-store.ts';

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

/** Which of `owner`'s responses `resp_{n}` are kept, as booleans in the order of `ns`. */
const kept = (store: ResponseStore, owner: string, ns: number[]) =>
  Promise.all(ns.map(async (n) => (await store.get(owner, `resp_${n}`)) !== undefined));

const stores = {
  memory: (limits?: Partial<ResponseStoreLimits>) => memoryResponseStore(limits),
  indexedDB: (limits?: Partial<ResponseStoreLimits>) => indexedDbResponseStore('responses-test', limits),
};

describe.each(Object.entries(stores))('%s response store', (_name, make) => {
  it('keeps copies, finds them by id and by item id, and deletes them', async () => {
    const store = make();
    const original = record(1);
    expect(await store.put(original)).toBe(true);
    (original.data as { input: unknown[] }).input.push('changed after put');
    expect(await store.get('key_a', 'resp_1')).toEqual(record(1));
    const got = (await store.get('key_a', 'resp_1'))!;
    got.itemIds.push('msg_other');
    expect(await store.findItem('key_a', 'msg_other')).toBeUndefined();
    expect((await store.findItem('key_a', 'fc_1'))?.id).toBe('resp_1');
    expect(await store.get('key_a', 'resp_2')).toBeUndefined();
    expect(await store.delete('key_a', 'resp_1')).toBe(true);
    expect(await store.delete('key_a', 'resp_1')).toBe(false);
    expect(await store.get('key_a', 'resp_1')).toBeUndefined();
    expect(await store.findItem('key_a', 'msg_1')).toBeUndefined();
  });

  it('lets the oldest go past the most responses it keeps', async () => {
    const store = make({ maxResponses: 3 });
    for (const n of [1, 2, 3, 4, 5]) await store.put(record(n));
    expect(await kept(store, 'key_a', [1, 2, 3, 4, 5])).toEqual([false, false, true, true, true]);
    expect(await store.findItem('key_a', 'msg_2')).toBeUndefined();
  });

  it('lets the oldest go past the most bytes it keeps, and keeps nothing larger than that alone', async () => {
    const size = recordSize(record(1));
    const store = make({ maxBytes: size * 2 + 10 });
    for (const n of [1, 2, 3]) await store.put(record(n));
    expect(await kept(store, 'key_a', [1, 2, 3])).toEqual([false, true, true]);
    const huge = record(4, { data: 'x'.repeat(size * 3) });
    expect(await store.put(huge)).toBe(false);
    expect(await kept(store, 'key_a', [3, 4])).toEqual([true, false]);
  });

  it('replaces a record put again under its id, with its new items only', async () => {
    const store = make({ maxResponses: 2 });
    await store.put(record(1));
    await store.put(record(1, { itemIds: ['msg_new'] }));
    expect(await store.findItem('key_a', 'msg_1')).toBeUndefined();
    expect((await store.findItem('key_a', 'msg_new'))?.id).toBe('resp_1');
    await store.put(record(2));
    expect(await store.get('key_a', 'resp_1')).toBeDefined();
  });

  it('finds an item held by several records in the newest, and in the others once that one is gone', async () => {
    const store = make();
    await store.put(record(1, { itemIds: ['msg_first'] }));
    await store.put(record(2, { itemIds: ['msg_first', 'msg_2'] }));
    expect((await store.findItem('key_a', 'msg_first'))?.id).toBe('resp_2');
    await store.delete('key_a', 'resp_2');
    expect((await store.findItem('key_a', 'msg_first'))?.id).toBe('resp_1');
  });

  it("gives each key its own limits: one key's responses never displace another's", async () => {
    const store = make({ maxResponses: 2 });
    await store.put(record(1));
    for (const n of [2, 3, 4, 5]) await store.put(record(n, { owner: 'key_b' }));
    expect(await kept(store, 'key_a', [1])).toEqual([true]);
    expect(await kept(store, 'key_b', [2, 3, 4, 5])).toEqual([false, false, true, true]);
  });

  it("gives each key its own namespace of ids: another key's response and items do not exist for it", async () => {
    const store = make();
    await store.put(record(1, { itemIds: ['msg_shared'] }));
    // Key B keeps a response under the same id, holding an item under the same id: each key finds its own.
    await store.put(record(1, { owner: 'key_b', itemIds: ['msg_shared'], data: "key_b's" }));
    expect((await store.get('key_a', 'resp_1'))?.data).toEqual(record(1).data);
    expect((await store.get('key_b', 'resp_1'))?.data).toBe("key_b's");
    expect((await store.findItem('key_a', 'msg_shared'))?.owner).toBe('key_a');
    expect((await store.findItem('key_b', 'msg_shared'))?.owner).toBe('key_b');
    expect(await store.get('key_c', 'resp_1')).toBeUndefined();
    expect(await store.findItem('key_c', 'msg_shared')).toBeUndefined();
    expect(await store.delete('key_c', 'resp_1')).toBe(false);
    expect(await store.delete('key_b', 'resp_1')).toBe(true);
    expect((await store.get('key_a', 'resp_1'))?.owner).toBe('key_a');
    expect((await store.findItem('key_a', 'msg_shared'))?.id).toBe('resp_1');
  });
});

describe('indexedDbResponseStore', () => {
  it('is shared by every context of the origin: what one keeps, another finds', async () => {
    const serviceWorker = indexedDbResponseStore('responses-test');
    const page = indexedDbResponseStore('responses-test');
    await serviceWorker.put(record(1));
    expect((await page.get('key_a', 'resp_1'))?.owner).toBe('key_a');
  });

  it('opens again after the browser closes its connection (site data cleared)', async () => {
    const store = indexedDbResponseStore('responses-test');
    await store.put(record(1));
    forceCloseDatabase(connections[0]! as unknown as typeof IDBDatabase);
    expect((await store.get('key_a', 'resp_1'))?.id).toBe('resp_1');
    await store.put(record(2));
    expect(connections).toHaveLength(2);
  });

  it('frees room before it inserts, so that an origin full at its limits takes the next record', async () => {
    // Room for three records in the origin, and three allowed: the fourth's eviction must come first, as a put and
    // its eviction in one transaction rolled back together, every time.
    const store = indexedDbResponseStore('responses-test', { maxResponses: 3 });
    for (const n of [1, 2, 3]) await store.put(record(n));
    const restore = await limitOrigin(3.5);
    try {
      expect(await store.put(record(4))).toBe(true);
      expect(await kept(store, 'key_a', [1, 2, 3, 4])).toEqual([false, true, true, true]);
    } finally {
      restore();
    }
  });

  it("makes room in an origin fuller than its limits with the key's own oldest, never another key's", async () => {
    const store = indexedDbResponseStore('responses-test');
    await store.put(record(1, { owner: 'key_b' }));
    for (const n of [2, 3]) await store.put(record(n));
    const restore = await limitOrigin(3.5);
    try {
      expect(await store.put(record(4))).toBe(true);
      expect(await kept(store, 'key_a', [2, 3, 4])).toEqual([false, true, true]);
      // Key C has nothing to let go of: its put fails, with the browser's error, and everyone else's stay.
      await expect(store.put(record(5, { owner: 'key_c' }))).rejects.toMatchObject({ name: 'QuotaExceededError' });
      expect(await kept(store, 'key_b', [1])).toEqual([true]);
      expect(await kept(store, 'key_a', [3, 4])).toEqual([true, true]);
      expect(await kept(store, 'key_c', [5])).toEqual([false]);
    } finally {
      restore();
    }
  });

  it("carries version 1's records (one namespace for every key) over to their owners' namespaces", async () => {
    const legacy = await openDB('responses-test', 1, {
      upgrade(database) {
        const responses = database.createObjectStore('responses', { keyPath: 'id' });
        responses.createIndex('order', ['storedAt', 'size']);
        responses.createIndex('items', 'itemIds', { multiEntry: true });
      },
    });
    for (const one of [record(1), record(2, { owner: 'key_b' }), record(3)]) {
      await legacy.put('responses', { ...one, size: recordSize(one) });
    }
    legacy.close();

    const store = indexedDbResponseStore('responses-test', { maxResponses: 2 });
    expect(await store.get('key_a', 'resp_1')).toEqual(record(1));
    expect(await store.get('key_b', 'resp_1')).toBeUndefined();
    expect((await store.findItem('key_b', 'fc_2'))?.id).toBe('resp_2');
    expect(await store.findItem('key_a', 'fc_2')).toBeUndefined();
    // Their sizes and times came along: key A's oldest goes first when it is full.
    await store.put(record(4));
    expect(await kept(store, 'key_a', [1, 3, 4])).toEqual([false, true, true]);
    expect(await kept(store, 'key_b', [2])).toEqual([true]);
  });
});
