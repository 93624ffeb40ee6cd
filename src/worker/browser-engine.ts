/// <reference types="vite/client" />
import { env } from '@huggingface/transformers';
import onnxWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import onnxMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import { StoredFiles } from '../downloads/index.ts';
import type { LoadProgress } from '../engine/index.ts';
import { createLocalEngine, type LocalEngine } from '../engines/local-engine.ts';
import type { CandidateFailure } from '../engines/model-profile.ts';
import { detectDevice } from './device.ts';
import type { DeviceInfo, EngineWorkerConfig } from './protocol.ts';

let configured = false;

/** transformers.js set up for a worker of this app: models by URL path, onnxruntime-web from this origin only. */
function configureTransformers(): void {
  if (configured) return;
  configured = true;
  env.allowLocalModels = true; // model folders served by the app itself (the bundled profile), by URL path
  // Self-hosted onnxruntime-web: transformers.js would otherwise fetch these from a CDN, which breaks offline use.
  env.backends.onnx.wasm!.wasmPaths = {
    wasm: new URL(onnxWasmUrl, self.location.href).href,
    mjs: new URL(onnxMjsUrl, self.location.href).href,
  };
  // transformers.js would re-import onnxruntime's factory from a blob: URL, which a strict Content-Security-Policy
  // forbids; the service worker already caches these files for offline use.
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
    match: async (url: string) => store.response(absolute(url)),
    put: async () => {},
  };
  const network = env.fetch;
  env.fetch = async (input, init) => {
    const record = await store.record(absolute(input instanceof Request ? input.url : input));
    if (record?.absent) return new Response(null, { status: 404, statusText: 'Not Found' });
    return network(input, init);
  };
}

/**
 * The local engine of a browser worker, on the device this browser offers (see detectDevice). After a failed load,
 * transformers.js can create no session in this worker any more (its sessions are created on one promise chain, which
 * stays rejected), so the engine tries no other candidate here: `replaceWorker` asks for a fresh worker, which skips
 * the candidates that failed (`config.failed`).
 */
export async function createBrowserEngine(
  config: EngineWorkerConfig,
  onProgress?: (progress: LoadProgress) => void,
  replaceWorker?: (reason: string, failed?: CandidateFailure) => void,
): Promise<{ engine: LocalEngine; device: DeviceInfo }> {
  configureTransformers();
  const device = await detectDevice(config.device);
  const engine = createLocalEngine({ failed: config.failed ?? [], onProgress, replaceRealm: replaceWorker });
  return { engine, device };
}
