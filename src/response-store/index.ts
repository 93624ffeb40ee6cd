/** Kept responses of the Responses API: the store interface, its limits, and the memory and IndexedDB stores. */
export {
  DEFAULT_RESPONSE_STORE_LIMITS,
  memoryResponseStore,
  type ResponseStore,
  type ResponseStoreLimits,
  type StoredResponse,
} from './response-store.ts';
export { indexedDbResponseStore, RESPONSES_DATABASE } from './indexeddb-response-store.ts';
