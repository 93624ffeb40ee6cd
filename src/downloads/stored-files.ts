/**
 * Where downloaded model files live in the browser: the Cache API, in one cache of Lantern's own. A file arrives in
 * parts, each stored as soon as it is received, so a transfer that breaks keeps what it got; a record per file says
 * how far it got, from which copy (its ETag), and whether it is complete. A complete file stays as its parts and is
 * read back as one Blob of them (no copy, whatever its size), unless an engine reads it from a cache of its own
 * (web-llm's `webllm/model`): then it is put there, whole, under the URL the engine asks for, and its parts go.
 *
 * A record is kept per file *and per source* (the hub, a mirror, the app's CDN: where its bytes were fetched from), so
 * that a mirror's bytes are never taken for the hub's or another mirror's, whatever URL the engine knows the file by
 * (issue 41). A file from the hub itself (its source is its URL) keeps the key it had before sources were recorded.
 */

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/** Lantern's cache of downloaded model files: their parts, their records and the models' manifests. */
export const DOWNLOADS_CACHE = 'lantern-downloads';

/** Keys of what is not a file itself (records, parts, manifests): URLs under a host that never resolves. */
const KEY_BASE = 'https://lantern-downloads.invalid/';

/**
 * Headers of a file Lantern put whole in an engine's cache: which source's copy it is and its SHA-256, so that a file
 * written there by anyone else (the engine fetching it itself, another source's copy) is not taken for this record's.
 */
const SOURCE_HEADER = 'x-lantern-source';
const SHA256_HEADER = 'x-lantern-sha256';

/** A file as a download names it: the URL engines ask for, and where its bytes come from (default: that URL). */
export interface FileRef {
  url: string;
  source?: string | undefined;
}

/** What is known of one model file: where it goes, what it should be, and how much of it is stored. */
export interface FileRecord {
  /** The URL an engine asks for: the file's name in every store. */
  url: string;
  /**
   * Where its bytes were fetched from. Records stored before sources were recorded have none until the upgrade of the
   * store (`upgradeStore` in src/engines/model-files.ts) gives them the one their model's manifest names.
   */
  source?: string;
  /** Where the complete file is kept: `DOWNLOADS_CACHE` (as its parts) or the name of an engine's own cache. */
  cache: string;
  /** The file's size in bytes, when a listing or the server said. */
  size?: number;
  /** The SHA-256 (hex) the listing gives for its content, when it gives one: a complete file was checked against it. */
  sha256?: string;
  /** The SHA-256 (hex) of the complete file's bytes, as Lantern hashed them while storing them. */
  digest?: string;
  /** The ETag of the copy the stored parts came from: a resumed transfer asks for the rest of that copy only. */
  etag?: string;
  /** Bytes stored so far. */
  received: number;
  /** The length of each stored part, in order. */
  parts: number[];
  /** The key its parts are stored under; records from before sources were recorded have none (parts by URL). */
  partsKey?: string;
  complete: boolean;
  /** An optional file the server does not have (it answered 404): engines are told so without the network. */
  absent?: boolean;
  /** When the file was last read by an engine or stored, in milliseconds since the epoch. */
  lastUsed: number;
}

/** A record's identity: its URL, and its source when that is elsewhere (a hub file's record keeps its old key). */
const recordId = (url: string, source: string) => (source === url ? url : `${url} from ${source}`);
const sourceOf = (file: FileRef) => file.source ?? file.url;
const recordKey = (id: string) => `${KEY_BASE}file/${encodeURIComponent(id)}`;
const partKey = (record: FileRecord, index: number) =>
  record.partsKey === undefined
    ? `${KEY_BASE}part/${index}/${encodeURIComponent(record.url)}`
    : `${KEY_BASE}parts/${encodeURIComponent(record.partsKey)}/${index}`;
const manifestKey = (name: string) => `${KEY_BASE}manifest/${encodeURIComponent(name)}`;

/**
 * Which source's copy of each URL the engines of this realm read (transformers.js asks the store by URL only): the one
 * the last preparation of a model here checked (`readByEngines`). Per CacheStorage, so that stores over different
 * storages (tests) do not share it.
 */
