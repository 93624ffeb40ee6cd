/** Per-key listable records (conversations, stored chat completions): the interface, limits, memory and IndexedDB. */
export {
  byCreation,
  creationClock,
  DEFAULT_RECORD_STORE_LIMITS,
  memoryRecordStore,
  recordSize,
  type KeptRecord,
  type RecordListQuery,
  type RecordPage,
  type RecordStore,
  type RecordStoreLimits,
} from './record-store.ts';
export { indexedDbRecordStore, RECORDS_DATABASE } from './indexeddb-record-store.ts';
