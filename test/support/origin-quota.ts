import { IDBFactory } from 'fake-indexeddb';

/** What fake-indexeddb keeps of an object store, as far as the quota reads it (its internals: see below). */
interface RawObjectStore {
  name: string;
  records: { values(): Iterable<{ value: unknown }> };
  storeRecord(record: { value: unknown }, noOverwrite: boolean, rollbackLog?: unknown[]): unknown;
}

/**
 * A browser's storage quota on fake-indexeddb, which has none: while it holds, storing a record in an object store
 * named `responses` fails with a `QuotaExceededError` when the store would then hold more than `records` times that
 * record's JSON. The failure is a failed request, as a browser's is: the transaction aborts and every write of it is
 * rolled back, an eviction made in it too. Returns the function that lifts the quota.
 *
 * It patches fake-indexeddb's internal object store (reached through a throwaway database), because the quota must
 * act inside the transaction, where no public API reaches: a test-only stand-in for the browser's own accounting.
 */
export async function limitOrigin(records: number): Promise<() => void> {
  const raw = await rawObjectStorePrototype();
  const storeRecord = raw.storeRecord;
  raw.storeRecord = function (this: RawObjectStore, record, noOverwrite, rollbackLog) {
    const key = storeRecord.call(this, record, noOverwrite, rollbackLog);
    // Without a rollback log it is a rollback restoring what was there: never refused.
    if (this.name === 'responses' && rollbackLog) {
      let used = 0;
      for (const kept of this.records.values()) used += JSON.stringify(kept.value).length;
      if (used > records * JSON.stringify(record.value).length) {
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      }
    }
    return key;
  };
  return () => {
    raw.storeRecord = storeRecord;
  };
}

function rawObjectStorePrototype(): Promise<RawObjectStore> {
  return new Promise((resolve, reject) => {
    const open = new IDBFactory().open('probe');
    open.onupgradeneeded = () => {
      const store = open.result.createObjectStore('probe') as IDBObjectStore & { _rawObjectStore: RawObjectStore };
      resolve(Object.getPrototypeOf(store._rawObjectStore) as RawObjectStore);
    };
    open.onerror = () => reject(open.error ?? new Error('fake-indexeddb did not open'));
  });
}
