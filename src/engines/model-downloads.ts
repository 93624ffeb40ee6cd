import { EngineError, type LoadProgress } from '../engine-interface/index.ts';
import {
  DownloadError,
  downloadFile,
  ensureStorageFor,
  formatBytes,
  reuseProblem,
  type StoredFiles,
  type DownloadTarget,
  type FileRecord,
} from '../downloads/index.ts';
import {
  browserStore,
  fileName,
  isDownloadedModel,
  manifestName,
  manifestState,
  type ModelManifest,
} from './model-files.ts';
import { modelManifest } from './model-manifests.ts';
import { candidateKey, type LocalCandidate } from './engine-registry.ts';

/** How many files of one model download at once: web-llm's dozens of shards go faster, one big file is one stream. */
const PARALLEL_FILES = 3;

export interface PrepareOptions {
  /** The public model ID that asked (progress is reported under it). */
  id: string;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
  signal?: AbortSignal | undefined;
  /** The store (default: the browser's Cache API; without one, as in Node, the engines download by themselves). */
  store?: StoredFiles | undefined;
  fetch?: typeof fetch;
  /** Overrides of the download's patience (tests). */
  stallMs?: number;
  retryDelayMs?: number;
}

/**
 * Makes a candidate's files ready for its engine to load without the network: every file it reads is downloaded into
 * the store from the candidate's own source (resumed where a transfer broke, checked against the hub's sizes and
 * hashes), or found there from that source and checked again (`reuseProblem`), and placed where the engine looks: this
 * realm's engines read this candidate's copies from now on (`readByEngines`). Before a byte of the weights is fetched,
 * what is still missing is compared with the storage quota: a candidate that cannot fit fails with
 * `insufficient_storage` (its `cause` says what was needed and free), so the next candidate is tried. A download that
 * fails (offline, a server that keeps failing, a file that fails its check twice) fails with `download_failed`, saying
 * what is stored and what is missing. Models the app serves itself need nothing.
 */
export async function prepareCandidate(candidate: LocalCandidate, options: PrepareOptions): Promise<void> {
  const store = options.store ?? browserStore();
  if (!store || !isDownloadedModel(candidate)) return;
  const { id, onProgress } = options;
  const key = candidateKey(candidate);
  const download = {
    signal: options.signal,
    ...(options.fetch && { fetch: options.fetch }),
    ...(options.stallMs !== undefined && { stallMs: options.stallMs }),
    ...(options.retryDelayMs !== undefined && { retryDelayMs: options.retryDelayMs }),
  };
  let manifest: ModelManifest;
  try {
    manifest = await modelManifest(candidate, store, download);
  } catch (error) {
    throw downloadFailure(key, error, 'its list of files could not be read');
  }
  // What is stored of each file from its source, counting a complete file that fails its check as nothing.
  const stored = await Promise.all(
    manifest.files.map(async (file) => {
      const record = await store.record(file);
      if (!record?.complete) return { record, received: record?.received ?? 0, complete: false };
      const reusable = (await reuseProblem(store, record, file)) === undefined;
      return { record, received: reusable ? record.received : 0, complete: reusable };
    }),
  );
  const missing = manifest.files.filter((_, index) => !stored[index]!.complete);
  if (missing.length > 0) {
    const sizes = await Promise.all(missing.map((file) => file.size ?? sizeFromServer(file, download.fetch)));
    const received = stored.reduce((sum, file) => sum + (file.complete ? 0 : file.received), 0);
    await ensureStorageFor(key, sizes.reduce((sum, size) => sum + size, 0) - received);
    await downloadAll(manifest, stored, missing, store, { id, onProgress, download });
  }
  for (const file of manifest.files) store.readByEngines(file);
  manifest.lastUsed = Date.now();
  await store.writeJSON(manifestName(manifest.key), manifest);
}

