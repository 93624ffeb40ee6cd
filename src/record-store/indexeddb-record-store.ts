import type { DBSchema, IDBPDatabase } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import {
  DEFAULT_RECORD_STORE_LIMITS,
  recordSize,
  type KeptRecord,
  type RecordStore,
  type RecordStoreLimits,
} from './record-store.ts';

/** A record as kept: in its collection, with its size, which the `stored` index carries so eviction reads no data. */
type Row = KeptRecord & { collection: string; size: number };

interface RecordsDB extends DBSchema {
  records: {
    key: [collection: string, owner: string, id: string];
    value: Row;
    indexes: {
      created: [collection: string, owner: string, createdAt: number, id: string];
      stored: [collection: string, owner: string, storedAt: number, size: number];
    };
  };
}

/** The database every page and the service worker of an origin share: every collection's records in one store. */
export const RECORDS_DATABASE = 'lantern-records';

const VERSION = 1;

/**
 * Records of one collection (`conversations`, `chat_completions`) in the origin's IndexedDB, shared by the service
 * worker and every tab. One object store for every collection, keyed by `[collection, owner, id]`: a new collection
 * needs no new version of the database. Indexed by creation (`[collection, owner, createdAt, id]`: lists walk one
 * owner's records in order from a cursor) and by last write (`[collection, owner, storedAt, size]`: eviction walks one
 * owner's least recently written, reading keys only).
 *
 * A put makes room before it inserts, each in its own transaction, as the response store's does (were they one, an
 * origin over its quota would roll the eviction back with the failed insert). Only the owner's records of the same
 * collection are ever evicted for it. The connection survives the browser taking it away (`reopeningDatabase`).
 *
 * @param limits - overrides of {@link DEFAULT_RECORD_STORE_LIMITS}, for each key in this collection.
 */
export function indexedDbRecordStore<T = unknown>(
  collection: string,
  { name = RECORDS_DATABASE, limits = {} }: { name?: string; limits?: Partial<RecordStoreLimits> } = {},
): RecordStore<T> {
  const { maxRecords, maxBytes } = { ...DEFAULT_RECORD_STORE_LIMITS, ...limits };
  const withDatabase = reopeningDatabase<RecordsDB>(name, VERSION, (database) => {
    const records = database.createObjectStore('records', { keyPath: ['collection', 'owner', 'id'] });
    records.createIndex('created', ['collection', 'owner', 'createdAt', 'id']);
    records.createIndex('stored', ['collection', 'owner', 'storedAt', 'size']);
  });
  const strip = (row: Row | undefined): KeptRecord<T> | undefined => {
    if (!row) return undefined;
    const { collection: _collection, size: _size, ...record } = row;
    return record as KeptRecord<T>;
  };
  // Arrays sort after numbers in IndexedDB keys: `[]` closes a range over every number.
  const owners = (owner: string) => IDBKeyRange.bound([collection, owner, -Infinity], [collection, owner, []]);

  return {
    limits: Object.freeze({ maxRecords, maxBytes }),
    put: (record) =>
      withDatabase(async (database) => {
        const key: [string, string, string] = [collection, record.owner, record.id];
        const size = recordSize(record);
        if (size > maxBytes) {
          await database.delete('records', key);
          return false;
        }
        await evictBeyond(database, owners(record.owner), record.id, size, maxRecords, maxBytes);
        const row: Row = { ...(record as KeptRecord), collection, size };
        try {
          await database.put('records', row);
        } catch (error) {
          if (!isQuotaExceeded(error) || !(await evictStalest(database, owners(record.owner), record.id, size))) {
            throw error;
          }
          await database.put('records', row);
        }
        return true;
      }),
    get: (owner, id) => withDatabase(async (database) => strip(await database.get('records', [collection, owner, id]))),
    delete: (owner, id) =>
      withDatabase(async (database) => {
        const tx = database.transaction('records', 'readwrite');
        const found = (await tx.store.getKey([collection, owner, id])) !== undefined;
        if (found) await tx.store.delete([collection, owner, id]);
        await tx.done;
        return found;
      }),
    list: (owner, { limit, order, after, filter }) =>
      withDatabase(async (database) => {
        const tx = database.transaction('records');
        let range = owners(owner);
        if (after !== undefined) {
          const cursor = await tx.store.get([collection, owner, after]);
          if (!cursor) return { records: [], hasMore: false };
          const at = [collection, owner, cursor.createdAt, cursor.id];
          range =
            order === 'asc'
              ? IDBKeyRange.bound(at, [collection, owner, []], true)
              : IDBKeyRange.bound([collection, owner, -Infinity], at, false, true);
        }
        const records: KeptRecord<T>[] = [];
        for (
          let cursor = await tx.store.index('created').openCursor(range, order === 'asc' ? 'next' : 'prev');
          cursor;
          cursor = await cursor.continue()
        ) {
          const record = strip(cursor.value)!;
          if (filter && !filter(record.data)) continue;
          if (records.length === limit) return { records, hasMore: true };
          records.push(record);
        }
        return { records, hasMore: false };
      }),
  };
}

/**
 * Deletes, in a transaction of its own, the owner's least recently written records beyond what leaves room for a
 * record of `size` bytes: at most `maxRecords` and `maxBytes` with it. Its own copy under `id` does not count.
 */
async function evictBeyond(
  database: IDBPDatabase<RecordsDB>,
  range: IDBKeyRange,
  id: string,
  size: number,
  maxRecords: number,
  maxBytes: number,
): Promise<void> {
  const tx = database.transaction('records', 'readwrite');
  let count = 1;
  let bytes = size;
  // Most recent first: keep what fits beside the record, let everything staler go.
  for (
    let cursor = await tx.store.index('stored').openKeyCursor(range, 'prev');
    cursor;
    cursor = await cursor.continue()
  ) {
    if (cursor.primaryKey[2] === id) continue;
    count += 1;
    bytes += cursor.key[3];
    if (count > maxRecords || bytes > maxBytes) await tx.store.delete(cursor.primaryKey);
  }
  await tx.done;
}

/** Deletes the owner's least recently written records until `size` bytes are freed: room in an origin over quota. */
async function evictStalest(
  database: IDBPDatabase<RecordsDB>,
  range: IDBKeyRange,
  id: string,
  size: number,
): Promise<boolean> {
  const tx = database.transaction('records', 'readwrite');
  let freed = 0;
  for (
    let cursor = await tx.store.index('stored').openKeyCursor(range);
    cursor && freed < size;
    cursor = await cursor.continue()
  ) {
    if (cursor.primaryKey[2] === id) continue;
    freed += cursor.key[3];
    await tx.store.delete(cursor.primaryKey);
  }
  await tx.done;
  return freed > 0;
}

/** The browser's error for an origin over its quota. */
const isQuotaExceeded = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'QuotaExceededError';
