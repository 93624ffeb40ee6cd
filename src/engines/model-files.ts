import { StoredFiles, type DownloadTarget } from '../downloads/index.ts';
import type { StoredState } from '../engine-interface/index.ts';
import { candidateKey, type LocalCandidate } from './engine-registry.ts';
import { isHubModel } from './engine-descriptor.ts';
import { engineOf } from './engine-registry.ts';
import { WEB_LLM_CACHES } from './web-llm/web-llm-cache.ts';

/** What fetching a model's list of files may be given: another fetch (tests), the caller's abort. */
export interface FetchOptions {
  fetch?: typeof fetch;
  signal?: AbortSignal | undefined;
}

/**
 * How an engine that downloads lists a candidate's files (`src/engines/<name>/<name>-files.ts`, registered in
 * `ENGINE_FILES` of `model-manifests.ts`).
 */
export interface EngineFiles<C> {
  /**
   * Every file the engine reads, the first time: the small files that name the rest are downloaded into the store
   * first, and sizes and SHA-256s come from the hub's file listing where it has one.
   */
  list(candidate: C, store: StoredFiles, options: FetchOptions): Promise<DownloadTarget[]>;
  /** A stored manifest as the candidate pins its files now (web-llm's model library), where it pins any. */
  pinned?(manifest: ModelManifest, candidate: C): ModelManifest;
}

/** The Hugging Face hub: where hub IDs and web-llm's models are fetched from unless a candidate names a mirror. */
export const HUGGING_FACE = 'https://huggingface.co/';

/** Every file a candidate's engine reads, as Lantern downloads them: the URL the engine asks for, where it comes from. */
export interface ModelManifest {
  /** The candidate's `candidateKey`. */
  candidate: string;
  /** Its `downloadKey` (what it downloads, and from where): the name it is stored under. */
  key: string;
  files: DownloadTarget[];
  /** When the model was last prepared for loading, in milliseconds since the epoch. */
  lastUsed?: number;
}

/**
 * Whether Lantern downloads the candidate's files (a hub ID, an absolute URL, a web-llm model), rather than the app
 * serving them itself (a path of its own origin, like the bundled models, which its service worker precaches). Its
 * engine's descriptor decides (`downloads`).
 */
export function isDownloadedModel(candidate: LocalCandidate): boolean {
  return engineOf(candidate).downloads(candidate);
}

