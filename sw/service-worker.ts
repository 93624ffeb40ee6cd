/// <reference lib="webworker" />
/**
 * Lantern's service worker, as the Vite plugin emits it (`/service-worker.js`): `/v1/*` to the handler, every file of
 * the build precached for offline use (the plugin fills in `self.__WB_MANIFEST`), and a lifecycle that takes control
 * of the first page load.
 */
import { mountLantern } from './mount-lantern.ts';
import { precacheApp, type PrecacheEntry } from './precache.ts';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: PrecacheEntry[] };

// First, so that /v1 is never answered by another route.
mountLantern(self);

precacheApp(self.__WB_MANIFEST);

// Activate at once and control the pages that are already open, so the first load can call /v1 without a reload.
self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
