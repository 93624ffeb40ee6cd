/**
 * A per-key store of listable records: what the Conversations API and stored chat completions keep, each in a
 * collection of its own. As the response store (../response-store/) does, every key has a shelf of its own: its ids
 * are a namespace no other key reads, its limits are its own, the least recently written of its records leaving first.
 * Records go in and come out as copies. Unlike responses, records are listed: by creation, oldest or newest first, a
 * page at a time after a cursor (an id), as OpenAI's lists are (`first_id`, `last_id`, `has_more`).
 *
 * The response store is the same mechanism plus an index of item ids; it could become a collection of this one with
 * that index added, and is left as it is for now.
 */

/** One kept record. The store reads only the owner, id, times and size; `data` is the API's, as JSON-ready values. */
export interface KeptRecord<T = unknown> {
  /** The record's id in its owner's namespace. */
  id: string;
  /** The id of the API key that made it: the shelf it is kept on. */
  owner: string;
  /** When it was made, in milliseconds since the epoch: lists are in this order (ties by id). Fixed by the caller. */
  createdAt: number;
  /** When it was last written: the least recently written leave first when a shelf is full. */
  storedAt: number;
  data: T;
}

/** How much a store keeps of each key's records: the store holds at most the number of keys times these. */
export interface RecordStoreLimits {
  /** Most records kept of one key. */
  maxRecords: number;
  /** Most bytes kept of one key, counting each record's JSON in UTF-8. A single record larger than this is not kept. */
  maxBytes: number;
}

export const DEFAULT_RECORD_STORE_LIMITS: Readonly<RecordStoreLimits> = Object.freeze({
  maxRecords: 1000,
  maxBytes: 32 * 1024 * 1024,
});

/** A page of a list: `limit` records after the cursor, in `order` of creation, the rest kept back (`hasMore`). */
export interface RecordListQuery<T = unknown> {
  limit: number;
  order: 'asc' | 'desc';
  /** The id of the record the page follows (in `order`); an id the owner does not have gives an empty page. */
  after?: string;
  /** Only the records whose data it accepts are listed (and counted by `limit`). */
  filter?: (data: T) => boolean;
}

export interface RecordPage<T = unknown> {
  records: KeptRecord<T>[];
  hasMore: boolean;
}

/**
 * The store the routes ask. Every call names the key (`owner`) it is for, and finds only that key's records.
 *
 * @example
 * const store = memoryRecordStore<{ title: string }>();
 * await store.put({ id: 'c_1', owner: 'key_1', createdAt: 1, storedAt: 1, data: { title: 'a' } });
 * await store.list('key_1', { limit: 20, order: 'desc' }); // { records: [the record of c_1], hasMore: false }
 * await store.get('key_2', 'c_1'); // undefined: key_2 has no such record
 */
export interface RecordStore<T = unknown> {
  /** The limits it keeps each key's records within: a caller may refuse a record that would not be kept. */
  readonly limits: Readonly<RecordStoreLimits>;
  /**
   * Keeps a record on its owner's shelf (replacing one of the owner's with the same id), the owner's least recently
   * written leaving first to keep the shelf within its limits. Resolves to false when the record alone is over the
   * limits, so not kept (a copy under its id is gone too); rejects when the storage fails.
   */
  put(record: KeptRecord<T>): Promise<boolean>;
  get(owner: string, id: string): Promise<KeptRecord<T> | undefined>;
  /** Returns false when the owner has no such record. */
  delete(owner: string, id: string): Promise<boolean>;
  list(owner: string, query: RecordListQuery<T>): Promise<RecordPage<T>>;
}

/** A record's size as the limits count it: its JSON, in UTF-8 bytes. */
export function recordSize(record: KeptRecord<unknown>): number {
  return new TextEncoder().encode(JSON.stringify(record)).length;
}

/** Creation order: by `createdAt`, then by id, so that a cursor has one place even among records of one millisecond. */
export const byCreation = (a: KeptRecord<unknown>, b: KeptRecord<unknown>): number =>
  a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * A clock for `createdAt` that never gives one value twice or goes back: records made in one millisecond list in the
 * order they were made.
 */
export function creationClock(now: () => number): () => number {
  let last = -Infinity;
  return () => (last = Math.max(now(), last + 0.001));
}

/**
 * Records in a process's memory, gone when it ends: the default of `createHandler`.
 *
 * @param limits - overrides of {@link DEFAULT_RECORD_STORE_LIMITS}, for each key.
 */
export function memoryRecordStore<T = unknown>(limits: Partial<RecordStoreLimits> = {}): RecordStore<T> {
  const { maxRecords, maxBytes } = { ...DEFAULT_RECORD_STORE_LIMITS, ...limits };
  const shelves = new Map<string, { records: Map<string, { record: KeptRecord<T>; size: number }>; bytes: number }>();

  const remove = (owner: string, id: string): boolean => {
    const shelf = shelves.get(owner);
    const kept = shelf?.records.get(id);
    if (!shelf || !kept) return false;
    shelf.records.delete(id);
    shelf.bytes -= kept.size;
    // A key whose records are all gone leaves nothing behind.
    if (shelf.records.size === 0) shelves.delete(owner);
    return true;
  };

  return {
    limits: Object.freeze({ maxRecords, maxBytes }),
    async put(record) {
      const { owner } = record;
      const size = recordSize(record);
      remove(owner, record.id);
      if (size > maxBytes) return false;
      // Room first, then the record: the shelf never holds more than its limits.
      for (let shelf = shelves.get(owner); shelf; shelf = shelves.get(owner)) {
        if (shelf.records.size < maxRecords && shelf.bytes + size <= maxBytes) break;
        let stalest: KeptRecord<T> | undefined;
        for (const { record: r } of shelf.records.values()) if (!stalest || r.storedAt < stalest.storedAt) stalest = r;
        remove(owner, stalest!.id);
      }
      let shelf = shelves.get(owner);
      if (!shelf) shelves.set(owner, (shelf = { records: new Map(), bytes: 0 }));
      shelf.records.set(record.id, { record: structuredClone(record), size });
      shelf.bytes += size;
      return true;
    },
    async get(owner, id) {
      const kept = shelves.get(owner)?.records.get(id);
      return kept && structuredClone(kept.record);
    },
    async delete(owner, id) {
      return remove(owner, id);
    },
    async list(owner, { limit, order, after, filter }) {
      const records = [...(shelves.get(owner)?.records.values() ?? [])].map(({ record }) => record);
      records.sort(byCreation);
      if (order === 'desc') records.reverse();
      let start = 0;
      if (after !== undefined) {
        const at = records.findIndex((record) => record.id === after);
        start = at < 0 ? records.length : at + 1;
      }
      const page: KeptRecord<T>[] = [];
      for (const record of records.slice(start)) {
        if (filter && !filter(record.data)) continue;
        if (page.length === limit) return { records: page, hasMore: true };
        page.push(structuredClone(record));
      }
      return { records: page, hasMore: false };
    },
  };
}
