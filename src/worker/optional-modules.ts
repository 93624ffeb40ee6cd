/**
 * The LGPL encoder packages (LAME for mp3, FFmpeg's AAC encoder) in a browser's engine worker. Lantern's own files
 * never hold them: Lantern's Vite plugin bundles each into the app's build as `lantern/optional/<file>.js`, beside the
 * engine worker (src/vite/optional-encoder-bundles.ts, which names the files and the global below alike: that build
 * tooling and this worker share no module): LAME always (`wasm-media-encoders` is Lantern's dependency), FFmpeg's
 * where the app installed `@mediabunny/aac-encoder`.
 */
import type { LoadOptional } from '../audio/encode/optional-encoders.ts';

/**
 * Where the plugin's generated `mediabunny-shim.js` finds the engine worker's mediabunny: a function that imports it.
 * `@mediabunny/aac-encoder` registers its encoder into the mediabunny it imports, so it must import this worker's own
 * instance, not a copy; the shim awaits the function, so mediabunny loads only with a package that uses it.
 */
const SHARED_MEDIABUNNY = '__lanternMediabunny';

declare global {
  var __lanternMediabunny: (() => Promise<unknown>) | undefined;
}

/** `@mediabunny/aac-encoder` → `optional/mediabunny-aac-encoder.js`, relative to the engine worker's file. */
const optionalModulePath = (name: string) => `optional/${name.replace(/^@/, '').replace(/[^\w.-]+/g, '-')}.js`;

/**
 * The engine worker's loader of those packages: the module the Vite plugin built for `name` beside the engine
 * worker's own file (and precached with it). Where the plugin built none (the app has not installed the package, or
 * was built without the plugin) there is no such file: the import fails, and the encoder answers that it is missing.
 *
 * @example
 * createLocalEngine({ loadOptional: loadOptionalModule });
 */
export const loadOptionalModule: LoadOptional = async (name) => {
  // Lantern's own mediabunny, the module its encoders import: the bundler makes both one instance.
  globalThis[SHARED_MEDIABUNNY] ??= () => import('mediabunny');
  // Built at run time, so that no bundler takes it for a file of the engine worker's own build to resolve.
  return import(/* @vite-ignore */ new URL(optionalModulePath(name), self.location.href).href);
};
