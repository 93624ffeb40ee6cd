/** API keys: the store interface, the key ring that implements it over pluggable storage, and the key format. */
export type { IssuedKey, KeyCheck, KeyInfo, KeyStore } from './key-store.ts';
export { KeyRing, memoryKeyStorage, type KeyRecord, type KeyRecordStorage } from './key-ring.ts';
export { indexedDbKeyStorage, KEYS_DATABASE } from './indexeddb-key-storage.ts';
export { KEY_PREFIX } from './key-crypto.ts';
