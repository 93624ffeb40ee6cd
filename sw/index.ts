/** The service-worker side of Lantern (`lantern/sw`): mount the /v1 API in your own service worker, and precache. */
export { mountLantern, type MountOptions } from './mount-lantern.ts';
export { precacheApp, type PrecacheEntry } from './precache.ts';
