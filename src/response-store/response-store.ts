/**
 * Where the Responses API keeps what `store: true` asks it to keep (OpenAI's default): each response with the
 * conversation it answered, so that `previous_response_id` continues it, `item_reference` points into it, and
 * `GET`/`DELETE /v1/responses/{id}` find it. In memory in Node, in the origin's IndexedDB in browsers.
 *
 * Every key has a shelf of its own (issue 22): its responses and item ids are a namespace that no other key reads,
 * and its limits are its own, the oldest of its responses leaving first. When the store was one shelf for all keys,
 * one key's flood evicted everyone's responses, and an item id reused by another key (ids of input items are the
 * client's to choose) hid the first key's item from its `item_reference`s.
 */

/** One kept response. The store reads only the owner, ids and sizes; `data` is the API's, as JSON-ready values. */
export interface StoredResponse {
  /** `resp_…` */
  id: string;
  /** The id of the API key that created it: the shelf it is kept on. Only that key reads, continues or deletes it. */
  owner: string;
  /** When it was kept, in milliseconds since the epoch: the oldest leave first when a key's shelf is full. */
  storedAt: number;
  /** The ids of the items it holds (its output, and input items sent with ids), for `item_reference`s. */
  itemIds: string[];
  /** The response object and the conversation it answered. */
  data: unknown;
}

/**
 * How much a store keeps of each key's responses. 1,000 responses is months of one person's chats; 32 MiB is far
 * below any browser's quota for an origin and small next to a model, yet holds hundreds of long conversations (a
 * record holds its whole conversation, so that continuing it is one read and deleting an earlier response breaks
 * nothing). The limits are per key, so that no key's use displaces another's: the store holds at most the number of
 * keys times these. (In a browser the origin's quota may bind first: see {@link ResponseStore.put}.)
 */
export interface ResponseStoreLimits {
  /** Most responses kept of one key. */
  maxResponses: number;
  /** Most bytes kept of one key, counting each record's JSON in UTF-8. A single record larger than this is not kept. */
  maxBytes: number;
}

export const DEFAULT_RESPONSE_STORE_LIMITS: Readonly<ResponseStoreLimits> = Object.freeze({
  maxResponses: 1000,
  maxBytes: 32 * 1024 * 1024,
});

/**
 * The store the handler asks. Every read and delete names the key (`owner`) it is for, and finds only that key's
 * records: another key's ids, of responses or of items, do not exist for it. Records go in and come out as copies:
 * changing one afterwards changes nothing kept.
 *
 * @example
 * const store = memoryResponseStore();
 * await store.put({ id: 'resp_1', owner: 'key_1', storedAt: Date.now(), itemIds: ['msg_1'], data: { response } });
 * await store.findItem('key_1', 'msg_1'); // the record of resp_1
 * await store.findItem('key_2', 'msg_1'); // undefined: key_2 has no such item
 */
export interface ResponseStore {
  /**
   * Keeps a record on its owner's shelf (replacing one of the owner's with the same id), the owner's oldest leaving
   * first to keep the shelf within its limits. Resolves to false when the record alone is over the limits, so not
   * kept; rejects when the storage fails (an origin over its quota with nothing of the owner's left to let go).
   */
  put(record: StoredResponse): Promise<boolean>;
  get(owner: string, id: string): Promise<StoredResponse | undefined>;
  /** The owner's record that holds the item with this id: the newest, when several of the owner's do. */
  findItem(owner: string, itemId: string): Promise<StoredResponse | undefined>;
  /** Returns false when the owner has no such record. */
  delete(owner: string, id: string): Promise<boolean>;
}

/** A record's size as the limits count it: its JSON, in UTF-8 bytes. */
export function recordSize(record: StoredResponse): number {
  return new TextEncoder().encode(JSON.stringify(record)).length;
}

/** One key's records in memory, and the records holding each item id, oldest first. */
interface Shelf {
  records: Map<string, { record: StoredResponse; size: number }>;
  byItem: Map<string, Set<string>>;
  bytes: number;
}

/**
 * Records in a process's memory, gone when it ends: the default of `createHandler` in Node.
 *
 * @param limits - overrides of {@link DEFAULT_RESPONSE_STORE_LIMITS}, for each key.
 */
export function memoryResponseStore(limits: Partial<ResponseStoreLimits> = {}): ResponseStore {
  const { maxResponses, maxBytes } = { ...DEFAULT_RESPONSE_STORE_LIMITS, ...limits };
  const shelves = new Map<string, Shelf>();

  const remove = (owner: string, id: string): boolean => {
    const shelf = shelves.get(owner);
    const kept = shelf?.records.get(id);
    if (!shelf || !kept) return false;
    shelf.records.delete(id);
    shelf.bytes -= kept.size;
    for (const item of kept.record.itemIds) {
      const holders = shelf.byItem.get(item);
      holders?.delete(id);
      if (holders?.size === 0) shelf.byItem.delete(item);
    }
    // A key whose responses are all gone leaves nothing behind: the number of shelves stays the number of keys in use.
    if (shelf.records.size === 0) shelves.delete(owner);
    return true;
  };
  const oldest = (shelf: Shelf): string => {
    // Insertion order is the order of `storedAt` for records put as they are made; eviction takes the smallest anyway.
    let first: StoredResponse | undefined;
    for (const { record } of shelf.records.values()) if (!first || record.storedAt < first.storedAt) first = record;
    return first!.id;
  };
  const get = (owner: string, id: string): StoredResponse | undefined => {
    const kept = shelves.get(owner)?.records.get(id);
    return kept && structuredClone(kept.record);
  };

  return {
    async put(record) {
      const { owner } = record;
      const size = recordSize(record);
      remove(owner, record.id);
      if (size > maxBytes) return false;
      // Room first, then the record, as the IndexedDB store does: the shelf never holds more than its limits.
      for (let shelf = shelves.get(owner); shelf; shelf = shelves.get(owner)) {
        if (shelf.records.size < maxResponses && shelf.bytes + size <= maxBytes) break;
        remove(owner, oldest(shelf));
      }
      let shelf = shelves.get(owner);
      if (!shelf) shelves.set(owner, (shelf = { records: new Map(), byItem: new Map(), bytes: 0 }));
      shelf.records.set(record.id, { record: structuredClone(record), size });
      shelf.bytes += size;
      for (const item of record.itemIds) {
        const holders = shelf.byItem.get(item) ?? new Set();
        holders.add(record.id);
        shelf.byItem.set(item, holders);
      }
      return true;
    },
    async get(owner, id) {
      return get(owner, id);
    },
    async findItem(owner, itemId) {
      const holders = shelves.get(owner)?.byItem.get(itemId);
      // A set keeps insertion order: its last is the record put last.
      return holders && get(owner, [...holders].at(-1)!);
    },
    async delete(owner, id) {
      return remove(owner, id);
    },
  };
}
