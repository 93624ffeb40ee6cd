/**
 * web-xgrammar's bundle behind a module of its own, imported only by xgrammar.ts and only dynamically, so that a
 * bundler puts the two in one chunk of their own and `url` is where that chunk was loaded from. Where a bundler has
 * wrapped web-xgrammar as CommonJS (Vite's build of the engine worker does), its one evaluation cannot be repeated from
 * inside: xgrammar.ts imports this chunk again under a new URL fragment to get a fresh copy, WebAssembly included. A
 * fragment, not a query: the module map counts it, the network, the HTTP cache and the service worker's precache do
 * not see it.
 */
export * as bundled from '@mlc-ai/web-xgrammar';

/** Where this module, and web-xgrammar with it, was loaded from. */
export const url: string = import.meta.url;
