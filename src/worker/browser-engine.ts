import { env } from '@huggingface/transformers';
import { StoredFiles } from '../downloads/index.ts';
import type { LoadProgress } from '../engine-interface/index.ts';
import { engineOf, engineOfKey } from '../engines/engine-registry.ts';
import { createLocalEngine, type LocalEngine, type LocalTarget } from '../engines/local-engine.ts';
import { fetchAsPage } from '../inputs/image-input.ts';
import { detectDevice } from './device.ts';
import { loadOnnxRuntime, type OnnxRuntime } from './onnx-runtime.ts';
import { loadOptionalModule } from './optional-modules.ts';
import type { DecodeAudioInPage, DeviceInfo, EngineWorkerConfig } from './protocol.ts';

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
 * The local engine of a browser worker, on the device this browser offers (see detectDevice). After a failed load,
 * transformers.js can create no session in this worker any more (its sessions are created on one promise chain, which
 * stays rejected): the worker's API asks for a fresh worker then (see createWorkerApi).
 */
export async function createBrowserEngine(
  config: EngineWorkerConfig,
  hooks: {
    onProgress?: (progress: LoadProgress) => void;
    /** The host page's decoder, for audio that is not WAV. */
    decodeAudio?: DecodeAudioInPage;
  } = {},
): Promise<{ engine: LocalEngine; device: DeviceInfo; runtimeKept: Promise<true | string> }> {
  const { onProgress, decodeAudio } = hooks;
  configureTransformers();
  const device = await detectDevice(config.device);
  // Read or downloaded while the worker waits for its first call, rather than by onnxruntime-web once a model loads:
  // a page that is ready can go offline before it runs a model (issue 42).
  const runtime = runtimeLoader(() => loadOnnxRuntime(env.backends.onnx.wasm!, device.device, self.location.href));
  const engine = createLocalEngine({
    onProgress,
    decodeAudio,
    // Image URLs as the page fetches them: its origin, its CORS rules; it reaches nothing its own scripts could not.
    imageAccess: { fetch: fetchAsPage },
    // The app's optional encoders (mp3, aac), which Lantern's Vite plugin builds beside this worker.
    loadOptional: loadOptionalModule,
  });
  return { engine: afterRuntime(engine, runtime.ready), device, runtimeKept: runtime.kept };
}

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

/**
 * `engine`, whose calls start once onnxruntime-web's binary is ready (at once, but on a first visit whose first call
 * comes before its download ends), and which lets go of the binary once a model of an engine that needs it
 * (transformers.js) has loaded: the session that it served says onnxruntime-web's WebAssembly is instantiated.
 */
function afterRuntime(engine: LocalEngine, ready: () => Promise<OnnxRuntime>): LocalEngine {
  let runtime: OnnxRuntime | undefined;
  // Candidates of engines that run without onnxruntime-web (web-llm) need not wait for it, nor fail where it cannot
  // download: their descriptors say (`needsOnnxRuntime`).
  const needed = async (target: LocalTarget) => {
    if (engineOf(target.candidate).needsOnnxRuntime) runtime = await ready();
  };
  const released = (onBackend?: (backend: string) => void) => (backend: string) => {
    if (engineOfKey(backend)?.needsOnnxRuntime) runtime?.release();
    onBackend?.(backend);
  };
  return {
    run: async (task, target, request, options = {}) => {
      await needed(target);
      return engine.run(task, target, request, { ...options, onBackend: released(options.onBackend) });
    },
  };
}
