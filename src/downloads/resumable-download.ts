import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { concatBytes } from '../bytes/byte-chunks.ts';
import { reuseProblem } from './reuse-check.ts';
import { DOWNLOADS_CACHE, type FileRecord, type StoredFiles } from './stored-files.ts';

/** One file to download: the URL engines know it by, where to fetch it, and what it should be. */
export interface DownloadTarget {
  /** The URL an engine asks for. */
  url: string;
  /**
   * Where it is fetched from, when elsewhere than `url` (a mirror of the hub, the app's own CDN). Its record is kept
   * per source: what one source sent is never taken for another's.
   */
  source?: string;
  /** Where the complete file goes: Lantern's cache (default) or an engine's own (web-llm's `webllm/model`). */
  cache?: string;
  /** Its size in bytes, from a listing; otherwise the server's Content-Length is checked. */
  size?: number;
  /** The SHA-256 of its content, hex, when the hub lists it (or the app pins it: web-llm's model library). */
  sha256?: string;
  /** It runs as code (web-llm's model library): its stored bytes are hashed again each time it is reused. */
  executable?: boolean;
  /** A file the model may lack (`generation_config.json`): a 404 is recorded as its absence, not a failure. */
  optional?: boolean;
}

export interface DownloadOptions {
  signal?: AbortSignal | undefined;
  /** Bytes stored of the file so far (resumed bytes included) and its size when known, as they arrive. */
  onBytes?: ((received: number, size: number | undefined) => void) | undefined;
  /** Something the user may want to know: a restart from zero (no range support), a failed check. */
  onNotice?: ((text: string) => void) | undefined;
  fetch?: typeof fetch;
  /** How long a transfer may send nothing before it is dropped and resumed (default 30 s). */
  stallMs?: number;
  /** How many attempts in a row may fail without a byte received before the download gives up (default 5). */
  attempts?: number;
  /** The wait before the first retry, doubled on each (default 500 ms, at most 8 s). */
  retryDelayMs?: number;
  /**
   * Received bytes are stored in parts of this size at most (default 8 MiB), at least once a second, and whenever a
   * transfer breaks.
   */
  partBytes?: number;
}

/** Why a download failed: `offline` (no network), `server` (it kept failing), `verification`, `not-found`, `quota`. */
export type DownloadFailure = 'offline' | 'server' | 'verification' | 'not-found' | 'quota';

