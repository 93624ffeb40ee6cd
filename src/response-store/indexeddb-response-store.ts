import { unwrap, type DBSchema, type IDBPDatabase } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import {
  DEFAULT_RESPONSE_STORE_LIMITS,
  recordSize,
  type ResponseStore,
  type ResponseStoreLimits,
  type StoredResponse,
} from './response-store.ts';

/**
 * A record as kept: with its size, which the `order` index carries so that eviction reads no record's data, and its
 * item keys, `[owner, item id, storedAt]`, which the `items` index holds so that an item is found in its owner's
 * namespace only, the newest record holding it first.
 */
type Row = StoredResponse & { size: number; itemKeys: ItemKey[] };
type ItemKey = [owner: string, itemId: string, storedAt: number];

interface ResponsesDB extends DBSchema {
  responses: {
    key: [owner: string, id: string];
    value: Row;
    indexes: { order: [owner: string, storedAt: number, size: number]; items: ItemKey };
  };
}

/** The database every page and the service worker of an origin share. */
export const RESPONSES_DATABASE = 'lantern-responses';

/**
 * 2: records keyed by `[owner, id]`, items by `[owner, item id, storedAt]` (issue 22). Version 1 keyed both by id
 * alone, for every key at once; its records are carried over (each has always had its owner).
 */
const VERSION = 2;

/**
 * Records in the origin's IndexedDB, shared by the service worker and every tab: what the service worker's handler
 * keeps. One object store keyed by `[owner, id]`, indexed by `[owner, storedAt, size]` (eviction walks one owner's
 * records oldest first, reading keys only) and by item (a multi-entry index, for `item_reference`).
 *
 * A put makes room before it inserts, each in its own transaction: the owner's oldest records beyond its limits go
 * first, then the record goes in. (Were they one transaction, an origin over its quota would roll the eviction back
 * with the failed insert, and stay full for good.) If the insert still meets the origin's quota (the browser's, which
 * models and other keys share), the owner's oldest records go until as many bytes as the record's are freed, and the
 * insert is tried once more; with nothing of the owner's left to let go, the put rejects: no other key's record is
 * ever evicted for it. Two puts of one owner at once may leave it a record or so over its limits until its next put.
 *
 * The connection is long-lived and survives the browser taking it away (see `reopeningDatabase`), as the key store's.
 *
 * @param limits - overrides of {@link DEFAULT_RESPONSE_STORE_LIMITS}, for each key.
 */
export function indexedDbResponseStore(
  name = RESPONSES_DATABASE,
  limits: Partial<ResponseStoreLimits> = {},
): ResponseStore {
  const { maxResponses, maxBytes } = { ...DEFAULT_RESPONSE_STORE_LIMITS, ...limits };
  const withDatabase = reopeningDatabase<ResponsesDB>(name, VERSION, (database, oldVersion, _version, transaction) => {
    if (oldVersion < 1) createStore(unwrap(database));
    else if (oldVersion < 2) migrateFromVersion1(unwrap(transaction));
  });
  const strip = (row: Row | undefined): StoredResponse | undefined => {
    if (!row) return undefined;
    const { size: _size, itemKeys: _itemKeys, ...stored } = row;
    return stored;
  };

  return {
    put: (record) =>
      withDatabase(async (database) => {
        const key: [string, string] = [record.owner, record.id];
        const size = recordSize(record);
        if (size > maxBytes) {
          await database.delete('responses', key);
          return false;
        }
        await evictBeyond(database, record, size, maxResponses, maxBytes);
        const row = toRow({ ...record, size });
        try {
          await database.put('responses', row);
        } catch (error) {
          if (!isQuotaExceeded(error) || !(await evictOldest(database, record, size))) throw error;
          await database.put('responses', row);
        }
        return true;
      }),
    get: (owner, id) => withDatabase(async (database) => strip(await database.get('responses', [owner, id]))),
    findItem: (owner, itemId) =>
      withDatabase(async (database) => {
        const holders = IDBKeyRange.bound([owner, itemId, -Infinity], [owner, itemId, Infinity]);
        const newest = await database.transaction('responses').store.index('items').openCursor(holders, 'prev');
        return strip(newest?.value);
      }),
    delete: (owner, id) =>
      withDatabase(async (database) => {
        const tx = database.transaction('responses', 'readwrite');
        const found = (await tx.store.getKey([owner, id])) !== undefined;
        if (found) await tx.store.delete([owner, id]);
        await tx.done;
        return found;
      }),
  };
}