/** A hub host as a base URL, ending in `/`. */
export const hubBase = (hub: string | undefined) => (hub ?? HUGGING_FACE).replace(/\/*$/, '/');

/** The URL of a file of a hub repository on `hub` (a mirror) instead of the Hugging Face hub. */
export const fromHub = (url: string, hub: string | undefined) =>
  hub === undefined || !url.startsWith(HUGGING_FACE) ? url : hubBase(hub) + url.slice(HUGGING_FACE.length);

/**
 * Where a model folder's files are asked for (`url`) and fetched from (`source`), each ending in `/`: a folder path or
 * URL as it is; a hub ID's on the hub (the engines key a hub file by its URL there, whichever mirror it came from),
 * fetched from `hub` when the candidate names a mirror, with `repo` for the hub's listing of its files.
 */
export function modelFolder(model: string, hub: string | undefined): { url: string; source: string; repo?: string } {
  if (!isHubModel(model)) {
    const folder = model.replace(/\/*$/, '/');
    return { url: folder, source: folder };
  }
  const url = `${HUGGING_FACE}${model}/resolve/main/`;
  return { url, source: fromHub(url, hub), repo: model };
}

/**
 * What a candidate downloads and from where: its `candidateKey`, and the hosts its files come from when not their own
 * URLs (a mirror of the hub, web-llm's model library from the app). Two candidates that differ only there (the hub and
 * a mirror) have one `candidateKey` (their public name, the key of failures and of `served_by`) but two manifests, and
 * their files two records each: what a mirror sent is never taken for the hub's (issue 41).
 */
export function downloadKey(candidate: LocalCandidate): string {
  const engine = engineOf(candidate);
  const hub = engine.usesHub(candidate) && candidate.hub !== undefined ? hubBase(candidate.hub) : undefined;
  return keyFrom(candidateKey(candidate), {
    hub: hub === HUGGING_FACE ? undefined : hub,
    modelLib: engine.codeSource(candidate),
  });
}

/** A `downloadKey` from its parts; one of the hub's own files is its `candidateKey` (its manifest's name before). */
export const keyFrom = (candidate: string, from: { hub?: string | undefined; modelLib?: string | undefined }) =>
  candidate + (from.hub ? ` from ${from.hub}` : '') + (from.modelLib ? ` with ${from.modelLib}` : '');

/** The name a candidate's manifest is stored under, by its `downloadKey`. */
export const manifestName = (downloadKey: string) => `manifest:${downloadKey}`;

/** A candidate's stored manifest (the store upgraded first, once), or undefined before its first download. */
export async function storedManifest(
  candidate: LocalCandidate,
  store: StoredFiles,
): Promise<ModelManifest | undefined> {
  await upgradeStore(store);
  return store.readJSON<ModelManifest>(manifestName(downloadKey(candidate)));
}

/** The default store: the browser's Cache API, where there is one. */
export const browserStore = (): StoredFiles | undefined =>
  typeof caches === 'undefined' ? undefined : new StoredFiles(caches);

/** What a candidate has stored, file by file, for messages and the storage page. */
export interface StoredModel {
  /** The candidate's `candidateKey`. */
  candidate: string;
  /** `complete`: loads without the network; `partial`: some bytes are stored; `none`. */
  state: StoredState;
  /** Bytes stored. */
  bytes: number;
  /** The model's size, where known (its manifest is stored). */
  totalBytes?: number;
  /** Files of the model not stored complete, by name. */
  missing: string[];
  /** When the model was last loaded or downloaded, in milliseconds since the epoch. */
  lastUsed?: number;
}

/** What the store holds of a candidate (none for a model the app serves itself, or before its first download). */
export async function storedModel(candidate: LocalCandidate, store = browserStore()): Promise<StoredModel> {
  const manifest = store && isDownloadedModel(candidate) ? await storedManifest(candidate, store) : undefined;
  if (!store || !manifest) return { candidate: candidateKey(candidate), state: 'none', bytes: 0, missing: [] };
  return manifestState(manifest, store);
}

/** What the store holds of the files a manifest lists. */
export async function manifestState(manifest: ModelManifest, store: StoredFiles): Promise<StoredModel> {
  const records = await Promise.all(manifest.files.map((file) => store.record(file)));
  const bytes = records.reduce((sum, record) => sum + (record?.received ?? 0), 0);
  const sizes = manifest.files.map((file, index) => file.size ?? records[index]?.size);
  const missing = manifest.files.filter((_, index) => !records[index]?.complete).map((file) => fileName(file.url));
  return {
    candidate: manifest.candidate,
    state: missing.length === 0 ? 'complete' : bytes > 0 ? 'partial' : 'none',
    bytes,
    ...(sizes.every((size) => size !== undefined) && { totalBytes: sizes.reduce((a, b) => a! + b!, 0)! }),
    missing,
    ...(manifest.lastUsed !== undefined && { lastUsed: manifest.lastUsed }),
  };
}

/**
 * Deletes a candidate's stored files (it downloads again on its next use), except those another stored model shares
 * from the same source (a repository's tokenizer, used by two builds); resolves with the bytes freed.
 */
export async function removeStoredModel(candidate: LocalCandidate, store = browserStore()): Promise<number> {
  if (!store || !isDownloadedModel(candidate)) return 0;
  const manifest = await storedManifest(candidate, store);
  if (!manifest) return 0;
  const name = manifestName(manifest.key);
  const fileId = (file: DownloadTarget) => `${file.url} from ${file.source ?? file.url}`;
  const shared = new Set<string>();
  for (const other of await store.jsonNames()) {
    if (other === name || !other.startsWith('manifest:')) continue;
    for (const file of (await store.readJSON<ModelManifest>(other))?.files ?? []) shared.add(fileId(file));
  }
  let freed = 0;
  for (const file of manifest.files) if (!shared.has(fileId(file))) freed += await store.remove(file);
  await store.deleteJSON(name);
  return freed;
}

/** The file's name within its model: its path after `resolve/main/`, or its last part. */
export function fileName(url: string): string {
  const path = new URL(url).pathname;
  const at = path.indexOf('/resolve/main/');
  return at >= 0 ? path.slice(at + '/resolve/main/'.length) : path.split('/').pop()!;
}

/** The name of the store's layout version (2: records kept per source, manifests by `downloadKey`). */
const LAYOUT = 'layout';
const upgrades = new WeakMap<StoredFiles, Promise<void>>();

/**
 * Brings a store written before records were kept per source (issue 41) to the current layout, once, so that every
 * model it holds still loads offline:
 *
 * - each file record without a source is given the one its model's manifest names (before, a file was always fetched
 *   from the source its manifest named); a file that manifests of several sources list (a tokenizer two builds
 *   share, one from a mirror) is given the source of the manifest used last, and the other model fetches it again;
 * - each manifest is stored under its `downloadKey` (one from a mirror moves; one of the hub's own files keeps its
 *   name), and web-llm's model library is marked as code (`executable`: hashed again on every reuse).
 *
 * Records no manifest lists (a download cut before its model's list of files was stored) keep no source: they are
 * not reused, and are downloaded again. Safe to run twice, and in two contexts at once (a Web Lock serialises them).
 */
export function upgradeStore(store: StoredFiles): Promise<void> {
  let upgrade = upgrades.get(store);
  if (!upgrade) {
    upgrade = upgradeOnce(store);
    upgrades.set(store, upgrade);
    upgrade.catch(() => upgrades.delete(store)); // tried again next time
  }
  return upgrade;
}

async function upgradeOnce(store: StoredFiles): Promise<void> {
  const current = async () => ((await store.readJSON<{ version: number }>(LAYOUT))?.version ?? 1) >= 2;
  if (await current()) return;
  const run = async () => {
    if (await current()) return;
    const names = (await store.jsonNames()).filter((name) => name.startsWith('manifest:'));
    const legacy: { name: string; manifest: ModelManifest }[] = [];
    for (const name of names) {
      const manifest = await store.readJSON<ModelManifest>(name);
      if (manifest && manifest.key === undefined) legacy.push({ name, manifest });
    }
    legacy.sort((a, b) => (b.manifest.lastUsed ?? 0) - (a.manifest.lastUsed ?? 0));
    const sources = new Map<string, string>();
    for (const { manifest } of legacy) {
      for (const file of manifest.files) if (!sources.has(file.url)) sources.set(file.url, file.source ?? file.url);
    }
    for (const [url, source] of sources) {
      const record = await store.record({ url }); // where every record was kept: by its URL
      if (record && record.source === undefined) await store.adopt(record, source);
    }
    // Manifests last: until they move, a second run (this one cut short) finds the same sources.
    for (const { name, manifest } of legacy) {
      const key = keyFrom(manifest.candidate, sourcesOf(manifest));
      const files = manifest.files.map((file) =>
        file.cache === WEB_LLM_CACHES.wasm ? { ...file, executable: true } : file,
      );
      await store.writeJSON(manifestName(key), { ...manifest, key, files });
      if (manifestName(key) !== name) await store.deleteJSON(name);
    }
    await store.writeJSON(LAYOUT, { version: 2 });
  };
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  await (locks ? locks.request('lantern:downloads:upgrade', run) : run());
}

/** The hosts a manifest's files come from, when not their own URLs: what its `downloadKey` says of them. */
function sourcesOf(manifest: ModelManifest): { hub?: string; modelLib?: string } {
  const from: { hub?: string; modelLib?: string } = {};
  for (const { url, source = url, cache } of manifest.files) {
    if (source === url) continue;
    if (cache === WEB_LLM_CACHES.wasm) from.modelLib = source;
    else if (url.startsWith(HUGGING_FACE) && source.endsWith(url.slice(HUGGING_FACE.length))) {
      from.hub = source.slice(0, source.length - (url.length - HUGGING_FACE.length));
    }
  }
  return from;
}

/** What the hub's file listing says of each file of a repository: its size and, for LFS files, its SHA-256. */
type Listing = Map<string, { size: number; sha256?: string }>;

/**
 * The hub's listing of a repository (`/api/models/{repo}/tree/main?recursive=true`), or undefined when the host has
 * none (a plain mirror, a CDN) or cannot be reached: sizes then come from the servers' Content-Length.
 */
export async function hubListing(hub: string, repo: string, options: FetchOptions): Promise<Listing | undefined> {
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  try {
    const response = await fetchFn(`${hub}api/models/${repo}/tree/main?recursive=true`, {
      ...(options.signal && { signal: options.signal }),
    });
    if (!response.ok) return undefined;
    const entries = (await response.json()) as {
      type: string;
      path: string;
      size: number;
      lfs?: { oid: string; size: number };
    }[];
    if (!Array.isArray(entries)) return undefined;
    return new Map(
      entries
        .filter((entry) => entry.type === 'file')
        .map((entry) => [
          entry.path,
          { size: entry.lfs?.size ?? entry.size, ...(entry.lfs && { sha256: entry.lfs.oid }) },
        ]),
    );
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return undefined;
  }
}
