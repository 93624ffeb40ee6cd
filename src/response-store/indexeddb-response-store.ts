import type { DBSchema } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import {
  DEFAULT_RESPONSE_STORE_LIMITS,
  recordSize,
  type ResponseStore,
  type ResponseStoreLimits,
  type StoredResponse,
} from './response-store.ts';

/** A record as kept: with its size, which the `order` index carries so that eviction reads no record's data. */
type SizedRecord = StoredResponse & { size: number };

interface ResponsesDB extends DBSchema {
  responses: {
    key: string;
    value: SizedRecord;
    indexes: { order: [number, number]; items: string };
  };
}

/** The database every page and the service worker of an origin share. */
export const RESPONSES_DATABASE = 'lantern-responses';

/**
 * Records in the origin's IndexedDB, shared by the service worker and every tab: what the service worker's handler
 * keeps. One object store, indexed by `[storedAt, size]` (eviction walks it oldest first, reading keys only) and by
 * item id (a multi-entry index, for `item_reference`). A put and the eviction it causes are one transaction.
 *
 * The connection is long-lived and survives the browser taking it away (see `reopeningDatabase`), as the key store's.
 *
 * @param limits - overrides of {@link DEFAULT_RESPONSE_STORE_LIMITS}.
 */
export function indexedDbResponseStore(
  name = RESPONSES_DATABASE,
  limits: Partial<ResponseStoreLimits> = {},
): ResponseStore {
  const { maxResponses, maxBytes } = { ...DEFAULT_RESPONSE_STORE_LIMITS, ...limits };
  const withDatabase = reopeningDatabase<ResponsesDB>(name, 1, (database) => {
    const responses = database.createObjectStore('responses', { keyPath: 'id' });
    responses.createIndex('order', ['storedAt', 'size']);
    responses.createIndex('items', 'itemIds', { multiEntry: true });
  });
  const strip = (record: SizedRecord | undefined): StoredResponse | undefined => {
    if (!record) return undefined;
    const { size: _size, ...stored } = record;
    return stored;
  };

  return {
    put: (record) =>
      withDatabase(async (database) => {
        const size = recordSize(record);
        const tx = database.transaction('responses', 'readwrite');
        await tx.store.delete(record.id);
        if (size <= maxBytes) await tx.store.put({ ...record, size });
        // Newest first: keep what fits, let everything older go.
        let count = 0;
        let bytes = 0;
        for (
          let cursor = await tx.store.index('order').openKeyCursor(null, 'prev');
          cursor;
          cursor = await cursor.continue()
        ) {
          count += 1;
          bytes += cursor.key[1];
          if (count > maxResponses || bytes > maxBytes) await tx.store.delete(cursor.primaryKey);
        }
        await tx.done;
      }),
    get: (id) => withDatabase(async (database) => strip(await database.get('responses', id))),
    findItem: (itemId) =>
      withDatabase(async (database) => strip(await database.getFromIndex('responses', 'items', itemId))),
    delete: (id) =>
      withDatabase(async (database) => {
        const tx = database.transaction('responses', 'readwrite');
        const found = (await tx.store.getKey(id)) !== undefined;
        if (found) await tx.store.delete(id);
        await tx.done;
        return found;
      }),
  };
}
