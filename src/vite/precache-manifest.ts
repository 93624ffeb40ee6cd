import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** One precached file, as workbox-precaching takes it: a URL relative to the service worker, and its revision. */
export interface ManifestEntry {
  url: string;
  revision: string;
}

/** Where a service worker asks for its precache list, as in workbox's `injectManifest`. */
const PLACEHOLDER = 'self.__WB_MANIFEST';

/** Every file under `folder` (paths relative to it, `/`-separated, sorted) as a map of path to absolute path. */
export function listFiles(folder: string): Map<string, string> {
  const files = new Map<string, string>();
  const entries = readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    files.set(relative(folder, path).split(sep).join('/'), path);
  }
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Whether a built file is onnxruntime-web's WebAssembly binary (`ort-wasm-simd-threaded*.wasm`, 14 to 27 MB), which
 * is never precached: the engine worker keeps the one build its device runs (src/engines/transformers/onnx-runtime.ts), where a
 * precache would download every build, and the copy that Vite emits for a page that imports transformers.js (which
 * that page never instantiates).
 */
export const isOnnxRuntimeBinary = (file: string) => /(^|\/)ort-wasm-simd-threaded[^/]*\.wasm$/.test(file);

/**
 * The precache list of a build: every file under `folder` that `include` accepts, but onnxruntime-web's binaries
 * (see isOnnxRuntimeBinary), each with a revision hashed from its content, so a changed file is fetched again and an
 * unchanged one is not.
 */
export function precacheManifest(folder: string, include: (file: string) => boolean): ManifestEntry[] {
  return [...listFiles(folder)]
    .filter(([file]) => include(file) && !isOnnxRuntimeBinary(file))
    .map(([url, path]) => ({ url, revision: createHash('md5').update(readFileSync(path)).digest('hex') }));
}

/** Whether a built service worker asks for a precache list. */
export const wantsManifest = (code: string) => code.includes(PLACEHOLDER);

/** Writes the precache list where the service worker's code says `self.__WB_MANIFEST` (once). */
export function injectManifest(code: string, entries: readonly ManifestEntry[]): string {
  const uses = code.split(PLACEHOLDER).length - 1;
  if (uses !== 1) throw new Error(`[lantern] the service worker must use ${PLACEHOLDER} once, not ${uses} times.`);
  return code.replace(PLACEHOLDER, () => JSON.stringify(entries));
}
