import type { LocalEngineName } from './engine-registry.ts';
import type { RealmSetUp } from './model-loaders.ts';
import { TRANSFORMERS_BROWSER_REALM } from './transformers/transformers-browser-realm.ts';

/**
 * The engines that set up a runtime in a browser's engine worker, one line each (see `RealmSetUp`): only that worker
 * imports this registry. Apart from `ENGINE_LOADERS` (`loader-registry.ts`) because Node loads those loaders too, and a
 * browser runtime's files (Vite's `?url` imports of WebAssembly) exist only in a browser bundle.
 */
export const BROWSER_REALMS: { readonly [N in LocalEngineName]?: RealmSetUp } = {
  transformers: TRANSFORMERS_BROWSER_REALM,
};
