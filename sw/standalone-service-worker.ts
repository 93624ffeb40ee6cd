/// <reference lib="webworker" />
/**
 * Lantern's prebuilt service worker for apps built without its Vite plugin (`dist/static/service-worker.js` in the
 * package): `/v1/*` to the handler; Lantern's own files (engine worker, onnxruntime-web's loaders) precached, their
 * list written in when Lantern was built; and, as no build step lists the app's files, each same-origin GET is fetched
 * from the network first and kept, so that the app answers from that copy when offline. onnxruntime-web's WebAssembly
 * binaries are left to the engine worker, which fetches the one build its device runs and keeps it itself
 * (`lantern-onnxruntime`): kept here too, it would be stored twice.
 */
import { registerRoute } from 'workbox-routing';
import { NetworkFirst } from 'workbox-strategies';
import { mountLantern } from './mount-lantern.ts';
import { precacheApp, type PrecacheEntry } from './precache.ts';
import { isLanternRequest } from './route-fetch.ts';
import { isKeepFiles } from '../src/worker/protocol.ts';

/** onnxruntime-web's WebAssembly builds (`ort-wasm-simd-threaded.wasm`, `….jsep.wasm`, …). */
const ONNX_RUNTIME_BINARY = /\/ort-wasm[^/]*\.wasm$/;
const APP_CACHE = 'lantern-app';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: PrecacheEntry[] };

mountLantern(self);
precacheApp(self.__WB_MANIFEST);
registerRoute(
  ({ request, url }) =>
    request.method === 'GET' &&
    url.origin === self.location.origin &&
    !isLanternRequest(request, url.origin) &&
    !ONNX_RUNTIME_BINARY.test(url.pathname),
  new NetworkFirst({ cacheName: APP_CACHE }),
);

// The page and scripts the browser fetched before this worker controlled the page (the first visit) are kept when the
// page asks (`LocalAPI.offlineReady`), so that the first visit is enough to work offline, as a precache makes it.
self.addEventListener('message', (event) => {
  if (!isKeepFiles(event.data)) return;
  const urls = event.data.urls.filter((url) => new URL(url).origin === self.location.origin);
  event.waitUntil(
    caches.open(APP_CACHE).then(async (cache) => {
      for (const url of urls) if (!(await cache.match(url))) await cache.add(url).catch(() => {});
    }),
  );
});

self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
