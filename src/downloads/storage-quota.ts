import { EngineError } from '../engine-interface/index.ts';

/**
 * Room to leave beyond a download's own size: the Cache API stores each file with some overhead, and a quota that a
 * download fills to the last byte makes the browser evict other data first.
 */
const HEADROOM = 1.1;

/** The origin's storage as the browser reports it; undefined where there is no Storage API (Node, some WebViews). */
export interface StorageEstimateInfo {
  /** Bytes this origin may store. */
  quota: number;
  /** Bytes it stores now (models, keys, stored responses, the app's precache). */
  usage: number;
  /** What is left: `quota - usage`. */
  free: number;
}

export async function storageEstimate(): Promise<StorageEstimateInfo | undefined> {
  const storage = (globalThis.navigator as Navigator | undefined)?.storage;
  if (!storage?.estimate) return undefined;
  const { quota = Infinity, usage = 0 } = await storage.estimate();
  return { quota, usage, free: Math.max(0, quota - usage) };
}

/** What a refused download needed and what there was: the `cause` of its `insufficient_storage` error. */
export interface StorageShortfall {
  /** Bytes the download needs, headroom included. */
  needed: number;
  free: number;
  quota: number;
}

/**
 * Refuses a download that would not fit in the origin's storage quota, before a byte of it is fetched, with a message
 * that says what is needed and what is free (and, as its `cause`, a {@link StorageShortfall}). Does nothing where the
 * Storage API is missing (Node).
 */
export async function ensureStorageFor(what: string, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  const estimate = await storageEstimate();
  if (!estimate) return;
  const needed = Math.ceil(bytes * HEADROOM);
  if (estimate.free >= needed) return;
  const shortfall: StorageShortfall = { needed, free: estimate.free, quota: estimate.quota };
  throw new EngineError(
    'insufficient_storage',
    `Not enough storage to download ${what}: it needs about ${formatBytes(needed)} and this site has ` +
      `${formatBytes(estimate.free)} free. Free some space (remove stored models: lantern.storage.remove), or use a ` +
      'smaller model.',
    { cause: shortfall },
  );
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
  return `${Math.round(bytes / 1e3)} kB`;
}
