/**
 * Where the Responses API keeps what `store: true` asks it to keep (OpenAI's default): each response with the
 * conversation it answered, so that `previous_response_id` continues it, `item_reference` points into it, and
 * `GET`/`DELETE /v1/responses/{id}` find it. In memory in Node, in the origin's IndexedDB in browsers; bounded, the
 * oldest responses leaving first.
 */

/** One kept response. The store reads only the ids and sizes; `data` is the API's, as JSON-ready values. */
export interface StoredResponse {
  /** `resp_…` */
  id: string;
  /** The id of the API key that created it: only that key reads, continues or deletes it. */
  owner: string;
  /** When it was kept, in milliseconds since the epoch: the oldest leave first when the store is full. */
  storedAt: number;
  /** The ids of the items it holds (its output, and input items sent with ids), for `item_reference`s. */
  itemIds: string[];
  /** The response object and the conversation it answered. */
  data: unknown;
}

/**
 * How much a store keeps. 1,000 responses is months of one person's chats; 32 MiB is far below any browser's quota
 * for an origin and small next to a model, yet holds hundreds of long conversations (a record holds its whole
 * conversation, so that continuing it is one read and deleting an earlier response breaks nothing).
 */
export interface ResponseStoreLimits {
  /** Most responses kept. */
  maxResponses: number;
  /** Most bytes kept, counting each record's JSON in UTF-8. A single record larger than this is not kept. */
  maxBytes: number;
}

export const DEFAULT_RESPONSE_STORE_LIMITS: Readonly<ResponseStoreLimits> = Object.freeze({
  maxResponses: 1000,
  maxBytes: 32 * 1024 * 1024,
});

/**
 * The store the handler asks. Records go in and come out as copies: changing one afterwards changes nothing kept.
 *
 * @example
 * const store = memoryResponseStore();
 * await store.put({ id: 'resp_1', owner: 'key_1', storedAt: Date.now(), itemIds: ['msg_1'], data: { response } });
 * await store.findItem('msg_1'); // the record of resp_1
 */
export interface ResponseStore {
  /** Keeps a record (replacing one with the same id), then lets the oldest go until the store is within its limits. */
  put(record: StoredResponse): Promise<void>;
  get(id: string): Promise<StoredResponse | undefined>;
  /** The record that holds the item with this id. */
  findItem(itemId: string): Promise<StoredResponse | undefined>;
  /** Returns false when no such record exists. */
  delete(id: string): Promise<boolean>;
}

/** A record's size as the limits count it: its JSON, in UTF-8 bytes. */
export function recordSize(record: StoredResponse): number {
  return new TextEncoder().encode(JSON.stringify(record)).length;
}

/**
 * Records in a process's memory, gone when it ends: the default of `createHandler` in Node.
 *
 * @param limits - overrides of {@link DEFAULT_RESPONSE_STORE_LIMITS}.
 */
export function memoryResponseStore(limits: Partial<ResponseStoreLimits> = {}): ResponseStore {
  const { maxResponses, maxBytes } = { ...DEFAULT_RESPONSE_STORE_LIMITS, ...limits };
  // Insertion order is the order of `storedAt` for records put as they are made; eviction takes the smallest anyway.
  const records = new Map<string, { record: StoredResponse; size: number }>();
  const byItem = new Map<string, string>();
  let bytes = 0;

  const remove = (id: string): boolean => {
    const kept = records.get(id);
    if (!kept) return false;
    records.delete(id);
    bytes -= kept.size;
    for (const item of kept.record.itemIds) if (byItem.get(item) === id) byItem.delete(item);
    return true;
  };
  const oldest = (): string => {
    let first: StoredResponse | undefined;
    for (const { record } of records.values()) if (!first || record.storedAt < first.storedAt) first = record;
    return first!.id;
  };

  return {
    async put(record) {
      const size = recordSize(record);
      remove(record.id);
      if (size > maxBytes) return;
      records.set(record.id, { record: structuredClone(record), size });
      bytes += size;
      for (const item of record.itemIds) byItem.set(item, record.id);
      while (records.size > maxResponses || bytes > maxBytes) remove(oldest());
    },
    async get(id) {
      const kept = records.get(id);
      return kept && structuredClone(kept.record);
    },
    async findItem(itemId) {
      const id = byItem.get(itemId);
      return id === undefined ? undefined : this.get(id);
    },
    async delete(id) {
      return remove(id);
    },
  };
}
