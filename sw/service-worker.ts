/// <reference lib="webworker" />
/**
 * Lantern's service worker: `/v1/*` to the handler, the app shell, engine worker, onnxruntime-web files and bundled
 * models precached for offline use, and a lifecycle that takes control of the first page load.
 */
import { cleanupOutdatedCaches, precacheAndRoute } from 'workbox-precaching';
import { mountLantern } from './mount-lantern.ts';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: (string | { url: string; revision: string | null })[] };

// First, so that /v1 is never answered by another route.
mountLantern(self);

precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();

// Activate at once and control the pages that are already open, so the first load can call /v1 without a reload.
self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
