import type { DBSchema } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import { keyChanges } from './key-changes.ts';
import type { KeyRecord, KeyRecordStorage } from './key-ring.ts';

interface KeysDB extends DBSchema {
  keys: { key: string; value: KeyRecord };
}

/** The database every page and the service worker of an origin share, so a key revoked anywhere is refused everywhere. */
export const KEYS_DATABASE = 'lantern-keys';

/**
 * Key records in IndexedDB (hashes only, as everywhere). Every read goes to the database; every write is announced to
 * the origin's other contexts once committed (`keyChanges`), as is, to this context, the database going away under it
 * (deleted by another context, or cleared by the browser): so a KeyRing over it may answer keys it verified from
 * memory, and a key revoked in one tab is still refused on the very next request, whichever tab sends it. The
 * connection is long-lived (the service worker reads on every request that it does not answer from memory) and
 * survives the browser taking it away (see `reopeningDatabase`).
 */
export function indexedDbKeyStorage(name = KEYS_DATABASE): KeyRecordStorage {
  const changes = keyChanges(name);
  const withDatabase = reopeningDatabase<KeysDB>(
    name,
    1,
    (database) => {
      database.createObjectStore('keys', { keyPath: 'info.id' });
    },
    () => changes?.notifyHere(),
  );
  return {
    all: () => withDatabase((database) => database.getAll('keys')),
    put: async (record) => {
      await withDatabase(async (database) => void (await database.put('keys', record)));
      await changes?.announce();
    },
    // One readwrite transaction reads and writes: a page revoking a key while the service worker records its use
    // (two contexts, one database) cannot bring the key back.
    update: async (id, change, options) => {
      let changed = false;
      const found = await withDatabase(async (database) => {
        const transaction = database.transaction('keys', 'readwrite');
        const record = await transaction.store.get(id);
        const next = record && change(record);
        if (next) await transaction.store.put(next);
        await transaction.done;
        changed = next !== undefined;
        return record !== undefined;
      });
      if (changed && !options?.unseen) await changes?.announce();
      return found;
    },
    ...(changes && { watch: (listener: () => void) => changes.watch(listener) }),
  };
}
