/** Lantern's Vite plugin (`lantern/vite`): builds and serves the service worker, engine worker and models of an app. */
export { lantern, lantern as default, type LanternPluginOptions } from './lantern-plugin.ts';
