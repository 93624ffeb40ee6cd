/**
 * Where the Files and Vector Stores APIs keep what they are given: a few tables of records under array keys, the first
 * element of every key the owner (the id of the API key that made it), so that one key's data is one prefix, listed
 * and deleted at once and never read by another. In memory, in a directory on disk (Node), or in the origin's
 * IndexedDB (browsers). The storage knows nothing of files or vector stores: the service above it decides the keys
 * and the shapes of values.
 */

/** The tables of the Files, Vector Stores and Batch APIs. Keys are arrays of strings, the first always the owner (the API key id). */
export type DocumentTable =
  | 'files'
  | 'file_bytes'
  | 'file_texts'
  | 'vector_stores'
  | 'vector_store_files'
  | 'file_batches'
  | 'chunks'
  | 'indexes'
  | 'batches'
  | 'batch_results';

/** Every table, in one list: what the backends create, and what they accept at run time. */
export const DOCUMENT_TABLES: readonly DocumentTable[] = Object.freeze([
  'files',
  'file_bytes',
  'file_texts',
  'vector_stores',
  'vector_store_files',
  'file_batches',
  'chunks',
  'indexes',
  'batches',
  'batch_results',
]);

/**
 * A record's key: one string or more, the owner first (`[owner, 'file-abc']`, `[owner, 'vs_abc', 'file-abc', '0007']`).
 * Keys sort element-wise, each element by UTF-16 code units, a key before every longer key it starts: IndexedDB's
 * order of arrays of strings, which every backend keeps.
 */
export type RecordKey = readonly string[];

/**
 * A table storage: what the Files and Vector Stores service reads and writes. Values are structured-clonable data:
 * plain objects, arrays, strings, numbers, booleans, null, Uint8Array, Float32Array (and arrays of them). Every value
 * goes in and comes out as a copy: changing one afterwards changes nothing kept.
 *
 * @example
 * const storage = memoryDocumentStorage();
 * await storage.put('files', ['key_1', 'file-abc'], { id: 'file-abc', bytes: 3 });
 * await storage.put('file_bytes', ['key_1', 'file-abc'], new Uint8Array([1, 2, 3]));
 * await storage.list('files', ['key_1']); // [{ id: 'file-abc', bytes: 3 }]
 * await storage.list('files', ['key_2']); // []: another key's files do not exist for it
 */
export interface DocumentStorage {
  get<T>(table: DocumentTable, key: RecordKey): Promise<T | undefined>;
  /** Writes (replacing) a value. Rejects with the backend's error when storage is full (IndexedDB's QuotaExceededError, disk ENOSPC) — the caller maps it. */
  put(table: DocumentTable, key: RecordKey, value: unknown): Promise<void>;
  /** Resolves false when there was nothing under the key. */
  delete(table: DocumentTable, key: RecordKey): Promise<boolean>;
  /** Every value whose key starts with `prefix` (element-wise; [] = the whole table), in key order (element-wise string order). */
  list<T>(table: DocumentTable, prefix: RecordKey): Promise<T[]>;
  /** Deletes every value whose key starts with `prefix`; resolves to how many. */
  deleteAll(table: DocumentTable, prefix: RecordKey): Promise<number>;
}

/**
 * Throws unless `table` is one of {@link DOCUMENT_TABLES} and `key` an array of strings, of at least one (`atLeast`
 * 1: a record's key) or none (0: a prefix). Checked at run time too, since a table or key part that reached the
 * directory storage unchecked would name a path: every backend refuses the same calls.
 */
export function checkKey(table: DocumentTable, key: RecordKey, atLeast: 0 | 1): void {
  if (!DOCUMENT_TABLES.includes(table)) throw new TypeError(`No such document table: ${String(table)}`);
  if (!Array.isArray(key) || key.length < atLeast || !key.every((part) => typeof part === 'string')) {
    throw new TypeError(
      `A ${atLeast ? 'record key' : 'key prefix'} is an array of ${atLeast ? 'one string or more' : 'strings'}`,
    );
  }
}

/** The order of keys: element-wise by UTF-16 code units (as `<` compares strings, and IndexedDB), shorter first. */
export function compareKeys(a: RecordKey, b: RecordKey): number {
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/** Whether `key` starts with `prefix`, element by element: `['ab']` does not start with `['a']`. */
export function hasPrefix(key: RecordKey, prefix: RecordKey): boolean {
  return prefix.length <= key.length && prefix.every((part, i) => key[i] === part);
}
