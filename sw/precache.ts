/// <reference lib="webworker" />
import { cleanupOutdatedCaches, PrecacheController, PrecacheRoute } from 'workbox-precaching';
import { registerRoute } from 'workbox-routing';

/** One file to precache: its URL (relative to the service worker) and a revision that changes with its content. */
export type PrecacheEntry = string | { url: string; revision: string | null };

/**
 * How many files the install fetches at once: a browser's connections to one HTTP/1.1 host. Workbox fetches one at a
 * time (GoogleChrome/workbox#2528, #2880), which made most of a first visit's time in Chromium (117 small files: 3 s
 * of 3.9) and more in Firefox and WebKit; a bounded number keeps what #2528 guarded against (a page's own requests
 * starved of bandwidth) while the round trips overlap.
 */
const CONCURRENT_FETCHES = 6;

/**
 * Workbox's precaching with an install that fetches CONCURRENT_FETCHES files at once. Each goes through Workbox's own
 * strategy, as its install's do (a file already stored under its revision is not fetched again; a response that is
 * not safe to store fails the install), through its public API.
 */
class ConcurrentPrecacheController extends PrecacheController {
  readonly #cacheModes = new Map<string, RequestCache>();

  precacheAll(manifest: readonly PrecacheEntry[]): void {
    // As Workbox decides it: a file with a revision is fetched past the HTTP cache, one without may come from it.
    for (const entry of manifest) {
      const url = new URL(typeof entry === 'string' ? entry : entry.url, location.href).href;
      this.#cacheModes.set(url, typeof entry !== 'string' && entry.revision ? 'reload' : 'default');
    }
    this.precache([...manifest]);
  }

  override install(event: ExtendableEvent): Promise<{ updatedURLs: string[]; notUpdatedURLs: string[] }> {
    const done = (async () => {
      const queue = [...this.getURLsToCacheKeys()];
      const fetchNext = async (): Promise<void> => {
        for (let next = queue.shift(); next; next = queue.shift()) {
          const [url, cacheKey] = next;
          const integrity = this.getIntegrityForCacheKey(cacheKey);
          const request = new Request(url, {
            ...(integrity && { integrity }),
            cache: this.#cacheModes.get(url) ?? 'default',
            credentials: 'same-origin',
          });
          await Promise.all(this.strategy.handleAll({ params: { cacheKey }, request, event }));
        }
      };
      await Promise.all(Array.from({ length: CONCURRENT_FETCHES }, fetchNext));
      // Workbox reports which files were fetched for its development logs only; nothing here reads the report.
      return { updatedURLs: [], notUpdatedURLs: [] };
    })();
    event.waitUntil(done);
    return done;
  }
}

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
  const controller = new ConcurrentPrecacheController();
  controller.precacheAll(manifest);
  // Whatever its query string: a page opened as `/?chat=3` (or a file fetched with a cache-busting `?v=`) is the app's
  // own file, offline as online. Workbox ignores only `utm_*` and `fbclid` by default.
  registerRoute(new PrecacheRoute(controller, { ignoreURLParametersMatching: [/.*/] }));
  cleanupOutdatedCaches();
}
