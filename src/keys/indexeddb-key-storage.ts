import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import type { KeyRecord, KeyRecordStorage } from './key-ring.ts';

interface KeysDB extends DBSchema {
  keys: { key: string; value: KeyRecord };
}

/** The database every page and the service worker of an origin share, so a key revoked anywhere is refused everywhere. */
export const KEYS_DATABASE = 'lantern-keys';

/**
 * Key records in IndexedDB (hashes only, as everywhere). Every read goes to the database, not a cache: a key revoked
 * in one tab is refused on the very next request, whichever tab sends it.
 *
 * The connection is long-lived (the service worker reads on every request) and the browser can take it away: it
 * closes it when the origin's storage is cleared (`close` event), and another context deleting or upgrading the
 * database asks it to close (`versionchange`), waiting until it does. So the store closes on request, forgets a
 * connection that closed or failed to open, and opens a fresh one on its next read; a read that meets a connection
 * closed under it is tried once more on a fresh one. Without this, one cleared storage answered 500 until the
 * service worker restarted, and a page deleting the database waited for as long as the service worker lived.
 */
export function indexedDbKeyStorage(name = KEYS_DATABASE): KeyRecordStorage {
  let current: Promise<IDBPDatabase<KeysDB>> | undefined;
  const forget = (connection: Promise<IDBPDatabase<KeysDB>>) => {
    if (current === connection) current = undefined;
  };
  const open = (): Promise<IDBPDatabase<KeysDB>> => {
    if (current) return current;
    const connection: Promise<IDBPDatabase<KeysDB>> = openDB<KeysDB>(name, 1, {
      upgrade: (database) => void database.createObjectStore('keys', { keyPath: 'info.id' }),
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
  /** Runs `use` on the connection; once more on a fresh one when this one was closed under it. */
  const withDatabase = async <T>(use: (database: IDBPDatabase<KeysDB>) => Promise<T>): Promise<T> => {
    const connection = open();
    try {
      return await use(await connection);
    } catch (error) {
      if (!(error instanceof DOMException && error.name === 'InvalidStateError')) throw error;
      forget(connection);
      return use(await open());
    }
  };
  return {
    all: () => withDatabase((database) => database.getAll('keys')),
    put: (record) => withDatabase(async (database) => void (await database.put('keys', record))),
  };
}