function createStore(database: IDBDatabase): void {
  const responses = database.createObjectStore('responses', { keyPath: ['owner', 'id'] });
  responses.createIndex('order', ['owner', 'storedAt', 'size']);
  // Each entry of `itemKeys` is an array, a valid key of its own: one index entry per item.
  responses.createIndex('items', 'itemKeys', { multiEntry: true });
}

function toRow(record: StoredResponse & { size?: number }): Row {
  return {
    ...record,
    size: record.size ?? recordSize(record),
    itemKeys: record.itemIds.map((item): ItemKey => [record.owner, item, record.storedAt]),
  };
}

/**
 * Version 1's records, read in full and written again under version 2's keys, in the upgrade's own transaction (in
 * its request callbacks, where it is sure to be active: promises of `idb` may resolve after it commits, in some
 * browsers and in fake-indexeddb). Version 1 held at most 32 MiB, read once.
 */
function migrateFromVersion1(transaction: IDBTransaction): void {
  const read = transaction.objectStore('responses').getAll();
  read.onsuccess = () => {
    const database = transaction.db;
    database.deleteObjectStore('responses');
    createStore(database);
    const responses = transaction.objectStore('responses');
    for (const record of read.result as (StoredResponse & { size?: number })[]) {
      // Every version 1 record names its owner; one that did not could be shown to no key, so it is dropped.
      if (typeof record.owner === 'string' && typeof record.id === 'string') responses.put(toRow(record));
    }
  };
}

/**
 * Deletes, in a transaction of its own, the owner's oldest records beyond what leaves room for `record`: at most
 * `maxResponses` and `maxBytes` with it. Its own copy under the same id does not count (the put replaces it).
 */
async function evictBeyond(
  database: IDBPDatabase<ResponsesDB>,
  record: StoredResponse,
  size: number,
  maxResponses: number,
  maxBytes: number,
): Promise<void> {
  const tx = database.transaction('responses', 'readwrite');
  // Newest first: keep what fits beside the record, let everything older go.
  let count = 1;
  let bytes = size;
  for (
    let cursor = await tx.store.index('order').openKeyCursor(ownersRecords(record.owner), 'prev');
    cursor;
    cursor = await cursor.continue()
  ) {
    if (cursor.primaryKey[1] === record.id) continue;
    count += 1;
    bytes += cursor.key[2];
    if (count > maxResponses || bytes > maxBytes) await tx.store.delete(cursor.primaryKey);
  }
  await tx.done;
}

/**
 * Deletes, in a transaction of its own, the owner's oldest records until `size` bytes are freed (its copy under the
 * record's id aside): room for the record in an origin over its quota. Resolves to whether anything was freed.
 */
async function evictOldest(
  database: IDBPDatabase<ResponsesDB>,
  record: StoredResponse,
  size: number,
): Promise<boolean> {
  const tx = database.transaction('responses', 'readwrite');
  let freed = 0;
  for (
    let cursor = await tx.store.index('order').openKeyCursor(ownersRecords(record.owner));
    cursor && freed < size;
    cursor = await cursor.continue()
  ) {
    if (cursor.primaryKey[1] === record.id) continue;
    freed += cursor.key[2];
    await tx.store.delete(cursor.primaryKey);
  }
  await tx.done;
  return freed > 0;
}

/** The `order` index's range of one owner's records. */
const ownersRecords = (owner: string) => IDBKeyRange.bound([owner, -Infinity, -Infinity], [owner, Infinity, Infinity]);

/** The browser's error for an origin over its quota (a DOMException, or the newer class of that name). */
const isQuotaExceeded = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'QuotaExceededError';
