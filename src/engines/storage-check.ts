import { EngineError } from '../engine/index.ts';

/**
 * Room to leave beyond a download's own size: the Cache API stores each file with some overhead, and a quota that a
 * download fills to the last byte makes the browser evict other data first.
 */
const HEADROOM = 1.1;

/**
 * Refuses a download that would not fit in the origin's storage quota, before a byte of it is fetched, with a message
 * that says what is needed and what is free. Does nothing where the Storage API is missing (Node).
 */
export async function ensureStorageFor(what: string, bytes: number): Promise<void> {
  const storage = (globalThis.navigator as Navigator | undefined)?.storage;
  if (!storage?.estimate || bytes <= 0) return;
  const { quota = Infinity, usage = 0 } = await storage.estimate();
  const free = quota - usage;
  if (free >= bytes * HEADROOM) return;
  throw new EngineError(
    'insufficient_storage',
    `Not enough storage to download ${what}: it needs about ${formatBytes(bytes * HEADROOM)} and this site has ` +
      `${formatBytes(Math.max(0, free))} free. Free some space (or remove cached models), or use a smaller model.`,
  );
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
  return `${Math.round(bytes / 1e3)} kB`;
}
