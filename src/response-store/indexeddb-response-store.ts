import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
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
 * The connection is long-lived and the browser can take it away (site data cleared, another context deleting or
 * upgrading the database), as for the key store: a connection that closed or failed to open is forgotten and the next
 * call opens a fresh one; a call that meets a connection closed under it is tried once more.
 *
 * @param limits - overrides of {@link DEFAULT_RESPONSE_STORE_LIMITS}.
 */
export function indexedDbResponseStore(
  name = RESPONSES_DATABASE,
  limits: Partial<ResponseStoreLimits> = {},
): ResponseStore {
  const { maxResponses, maxBytes } = { ...DEFAULT_RESPONSE_STORE_LIMITS, ...limits };
  let current: Promise<IDBPDatabase<ResponsesDB>> | undefined;
  const forget = (connection: Promise<IDBPDatabase<ResponsesDB>>) => {
    if (current === connection) current = undefined;
  };
  const open = (): Promise<IDBPDatabase<ResponsesDB>> => {
    if (current) return current;
    const connection: Promise<IDBPDatabase<ResponsesDB>> = openDB<ResponsesDB>(name, 1, {
      upgrade: (database) => {
        const responses = database.createObjectStore('responses', { keyPath: 'id' });
        responses.createIndex('order', ['storedAt', 'size']);
        responses.createIndex('items', 'itemIds', { multiEntry: true });
      },
      blocking: () => {
        forget(connection);
        void connection.then((database) => database.close());
      },
      terminated: () => forget(connection),
    });
    current = connection;
    connection.catch(() => forget(connection));
    return connection;
  };
  const withDatabase = async <T>(use: (database: IDBPDatabase<ResponsesDB>) => Promise<T>): Promise<T> => {
    const connection = open();
    try {
      return await use(await connection);
    } catch (error) {
      if (!(error instanceof DOMException && error.name === 'InvalidStateError')) throw error;
      forget(connection);
      return use(await open());
    }
  };
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
