/// <reference lib="webworker" />
import { cleanupOutdatedCaches, precacheAndRoute } from 'workbox-precaching';

/** One file to precache: its URL (relative to the service worker) and a revision that changes with its content. */
export type PrecacheEntry = string | { url: string; revision: string | null };

/**
 * Precaches the app's files and answers them from the cache, so the app (and Lantern's engine worker, onnxruntime-web
 * and the bundled models) loads offline. Lantern's Vite plugin writes the list where the service worker says
 * `self.__WB_MANIFEST`, as workbox's `injectManifest` does; caches of older lists are removed.
 *
 * @example
 * declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: PrecacheEntry[] };
 * mountLantern(self);
 * precacheApp(self.__WB_MANIFEST);
 */
export function precacheApp(manifest: readonly PrecacheEntry[]): void {
  // Whatever its query string: a page opened as `/?chat=3` (or a file fetched with a cache-busting `?v=`) is the app's
  // own file, offline as online. Workbox ignores only `utm_*` and `fbclid` by default.
  precacheAndRoute([...manifest], { ignoreURLParametersMatching: [/.*/] });
  cleanupOutdatedCaches();
}
