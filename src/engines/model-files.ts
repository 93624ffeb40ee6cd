import { StoredFiles, type DownloadTarget } from '../downloads/index.ts';
import type { StoredState } from '../engine/index.ts';
import { candidateKey, isHubModel, type LocalCandidate } from './model-profile.ts';

/** The Hugging Face hub: where hub IDs and web-llm's models are fetched from unless a candidate names a mirror. */
export const HUGGING_FACE = 'https://huggingface.co/';

/** Every file a candidate's engine reads, as Lantern downloads them: the URL the engine asks for, where it comes from. */
export interface ModelManifest {
  /** The candidate's `candidateKey`. */
  candidate: string;
  files: DownloadTarget[];
  /** When the model was last prepared for loading, in milliseconds since the epoch. */
  lastUsed?: number;
}

/**
 * Whether Lantern downloads the candidate's files (a hub ID, an absolute URL, a web-llm model), rather than the app
 * serving them itself (a path of its own origin, like the bundled models, which its service worker precaches).
 */
export function isDownloadedModel(candidate: LocalCandidate): boolean {
  return candidate.engine === 'web-llm' || isHubModel(candidate.model) || /^https?:\/\//i.test(candidate.model);
}

/** A hub host as a base URL, ending in `/`. */
export const hubBase = (hub: string | undefined) => (hub ?? HUGGING_FACE).replace(/\/*$/, '/');

/** The URL of a file of a hub repository on `hub` (a mirror) instead of the Hugging Face hub. */
export const fromHub = (url: string, hub: string | undefined) =>
  hub === undefined || !url.startsWith(HUGGING_FACE) ? url : hubBase(hub) + url.slice(HUGGING_FACE.length);

/** The name a candidate's manifest is stored under. */
export const manifestName = (candidateKey: string) => `manifest:${candidateKey}`;

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
  const key = candidateKey(candidate);
  const manifest =
    store && isDownloadedModel(candidate) ? await store.readJSON<ModelManifest>(manifestName(key)) : undefined;
  if (!store || !manifest) return { candidate: key, state: 'none', bytes: 0, missing: [] };
  return manifestState(manifest, store);
}

/** What the store holds of the files a manifest lists. */
export async function manifestState(manifest: ModelManifest, store: StoredFiles): Promise<StoredModel> {
  const records = await Promise.all(manifest.files.map((file) => store.record(file.url)));
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
 * (a repository's tokenizer, used by two builds); resolves with the bytes freed.
 */
export async function removeStoredModel(candidate: LocalCandidate, store = browserStore()): Promise<number> {
  if (!store || !isDownloadedModel(candidate)) return 0;
  const key = candidateKey(candidate);
  const manifest = await store.readJSON<ModelManifest>(manifestName(key));
  if (!manifest) return 0;
  const shared = new Set<string>();
  for (const name of await store.jsonNames()) {
    if (name === manifestName(key) || !name.startsWith('manifest:')) continue;
    for (const file of (await store.readJSON<ModelManifest>(name))?.files ?? []) shared.add(file.url);
  }
  let freed = 0;
  for (const file of manifest.files) if (!shared.has(file.url)) freed += await store.remove(file.url);
  await store.deleteJSON(manifestName(key));
  return freed;
}

/** The file's name within its model: its path after `resolve/main/`, or its last part. */
export function fileName(url: string): string {
  const path = new URL(url).pathname;
  const at = path.indexOf('/resolve/main/');
  return at >= 0 ? path.slice(at + '/resolve/main/'.length) : path.split('/').pop()!;
}