const engineSources = new WeakMap<CacheStorage, Map<string, string>>();

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

  /** The record of a file from its source, or undefined when nothing of it was ever stored from there. */
  async record(file: FileRef): Promise<FileRecord | undefined> {
    const stored = await (await this.#open()).match(recordKey(recordId(file.url, sourceOf(file))));
    return stored ? ((await stored.json()) as FileRecord) : undefined;
  }

  /** A new record of a file from its source, with nothing stored yet. */
  newRecord(file: FileRef, cache: string): FileRecord {
    const id = recordId(file.url, sourceOf(file));
    return {
      url: file.url,
      source: sourceOf(file),
      cache,
      received: 0,
      parts: [],
      partsKey: id,
      complete: false,
      lastUsed: Date.now(),
    };
  }

  async saveRecord(record: FileRecord): Promise<void> {
    await (await this.#open()).put(recordKey(recordId(record.url, record.source ?? record.url)), Response.json(record));
  }

  /**
   * Gives a record stored before sources were recorded the source its bytes came from, and moves it to that source's
   * key (its parts stay where they are: `partsKey` keeps saying where).
   */
  async adopt(record: FileRecord, source: string): Promise<void> {
    if (record.source !== undefined) return;
    record.source = source;
    await this.saveRecord(record);
    if (source !== record.url) await (await this.#open()).delete(recordKey(record.url));
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
    // Its length in a header: `holds` checks it without reading the part.
    const headers = { 'content-length': String(bytes.byteLength) };
    await (await this.#open()).put(partKey(record, record.parts.length), new Response(bytes.slice(), { headers }));
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
        const part = await cache.match(partKey(record, index));
        if (!part) throw new Error(`A stored part of ${record.url} is missing (part ${index}).`);
        return part.blob();
      }),
    );
  }

  /**
   * Marks a file complete. A file for an engine's own cache is put there whole, under its URL, with the headers that
   * say whose copy it is, and its parts are removed; one of Lantern's cache keeps its parts. Another source's copy that
   * was in the engine's cache is replaced: its record is marked incomplete (it has no bytes left).
   */
  async complete(record: FileRecord): Promise<void> {
    if (record.cache !== DOWNLOADS_CACHE) {
      const whole = new Blob(await this.partBlobs(record));
      const engineCache = await this.#storage.open(record.cache);
      const displaced = (await engineCache.match(record.url))?.headers.get(SOURCE_HEADER);
      await engineCache.put(record.url, new Response(whole, { headers: fileHeaders(record) }));
      await this.#dropParts(record);
      record.parts = [];
      if (displaced && displaced !== record.source) {
        const other = await this.record({ url: record.url, source: displaced });
        if (other?.complete) await this.restart(other);
      }
    }
    record.complete = true;
    record.lastUsed = Date.now();
    await this.saveRecord(record);
  }

  /**
   * Whether the bytes of a complete record are still stored as it says, judged without reading them: each part of
   * Lantern's cache is there with its recorded length; a file in an engine's cache is the copy Lantern put there for
   * this record (its headers name this record's source and SHA-256) and has its length. A file an engine's cache got
   * from elsewhere, or that the engine deleted, is not. (Records from before the headers existed have none to compare.)
   */
  async holds(record: FileRecord): Promise<boolean> {
    if (record.absent) return true;
    if (record.cache === DOWNLOADS_CACHE) {
      const cache = await this.#open();
      const lengths = await Promise.all(
        record.parts.map(async (_, index) => storedLength(await cache.match(partKey(record, index)))),
      );
      // A part stored before parts had a length header has none to compare: that it is there is what can be told.
      return lengths.every(
        (length, index) => length !== undefined && (length === null || length === record.parts[index]),
      );
    }
    const placed = await (await this.#storage.open(record.cache)).match(record.url);
    const source = placed?.headers.get(SOURCE_HEADER) ?? null;
    const sha256 = placed?.headers.get(SHA256_HEADER) ?? null;
    // A file placed before these headers existed has none: accepted for a record of that time (no digest) only.
    const ours = record.digest === undefined ? source === null || source === record.source : source === record.source;
    const length = storedLength(placed);
    return ours && (sha256 === null || sha256 === record.digest) && (length === null || length === record.received);
  }

  /**
   * Records the SHA-256 of a complete file's stored bytes that its record lacked (one stored before records kept it),
   * and, for a file in an engine's cache, puts it back there with the headers that say it is this record's copy: from
   * then on it is checked as a file this version stored.
   */
  async seal(record: FileRecord, digest: string): Promise<void> {
    record.digest = digest;
    if (record.cache !== DOWNLOADS_CACHE) {
      const engineCache = await this.#storage.open(record.cache);
      const placed = await engineCache.match(record.url);
      if (placed)
        await engineCache.put(record.url, new Response(await placed.blob(), { headers: fileHeaders(record) }));
    }
    await this.saveRecord(record);
  }

  /** The SHA-256 (hex) of a complete file's stored bytes, read back whole: for small files (code), not the weights. */
  async hash(record: FileRecord): Promise<string> {
    const hash = sha256.create();
    const blobs =
      record.cache === DOWNLOADS_CACHE
        ? await this.partBlobs(record)
        : [await (await (await this.#storage.open(record.cache)).match(record.url))?.blob()];
    for (const blob of blobs) {
      if (!blob) throw new Error(`${record.url} is not stored.`);
      hash.update(new Uint8Array(await blob.arrayBuffer()));
    }
    return bytesToHex(hash.digest());
  }

  /**
   * The complete file from its source as a Response (200, with its length), or undefined when it is not stored
   * complete. Counts as a use (`lastUsed`).
   */
  async response(file: FileRef): Promise<Response | undefined> {
    const record = await this.record(file);
    if (!record?.complete || record.absent) return undefined;
    let body: Blob | undefined;
    if (record.cache === DOWNLOADS_CACHE) body = new Blob(await this.partBlobs(record));
    else if (await this.holds(record))
      body = await (await (await this.#storage.open(record.cache)).match(file.url))?.blob();
    if (!body) return undefined; // the engine's cache was cleared, or holds another copy: this one is not stored
    await this.touch(record);
    return new Response(body, { headers: fileHeaders(record) });
  }

  /**
   * The file engines of this realm read when they ask for `url`: the source the last preparation of a model here chose
   * (`readByEngines`), or the URL itself (a hub file, a URL model, a file no preparation named).
   */
  engineFile(url: string): FileRef {
    return { url, source: engineSources.get(this.#storage)?.get(url) ?? url };
  }

  /** Makes the engines of this realm read `file`'s source when they ask for its URL (see `engineFile`). */
  readByEngines(file: FileRef): void {
    let sources = engineSources.get(this.#storage);
    if (!sources) engineSources.set(this.#storage, (sources = new Map()));
    sources.set(file.url, sourceOf(file));
  }

  /** Records a use of the file, at most once a minute (each write costs a Cache API put). */
  async touch(record: FileRecord): Promise<void> {
    if (Date.now() - record.lastUsed < 60_000) return;
    record.lastUsed = Date.now();
    await this.saveRecord(record);
  }

  /**
   * Removes what is stored of a file from its source (parts, record, and the whole file in an engine's cache when it is
   * this source's copy); resolves with its bytes.
   */
  async remove(file: FileRef): Promise<number> {
    const record = await this.record(file);
    if (!record) return 0;
    await this.#dropParts(record);
    if (record.cache !== DOWNLOADS_CACHE && (await this.holds(record))) {
      await (await this.#storage.open(record.cache)).delete(file.url);
    }
    await (await this.#open()).delete(recordKey(recordId(record.url, record.source ?? record.url)));
    return record.received;
  }

  /** Forgets the stored bytes of a file (a copy that changed, or failed its check) and keeps what is known of it. */
  async restart(record: FileRecord): Promise<void> {
    await this.#dropParts(record);
    record.parts = [];
    record.received = 0;
    record.complete = false;
    // Its next parts go under its own key (a record from before sources were recorded kept its parts by URL).
    record.partsKey = recordId(record.url, record.source ?? record.url);
    delete record.etag;
    delete record.digest;
    await this.saveRecord(record);
  }

  async #dropParts(record: FileRecord): Promise<void> {
    const cache = await this.#open();
    await Promise.all(record.parts.map((_, index) => cache.delete(partKey(record, index))));
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

/**
 * The length a stored response's headers give, without reading its body (which is released): undefined when there is
 * no response, null when it gives none.
 */
function storedLength(response: Response | undefined): number | null | undefined {
  if (!response) return undefined;
  void response.body?.cancel().catch(() => {});
  const length = response.headers.get('content-length');
  return length === null ? null : Number(length);
}

/** A stored file's headers: its type by its name, its length, the ETag of its copy, its source and SHA-256. */
function fileHeaders(record: FileRecord): Headers {
  const headers = new Headers({ 'content-type': contentType(record.url), 'content-length': String(record.received) });
  if (record.etag) headers.set('etag', record.etag);
  if (record.source) headers.set(SOURCE_HEADER, record.source);
  if (record.digest) headers.set(SHA256_HEADER, record.digest);
  return headers;
}

const contentType = (url: string) =>
  /\.json$/.test(new URL(url).pathname) ? 'application/json' : 'application/octet-stream';
