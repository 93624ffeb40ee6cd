import { env } from '@huggingface/transformers';
import { StoredFiles } from '../../downloads/index.ts';
import type { RealmSetUp } from '../model-loaders.ts';
import { loadOnnxRuntime, type OnnxRuntime } from './onnx-runtime.ts';

let configured = false;

/**
 * transformers.js set up for a worker of this app: models by URL path, onnxruntime-web from this origin only (its
 * files are set per device by loadOnnxRuntime; transformers.js would otherwise fetch them from a CDN, which breaks
 * offline use).
 */
function configureTransformers(): void {
  if (configured) return;
  configured = true;
  env.allowLocalModels = true; // model folders served by the app itself (the bundled profile), by URL path
  // transformers.js would re-import onnxruntime's factory from a blob: URL, which a strict Content-Security-Policy
  // forbids; loadOnnxRuntime caches the binary itself.
  env.useWasmCache = false;
  readModelsFromStore(new StoredFiles(caches));
}

/**
 * transformers.js reads downloaded models from Lantern's store (`prepareCandidate` put every file there first) rather
 * than a cache of its own, which would hold a second copy: a hub file by its hub URL, a model served from a URL (the
 * app's CDN) by that URL, which transformers.js can load no other way. It stores nothing itself; what it fetches past
 * the store (the app's own model folders) is the app's to cache. An optional file the model lacks is answered 404
 * from the store's record of that, so a stored model loads offline.
 */
function readModelsFromStore(store: StoredFiles): void {
  const absolute = (url: string | URL) => new URL(url, self.location.href).href;
  env.useBrowserCache = false;
  env.useCustomCache = true;
  env.customCache = {
    // The copy of the source the model's preparation checked (a hub file may be stored from the hub and a mirror).
    match: async (url: string) => store.response(store.engineFile(absolute(url))),
    put: async () => {},
  };
  const network = env.fetch;
  env.fetch = async (input, init) => {
    const record = await store.record(store.engineFile(absolute(input instanceof Request ? input.url : input)));
    if (record?.absent) return new Response(null, { status: 404, statusText: 'Not Found' });
    return network(input, init);
  };
}

/**
 * transformers.js in a browser's engine worker: configured for the app's store, and onnxruntime-web's binary for the
 * worker's device read or downloaded as the worker starts (see runtimeLoader). Its candidates' loads wait for the
 * binary; once one of its models has loaded, the binary is let go (the session that loaded says onnxruntime-web's
 * WebAssembly is instantiated).
 */
export const TRANSFORMERS_BROWSER_REALM: RealmSetUp = {
  start(device, base) {
    configureTransformers();
    const runtime = runtimeLoader(() => loadOnnxRuntime(env.backends.onnx.wasm!, device, base));
    let loaded: OnnxRuntime | undefined;
    return {
      ready: async () => {
        loaded = await runtime.ready();
      },
      kept: runtime.kept,
      loaded: () => loaded?.release(),
    };
  },
};

/**
 * onnxruntime-web's binary, loaded as the worker starts. A download that failed (the network went away before it
 * ended) is tried again by the next call and when the browser says it is back online, until one succeeds: nothing
 * was instantiated meanwhile. `kept` resolves once the binary is loaded: true when it is kept for offline starts,
 * otherwise why it is not.
 */
function runtimeLoader(load: () => Promise<OnnxRuntime>): {
  ready: () => Promise<OnnxRuntime>;
  kept: Promise<true | string>;
} {
  let loaded!: (runtime: OnnxRuntime) => void;
  const kept = new Promise<OnnxRuntime>((resolve) => (loaded = resolve)).then((runtime) => runtime.kept);
  let attempt = load();
  const watch = (current: Promise<OnnxRuntime>) => current.then(loaded, () => {}); // a failure waits for a retry
  void watch(attempt);
  const ready = () => {
    attempt = attempt.catch(() => {
      const retry = load();
      void watch(retry);
      return retry;
    });
    return attempt;
  };
  const online = () =>
    void ready().then(
      () => removeEventListener('online', online),
      () => {},
    );
  addEventListener('online', online);
  return { ready, kept };
}
