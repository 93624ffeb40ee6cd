import type { DBSchema } from 'idb';
import { reopeningDatabase } from '../storage/reopening-database.ts';
import {
  checkKey,
  DOCUMENT_TABLES,
  type DocumentStorage,
  type DocumentTable,
  type RecordKey,
} from './document-storage.ts';

/** One table: values under explicit array keys (no key path: the key is the storage's, not a field of the value). */
interface Table {
  key: string[];
  value: unknown;
}

interface DocumentsDB extends DBSchema {
  files: Table;
  file_bytes: Table;
  file_texts: Table;
  vector_stores: Table;
  vector_store_files: Table;
  file_batches: Table;
  chunks: Table;
  indexes: Table;
  batches: Table;
  batch_results: Table;
}

/** The database every page and the service worker of an origin share: files uploaded in one are seen in all. */
export const DOCUMENTS_DATABASE = 'lantern-documents';

/**
 * 1: one object store per table, keyed by arrays of strings given on each put. 2: `file_texts`, each file's text as
 * extracted once (a database of version 1 gains it; nothing else changes). 3: `batches` and
 * `batch_results`, the Batch API's (an older database gains them the same way).
 */
const VERSION = 3;

/**
 * The records of a key prefix, as one range of IndexedDB's key order: from the prefix itself to `[...prefix, []]`.
 * An array sorts after every string, so `[...prefix, []]` comes after every longer key starting with the prefix, and
 * before the next prefix (`['a', []]` < `['ab']`, since `'a'` < `'ab'`): the range is element-wise, as the contract
 * asks. The empty prefix is the whole store: no range at all.
 */
const range = (prefix: RecordKey): IDBKeyRange | undefined =>
  prefix.length === 0 ? undefined : IDBKeyRange.bound([...prefix], [...prefix, []]);

/**
 * Records in the origin's IndexedDB, shared by the service worker and every tab: what the service worker's Files and
 * Vector Stores routes keep. One object store per table; values are structured clones, as IndexedDB makes them, so
 * typed arrays (file bytes, embeddings) are kept as themselves. A put that meets the origin's quota rejects with the
 * browser's `QuotaExceededError`: making room is the caller's decision (which key's data may go is an API matter).
 *
 * The connection is long-lived and survives the browser taking it away (see `reopeningDatabase`), as the response
 * store's: a tab deleting the database, or cleared site data, does not leave the service worker failing.
 *
 * @param name - the database: {@link DOCUMENTS_DATABASE} in the browser, another in tests.
 */
export function indexedDbDocumentStorage(name = DOCUMENTS_DATABASE): DocumentStorage {
  const withDatabase = reopeningDatabase<DocumentsDB>(name, VERSION, (database) => {
    for (const table of DOCUMENT_TABLES) {
      if (!database.objectStoreNames.contains(table)) database.createObjectStore(table);
    }
  });

  return {
    async get<T>(table: DocumentTable, key: RecordKey) {
      checkKey(table, key, 1);
      return withDatabase(async (database) => (await database.get(table, [...key])) as T | undefined);
    },
    async put(table, key, value) {
      checkKey(table, key, 1);
      return withDatabase(async (database) => void (await database.put(table, value, [...key])));
    },
    async delete(table, key) {
      checkKey(table, key, 1);
      return withDatabase(async (database) => {
        // Read and delete in one transaction: two deletes at once answer true once.
        const tx = database.transaction(table, 'readwrite');
        const found = (await tx.store.count([...key])) > 0;
        if (found) await tx.store.delete([...key]);
        await tx.done;
        return found;
      });
    },
    async list<T>(table: DocumentTable, prefix: RecordKey) {
      checkKey(table, prefix, 0);
      // getAll answers in key order: IndexedDB's order of arrays is the contract's.
      return withDatabase(async (database) => (await database.getAll(table, range(prefix))) as T[]);
    },
    async deleteAll(table, prefix) {
      checkKey(table, prefix, 0);
      return withDatabase(async (database) => {
        // Counted and deleted in one transaction: the count is what went, whatever another context writes meanwhile.
        const tx = database.transaction(table, 'readwrite');
        const keys = range(prefix);
        const count = await tx.store.count(keys);
        if (count > 0) await (keys ? tx.store.delete(keys) : tx.store.clear());
        await tx.done;
        return count;
      });
    },
  };
}