export class DownloadError extends Error {
  override readonly name = 'DownloadError';
  constructor(
    readonly reason: DownloadFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The longest a received byte waits in memory before it is stored. */
const FLUSH_MS = 1000;

const DEFAULTS = { stallMs: 30_000, attempts: 5, retryDelayMs: 500, partBytes: 8 * 2 ** 20 };

/**
 * Downloads one file into the store, resuming from the bytes already stored (an HTTP `Range` request for the rest of
 * the same copy, `If-Range` its ETag), and returns its record once it is complete and checked: its size against the
 * listing or the server's length, its SHA-256 where one is known. A file already stored complete from the same source
 * is checked again before it is reused (`reuseProblem`), and downloaded again when it fails. A transfer that breaks,
 * stalls or meets a server error is resumed, with a growing wait, until `attempts` tries in a row bring nothing. A
 * server that ignores ranges (it answers 200 to a range request) restarts the file from zero once; a file that fails
 * its check is fetched again once; the second time either is an error. One context writes a file at a time (a Web
 * Lock per URL, whatever the source: the copies of one URL share the engine's cache entry), so two tabs or a page and
 * the engine worker never interleave parts.
 */
export async function downloadFile(
  store: StoredFiles,
  target: DownloadTarget,
  options: DownloadOptions = {},
): Promise<FileRecord> {
  const run = () => new Download(store, target, options).run();
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (!locks) return run();
  return locks.request(`lantern:download:${target.url}`, options.signal ? { signal: options.signal } : {}, run);
}

class Download {
  readonly #store: StoredFiles;
  readonly #target: DownloadTarget;
  readonly #options: DownloadOptions & typeof DEFAULTS;
  readonly #fetch: typeof fetch;
  #record!: FileRecord;
  #hash = sha256.create();
  /** Whether the file was already restarted from zero for a server without ranges, or fetched again after a failed check. */
  #restartedForRanges = false;
  #refetched = false;

  constructor(store: StoredFiles, target: DownloadTarget, options: DownloadOptions) {
    this.#store = store;
    this.#target = target;
    this.#options = { ...DEFAULTS, ...stripUndefined(options) };
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async run(): Promise<FileRecord> {
    const { url, source = url, cache = DOWNLOADS_CACHE, size, sha256: digest } = this.#target;
    const known = await this.#store.record(this.#target);
    if (known?.complete) {
      const problem = await reuseProblem(this.#store, known, this.#target);
      if (problem === undefined) return known;
      this.#options.onNotice?.(`${name(url)}: the stored copy ${problem}: downloading it again.`);
    }
    // A complete copy that failed its check, or bytes of unknown origin (stored before records had a source, and
    // claimed by no model's list of files): nothing of them is kept.
    if (known && (known.complete || known.source !== source)) {
      known.source = source;
      await this.#store.restart(known);
    }
    this.#record = known ?? this.#store.newRecord(this.#target, cache);
    this.#record.cache = cache;
    if (size !== undefined) this.#record.size = size;
    if (digest !== undefined) this.#record.sha256 = digest;
    // Resuming: the stored bytes count towards the hash first.
    for (const blob of await this.#store.partBlobs(this.#record))
      this.#hash.update(new Uint8Array(await blob.arrayBuffer()));

    let failedInARow = 0;
    for (;;) {
      this.#options.signal?.throwIfAborted();
      const before = this.#record.received;
      let outcome: 'done' | 'again';
      try {
        outcome = await this.#transfer();
      } catch (error) {
        if (this.#options.signal?.aborted || error instanceof DownloadError) throw error;
        failedInARow = this.#record.received > before ? 0 : failedInARow + 1;
        if (failedInARow >= this.#options.attempts) throw this.#gaveUp(error);
        await sleep(
          Math.min(8000, this.#options.retryDelayMs * 2 ** Math.max(0, failedInARow - 1)),
          this.#options.signal,
        );
        continue;
      }
      if (outcome === 'done') return this.#record;
    }
  }

  /** One request for what is missing; resolves 'done' once the file is complete and checked, 'again' to re-request. */
  async #transfer(): Promise<'done' | 'again'> {
    const record = this.#record;
    const source = this.#target.source ?? this.#target.url;
    const headers = new Headers();
    if (record.received > 0) {
      headers.set('range', `bytes=${record.received}-`);
      if (record.etag) headers.set('if-range', record.etag);
    }
    // This transfer's own abort (a stall), which the caller's also fires.
    const abort = new AbortController();
    const caller = this.#options.signal;
    caller?.addEventListener('abort', () => abort.abort(caller.reason), { once: true });
    const response = await this.#fetch(source, { headers, signal: abort.signal, cache: 'no-store' });

    if (response.status === 404 && this.#target.optional) {
      await response.body?.cancel();
      record.absent = true;
      record.complete = true;
      await this.#store.saveRecord(record);
      return 'done';
    }
    if (response.status === 404 || response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw new DownloadError(
        'not-found',
        `${name(record.url)} could not be downloaded: ${source} answered ${response.status} (the file is not there).`,
      );
    }
    if (response.status === 416 && record.size !== undefined && record.received >= record.size) {
      await response.body?.cancel();
      return this.#finish(); // everything was stored already; only the check was left
    }
    if (response.status !== 200 && response.status !== 206) {
      await response.body?.cancel();
      throw new Error(`${source} answered ${response.status}`); // retried: servers and CDNs fail for a moment
    }
    if (record.received > 0 && response.status === 200) {
      // The server sent the whole file: it has no ranges, or the copy changed (If-Range). Start over, once.
      if (this.#restartedForRanges) {
        await response.body?.cancel();
        throw new DownloadError('server', `${source} does not resume downloads (it ignores HTTP ranges).`);
      }
      this.#restartedForRanges = true;
      this.#options.onNotice?.(
        `${name(record.url)}: the server sent the whole file again instead of the rest (no range support, or the file ` +
          `changed): restarting it from zero.`,
      );
      await this.#restartFile();
    }
    const etag = response.headers.get('x-linked-etag') ?? response.headers.get('etag');
    if (etag && !etag.startsWith('W/')) record.etag = etag;
    const total = totalSize(response, record.received);
    if (record.size === undefined && total !== undefined) record.size = total;
    if (!response.body) throw new Error(`${source} sent no body`);
    await this.#receive(response.body, abort);
    return this.#finish();
  }

  /** Reads a body into the store, part by part; whatever arrived before the body broke is stored before it throws. */
  async #receive(body: ReadableStream<Uint8Array>, abort: AbortController): Promise<void> {
    const reader = body.getReader();
    let buffered: Uint8Array[] = [];
    let bufferedBytes = 0;
    let flushed = Date.now();
    const flush = async () => {
      flushed = Date.now();
      if (bufferedBytes === 0) return;
      // One chunk is stored as it came: no copy.
      const part = buffered.length === 1 ? buffered[0]! : concatBytes(buffered);
      buffered = [];
      bufferedBytes = 0;
      await this.#store.appendPart(this.#record, part).catch((error: unknown) => {
        throw isQuotaError(error)
          ? new DownloadError('quota', `The storage quota is full: ${name(this.#record.url)} could not be stored.`, {
              cause: error,
            })
          : error;
      });
      // Hashed once stored rather than as each chunk arrives, so that the read loop below does nothing slow between
      // reads: Chromium drops the bytes of a body not yet read when its connection breaks (with the hash in the loop, a
      // transfer cut at half kept a few percent of what had arrived, and the resumed request fetched the rest again).
      this.#hash.update(part);
    };
    let stall: ReturnType<typeof setTimeout> | undefined;
    const watch = () => {
      clearTimeout(stall);
      stall = setTimeout(() => abort.abort(new Error('the transfer stalled')), this.#options.stallMs);
    };
    try {
      watch();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        watch();
        buffered.push(value);
        bufferedBytes += value.byteLength;
        // Stored by size, and at least every second: a tab closed mid-file loses at most a second of its transfer.
        if (bufferedBytes >= this.#options.partBytes || Date.now() - flushed >= FLUSH_MS) await flush();
        this.#options.onBytes?.(this.#record.received + bufferedBytes, this.#record.size);
      }
      await flush();
    } catch (error) {
      await flush(); // keep what arrived: the next request asks for what follows it
      throw error;
    } finally {
      clearTimeout(stall);
    }
  }

  /** Checks a fully received file; a failed check fetches it again once. */
  async #finish(): Promise<'done' | 'again'> {
    const record = this.#record;
    let problem =
      record.size !== undefined && record.received !== record.size
        ? `${record.received} bytes arrived of ${record.size}`
        : undefined;
    if (problem === undefined) {
      // Hashed only once its size is right: the hash cannot take more bytes after its digest.
      const digest = bytesToHex(this.#hash.digest());
      if (record.sha256 !== undefined && digest !== record.sha256.toLowerCase()) {
        problem = 'its SHA-256 is not the one its list of files gives';
      } else {
        record.digest = digest;
        await this.#store.complete(record);
        return 'done';
      }
    }
    if (record.size !== undefined && record.received < record.size && !this.#endsShortAgain()) {
      return 'again'; // a short body that ended cleanly: ask for the rest
    }
    if (this.#refetched) {
      await this.#store.restart(record);
      throw new DownloadError(
        'verification',
        `${name(record.url)} failed its check twice (${problem}): the server sends a different file than its list of ` +
          'files says.',
      );
    }
    this.#refetched = true;
    this.#options.onNotice?.(`${name(record.url)} failed its check (${problem}): downloading it again.`);
    await this.#restartFile();
    return 'again';
  }

  /** A short file is resumed, unless the server keeps ending it early at the same place (then it is refetched). */
  #lastShortAt = -1;
  #endsShortAgain(): boolean {
    const at = this.#record.received;
    const repeated = at === this.#lastShortAt;
    this.#lastShortAt = at;
    return repeated;
  }

  async #restartFile(): Promise<void> {
    await this.#store.restart(this.#record);
    this.#hash = sha256.create();
  }

  #gaveUp(error: unknown): DownloadError {
    const record = this.#record;
    const stored = `${record.received}${record.size === undefined ? '' : ` of ${record.size}`} bytes are stored`;
    const offline = (globalThis.navigator as Navigator | undefined)?.onLine === false || error instanceof TypeError;
    const why =
      error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return offline
      ? new DownloadError(
          'offline',
          `${name(record.url)} could not be downloaded: the network is unreachable (${why}). ${stored}; the download ` +
            'resumes from there when the network is back.',
          { cause: error },
        )
      : new DownloadError(
          'server',
          `${name(record.url)} could not be downloaded after ${this.#options.attempts} attempts (${why}). ${stored}; ` +
            'the next try resumes from there.',
          { cause: error },
        );
  }
}

/** The file's total size from a 206's Content-Range, or a 200's Content-Length. */
function totalSize(response: Response, received: number): number | undefined {
  if (response.status === 206) {
    const total = /\/(\d+)\s*$/.exec(response.headers.get('content-range') ?? '')?.[1];
    if (total !== undefined) return Number(total);
    const length = response.headers.get('content-length');
    return length === null ? undefined : received + Number(length);
  }
  // A compressed transfer's length is not the file's.
  if (response.headers.get('content-encoding')) return undefined;
  const length = response.headers.get('x-linked-size') ?? response.headers.get('content-length');
  return length === null ? undefined : Number(length);
}

const isQuotaError = (error: unknown) =>
  error instanceof DOMException && (error.name === 'QuotaExceededError' || error.code === 22);

/** A file's name for messages: the last parts of its path. */
const name = (url: string) => new URL(url).pathname.split('/').slice(-2).join('/');

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
