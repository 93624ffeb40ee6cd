import { openDB, type DBSchema } from 'idb';
import type { KeyRecord, KeyRecordStorage } from './key-ring.ts';

interface KeysDB extends DBSchema {
  keys: { key: string; value: KeyRecord };
}

/** The database every page and the service worker of an origin share, so a key revoked anywhere is refused everywhere. */
export const KEYS_DATABASE = 'lantern-keys';

/**
 * Key records in IndexedDB (hashes only, as everywhere). Every read goes to the database, not a cache: a key revoked
 * in one tab is refused on the very next request, whichever tab sends it.
 */
export function indexedDbKeyStorage(name = KEYS_DATABASE): KeyRecordStorage {
  let db: ReturnType<typeof openDB<KeysDB>> | undefined;
  const open = () =>
    (db ??= openDB<KeysDB>(name, 1, {
      upgrade: (database) => void database.createObjectStore('keys', { keyPath: 'info.id' }),
    }));
  return {
    all: async () => (await open()).getAll('keys'),
    put: async (record) => void (await (await open()).put('keys', record)),
  };
}
