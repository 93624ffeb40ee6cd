import {
  checkKey,
  compareKeys,
  DOCUMENT_TABLES,
  hasPrefix,
  type DocumentStorage,
  type DocumentTable,
} from './document-storage.ts';

/** A record as kept in memory: its key beside its value, for listing by prefix without decoding the map's keys. */
interface Entry {
  key: string[];
  value: unknown;
}

/**
 * Records in a process's memory, gone when it ends: for tests, and for a Node server given no directory. One map per
 * table, keyed by the key's JSON (unambiguous, whatever the strings hold: `['a,b']` and `['a', 'b']` differ). Values
 * are structured clones going in and coming out, as IndexedDB's are, so that the backends behave alike: a typed
 * array comes back as its own class, and nothing the caller holds is the kept value.
 */
export function memoryDocumentStorage(): DocumentStorage {
  const tables = new Map<DocumentTable, Map<string, Entry>>(DOCUMENT_TABLES.map((table) => [table, new Map()]));
  const entries = (table: DocumentTable) => tables.get(table)!;
  // Sorted on each call: a table of one owner's chunks is thousands of entries at most, listed far less often than written.
  const matching = (table: DocumentTable, prefix: readonly string[]): [string, Entry][] =>
    [...entries(table)].filter(([, entry]) => hasPrefix(entry.key, prefix));

  return {
    async get<T>(table: DocumentTable, key: readonly string[]) {
      checkKey(table, key, 1);
      const entry = entries(table).get(JSON.stringify(key));
      return entry && (structuredClone(entry.value) as T);
    },
    async put(table, key, value) {
      checkKey(table, key, 1);
      entries(table).set(JSON.stringify(key), { key: [...key], value: structuredClone(value) });
    },
    async delete(table, key) {
      checkKey(table, key, 1);
      return entries(table).delete(JSON.stringify(key));
    },
    async list<T>(table: DocumentTable, prefix: readonly string[]) {
      checkKey(table, prefix, 0);
      return matching(table, prefix)
        .sort(([, a], [, b]) => compareKeys(a.key, b.key))
        .map(([, entry]) => structuredClone(entry.value) as T);
    },
    async deleteAll(table, prefix) {
      checkKey(table, prefix, 0);
      const gone = matching(table, prefix);
      for (const [id] of gone) entries(table).delete(id);
      return gone.length;
    },
  };
}
