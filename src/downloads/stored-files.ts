/**
 * Where downloaded model files live in the browser: the Cache API, in one cache of Lantern's own. A file arrives in
 * parts, each stored as soon as it is received, so a transfer that breaks keeps what it got; a record per file says
 * how far it got, from which copy (its ETag), and whether it is complete. A complete file stays as its parts and is
 * read back as one Blob of them (no copy, whatever its size), unless an engine reads it from a cache of its own
 * (web-llm's `webllm/model`): then it is put there, whole, under the URL the engine asks for, and its parts go.
 */

/** Lantern's cache of downloaded model files: their parts, their records and the models' manifests. */
export const DOWNLOADS_CACHE = 'lantern-downloads';

/** Keys of what is not a file itself (records, parts, manifests): URLs under a host that never resolves. */
const KEY_BASE = 'https://lantern-downloads.invalid/';

/** What is known of one model file: where it goes, what it should be, and how much of it is stored. */
export interface FileRecord {
  /** The URL an engine asks for: the file's name in every store. */
  url: string;
  /** Where the complete file is kept: `DOWNLOADS_CACHE` (as its parts) or the name of an engine's own cache. */
  cache: string;
  /** The file's size in bytes, when a listing or the server said. */
  size?: number;
  /** The SHA-256 of its content (hex), when the hub lists one (LFS files). */
  sha256?: string;
  /** The ETag of the copy the stored parts came from: a resumed transfer asks for the rest of that copy only. */
  etag?: string;
  /** Bytes stored so far. */
  received: number;
  /** The length of each stored part, in order. */
  parts: number[];
  complete: boolean;
  /** An optional file the server does not have (it answered 404): engines are told so without the network. */
  absent?: boolean;
  /** When the file was last read by an engine or stored, in milliseconds since the epoch. */
  lastUsed: number;
}

const recordKey = (url: string) => `${KEY_BASE}file/${encodeURIComponent(url)}`;
const partKey = (url: string, index: number) => `${KEY_BASE}part/${index}/${encodeURIComponent(url)}`;
const manifestKey = (name: string) => `${KEY_BASE}manifest/${encodeURIComponent(name)}`;

/**
 * The store of downloaded files, over a CacheStorage (the browser's `caches`; an in-memory one in Node tests). One
 * writer per file at a time: `downloadFile` holds a Web Lock on the file while it writes.
 */
export class StoredFiles {
  readonly #storage: CacheStorage;
  #cache: Promise<Cache> | undefined;

  constructor(storage: CacheStorage = globalThis.caches) {
    this.#storage = storage;
  }

