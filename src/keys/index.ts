/** API keys: the store interface, the key ring that implements it over pluggable storage, and the key format. */
export type { IssuedKey, KeyCheck, KeyInfo, KeyStore } from './key-store.ts';
export {
  KeyRing,
  LAST_USED_INTERVAL_S,
  memoryAppKeys,
  memoryKeyStorage,
  type AppKeyStorage,
  type KeyRecord,
  type KeyRecordStorage,
} from './key-ring.ts';
export { indexedDbKeyStorage, KEYS_DATABASE } from './indexeddb-key-storage.ts';
export { APP_KEY_PREFIX, localStorageAppKeys } from './local-storage-app-keys.ts';
export { KEY_PREFIX } from './key-crypto.ts';