/** Downloads the `missing` files of a manifest (`stored`: what is stored of each of its files), with progress. */
async function downloadAll(
  manifest: ModelManifest,
  stored: { record: FileRecord | undefined; received: number; complete: boolean }[],
  missing: DownloadTarget[],
  store: StoredFiles,
  context: {
    id: string;
    onProgress: PrepareOptions['onProgress'];
    download: Parameters<typeof downloadFile>[2];
  },
): Promise<void> {
  const { id: model, onProgress } = context;
  const received = new Map<string, number>();
  const sizes = new Map<string, number>();
  manifest.files.forEach((file, index) => {
    const { record, received: bytes } = stored[index]!;
    received.set(file.url, bytes);
    sizes.set(file.url, file.size ?? record?.size ?? 0);
  });
  const total = () => [...sizes.values()].reduce((a, b) => a + b, 0);
  const loaded = () => [...received.values()].reduce((a, b) => a + b, 0);
  const reportTotal = () => {
    const all = total();
    onProgress?.({
      status: 'progress_total',
      model,
      loaded: loaded(),
      total: all,
      progress: all ? (100 * loaded()) / all : 0,
    });
  };
  const queue = [...missing];
  const worker = async () => {
    for (let file = queue.shift(); file; file = queue.shift()) {
      const name = fileName(file.url);
      onProgress?.({ status: 'initiate', model, file: name });
      onProgress?.({ status: 'download', model, file: name });
      try {
        await downloadFile(store, file, {
          ...context.download,
          onBytes: (bytes, size) => {
            received.set(file.url, bytes);
            if (size !== undefined) sizes.set(file.url, size);
            const of = size ?? 0;
            onProgress?.({
              status: 'progress',
              model,
              file: name,
              loaded: bytes,
              total: of,
              progress: of ? (100 * bytes) / of : 0,
            });
            reportTotal();
          },
          onNotice: (text) => console.warn(`[lantern] ${text}`),
        });
      } catch (error) {
        queue.length = 0; // the others stop at their next file
        throw downloadFailure(
          manifest.candidate,
          error,
          `${name} could not be downloaded`,
          await stillMissing(manifest, store),
        );
      }
      onProgress?.({ status: 'done', model, file: name });
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_FILES, missing.length) }, worker));
  reportTotal();
}

/** A file's size from the server, for a listing that had none (a mirror, a CDN); 0 when the server does not say. */
async function sizeFromServer(file: DownloadTarget, fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)) {
  try {
    const response = await fetchFn(file.source ?? file.url, { method: 'HEAD' });
    return Number(response.headers.get('x-linked-size') ?? response.headers.get('content-length') ?? 0) || 0;
  } catch {
    return 0; // offline: the download itself will say so
  }
}

/** What a download that stopped left stored, and what it did not, for its error message. */
async function stillMissing(manifest: ModelManifest, store: StoredFiles): Promise<string> {
  const { bytes, totalBytes, missing } = await manifestState(manifest, store);
  const of = totalBytes ? ` of ${formatBytes(totalBytes)}` : '';
  return (
    `${manifest.files.length - missing.length} of ${manifest.files.length} files are stored ` +
    `(${formatBytes(bytes)}${of}); missing: ${missing.join(', ')}`
  );
}

/** A download's failure as the engine reports it. */
function downloadFailure(key: string, error: unknown, what: string, stored?: string): EngineError {
  if (error instanceof EngineError) return error;
  if (error instanceof DOMException && error.name === 'AbortError') {
    return new EngineError('aborted', `The download of ${key} was aborted.`, { cause: error });
  }
  // The engine names the candidate before this message; a DownloadError already names its file.
  const said =
    error instanceof DownloadError
      ? error.message
      : `${what}: ${error instanceof Error ? error.message : String(error)}`;
  const message = `${said}${stored ? ` ${stored}.` : ''}`;
  const kind = error instanceof DownloadError && error.reason === 'quota' ? 'insufficient_storage' : 'download_failed';
  return new EngineError(kind, message, { cause: error });
}