  #open(): Promise<Cache> {
    this.#cache ??= this.#storage.open(DOWNLOADS_CACHE);
    return this.#cache;
  }

  /** The record of a file, or undefined when nothing of it was ever stored. */
  async record(url: string): Promise<FileRecord | undefined> {
    const stored = await (await this.#open()).match(recordKey(url));
    return stored ? ((await stored.json()) as FileRecord) : undefined;
  }

  async saveRecord(record: FileRecord): Promise<void> {
    await (await this.#open()).put(recordKey(record.url), Response.json(record));
  }

  /** Every file record, in no particular order. */
  async records(): Promise<FileRecord[]> {
    const cache = await this.#open();
    const keys = (await cache.keys()).filter((request) => request.url.startsWith(`${KEY_BASE}file/`));
    const records = await Promise.all(keys.map(async (key) => (await cache.match(key))?.json() as Promise<FileRecord>));
    return records.filter(Boolean);
  }

  /** Stores the next part of a file and records it: once this resolves, a broken transfer resumes after these bytes. */
  async appendPart(record: FileRecord, bytes: Uint8Array): Promise<void> {
    if (bytes.byteLength === 0) return;
    await (await this.#open()).put(partKey(record.url, record.parts.length), new Response(bytes.slice()));
    record.parts.push(bytes.byteLength);
    record.received += bytes.byteLength;
    record.lastUsed = Date.now();
    await this.saveRecord(record);
  }

  /** The stored parts of a file, in order, as Blobs (on disk in browsers: reading them costs no memory up front). */
  async partBlobs(record: FileRecord): Promise<Blob[]> {
    const cache = await this.#open();
    return Promise.all(
      record.parts.map(async (_, index) => {
        const part = await cache.match(partKey(record.url, index));
        if (!part) throw new Error(`A stored part of ${record.url} is missing (part ${index}).`);
        return part.blob();
      }),
    );
  }

  /**
   * Marks a file complete. A file for an engine's own cache is put there whole, under its URL, and its parts are
   * removed; one of Lantern's cache keeps its parts.
   */
  async complete(record: FileRecord): Promise<void> {
    if (record.cache !== DOWNLOADS_CACHE) {
      const whole = new Blob(await this.partBlobs(record));
      const engineCache = await this.#storage.open(record.cache);
      await engineCache.put(record.url, new Response(whole, { headers: fileHeaders(record) }));
      await this.#dropParts(record);
      record.parts = [];
    }
    record.complete = true;
    record.lastUsed = Date.now();
    await this.saveRecord(record);
  }

  /**
   * The complete file at `url` as a Response (200, with its length), or undefined when it is not stored complete.
   * Counts as a use (`lastUsed`).
   */
  async response(url: string): Promise<Response | undefined> {
    const record = await this.record(url);
    if (!record?.complete || record.absent) return undefined;
    let body: Blob | undefined;
    if (record.cache === DOWNLOADS_CACHE) body = new Blob(await this.partBlobs(record));
    else body = await (await (await this.#storage.open(record.cache)).match(url))?.blob();
    if (!body) return undefined; // the engine's cache was cleared behind our back: the file is not stored any more
    await this.touch(record);
    return new Response(body, { headers: fileHeaders(record) });
  }

  /** Records a use of the file, at most once a minute (each write costs a Cache API put). */
  async touch(record: FileRecord): Promise<void> {
    if (Date.now() - record.lastUsed < 60_000) return;
    record.lastUsed = Date.now();
    await this.saveRecord(record);
  }

  /** Removes what is stored of a file (parts, record, and the whole file in an engine's cache); resolves with its bytes. */
  async remove(url: string): Promise<number> {
    const record = await this.record(url);
    if (!record) return 0;
    await this.#dropParts(record);
    if (record.cache !== DOWNLOADS_CACHE) await (await this.#storage.open(record.cache)).delete(url);
    await (await this.#open()).delete(recordKey(url));
    return record.received;
  }

  /** Forgets the stored bytes of a file (a copy that changed, or failed its check) and keeps what is known of it. */
  async restart(record: FileRecord): Promise<void> {
    await this.#dropParts(record);
    record.parts = [];
    record.received = 0;
    record.complete = false;
    delete record.etag;
    await this.saveRecord(record);
  }

  async #dropParts(record: FileRecord): Promise<void> {
    const cache = await this.#open();
    await Promise.all(record.parts.map((_, index) => cache.delete(partKey(record.url, index))));
  }

  /** A stored JSON document of the downloads' own (a model's manifest, kept for offline use), by name. */
  async readJSON<T>(name: string): Promise<T | undefined> {
    const stored = await (await this.#open()).match(manifestKey(name));
    return stored ? ((await stored.json()) as T) : undefined;
  }

  async writeJSON(name: string, value: unknown): Promise<void> {
    await (await this.#open()).put(manifestKey(name), Response.json(value));
  }

  /** The names of the stored JSON documents. */
  async jsonNames(): Promise<string[]> {
    const prefix = `${KEY_BASE}manifest/`;
    return (await (await this.#open()).keys())
      .filter((request) => request.url.startsWith(prefix))
      .map((request) => decodeURIComponent(request.url.slice(prefix.length)));
  }

  async deleteJSON(name: string): Promise<void> {
    await (await this.#open()).delete(manifestKey(name));
  }
}

/** A stored file's headers: its type by its name, its length, the ETag of its copy. */
function fileHeaders(record: FileRecord): Headers {
  const headers = new Headers({ 'content-type': contentType(record.url), 'content-length': String(record.received) });
  if (record.etag) headers.set('etag', record.etag);
  return headers;
}

const contentType = (url: string) =>
  /\.json$/.test(new URL(url).pathname) ? 'application/json' : 'application/octet-stream';
