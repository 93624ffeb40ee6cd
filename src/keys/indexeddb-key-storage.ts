import type { DBSchema } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import type { KeyRecord, KeyRecordStorage } from './key-ring.ts';

interface KeysDB extends DBSchema {
  keys: { key: string; value: KeyRecord };
}

/** The database every page and the service worker of an origin share, so a key revoked anywhere is refused everywhere. */
export const KEYS_DATABASE = 'lantern-keys';

/**
 * Key records in IndexedDB (hashes only, as everywhere). Every read goes to the database, not a cache: a key revoked
 * in one tab is refused on the very next request, whichever tab sends it. The connection is long-lived (the service
 * worker reads on every request) and survives the browser taking it away (see `reopeningDatabase`).
 */
export function indexedDbKeyStorage(name = KEYS_DATABASE): KeyRecordStorage {
  const withDatabase = reopeningDatabase<KeysDB>(name, 1, (database) => {
    database.createObjectStore('keys', { keyPath: 'info.id' });
  });
  return {
    all: () => withDatabase((database) => database.getAll('keys')),
    put: (record) => withDatabase(async (database) => void (await database.put('keys', record))),
    // One readwrite transaction reads and writes: a page revoking a key while the service worker records its use
    // (two contexts, one database) cannot bring the key back.
    update: (id, change) =>
      withDatabase(async (database) => {
        const transaction = database.transaction('keys', 'readwrite');
        const record = await transaction.store.get(id);
        const next = record && change(record);
        if (next) await transaction.store.put(next);
        await transaction.done;
        return record !== undefined;
      }),
  };
}
