/// <reference lib="webworker" />
/// <reference types="vite/client" />
/**
 * The engine worker: a dedicated worker, owned by the host page, that runs the models and exposes them over Comlink
 * on every port a service worker is given. One per origin (the host page is elected), so tabs share one copy of each
 * model.
 */
import { env } from '@huggingface/transformers';
import * as Comlink from 'comlink';
import onnxWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import onnxMjsUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.mjs?url';
import { EngineError, type Engine } from '../engine/index.ts';
import { createEngine } from '../engines/index.ts';
import { detectDevice } from './device.ts';
import { registerEngineErrorTransfer, type EngineWorkerControl, type RunReport } from './protocol.ts';
import { createWorkerApi } from './worker-api.ts';

registerEngineErrorTransfer();

// Self-hosted onnxruntime-web: transformers.js would otherwise fetch these from a CDN, which breaks offline use.
const ONNX_WASM_PATHS = {
  wasm: new URL(onnxWasmUrl, self.location.href).href,
  mjs: new URL(onnxMjsUrl, self.location.href).href,
};

let engine: Engine | undefined;
let report: (report: RunReport) => void = () => {};
let fatal: (reason: string) => void = () => {};

const api = createWorkerApi(
  () => {
    if (!engine) throw new EngineError('unavailable', 'The engine worker has not been started yet.');
    return engine;
  },
  { report: (r) => report(r), fatal: (reason) => fatal(reason) },
);

const control: EngineWorkerControl = {
  async start(config, onProgress, onReport, onFatal) {
    report = onReport;
    fatal = onFatal;
    env.allowLocalModels = true; // model folders served by the app itself (the bundled profile), by URL path
    env.backends.onnx.wasm!.wasmPaths = ONNX_WASM_PATHS;
    // transformers.js would re-import onnxruntime's factory from a blob: URL, which a strict Content-Security-Policy
    // forbids; the service worker already caches these files for offline use.
    env.useWasmCache = false;
    const device = await detectDevice(config.device);
    engine = createEngine({
      profile: config.profile,
      device: { webgpu: device.device === 'webgpu', shaderF16: device.shaderF16 },
      onProgress: (p) => void onProgress(p),
    });
    return device;
  },
  connect(port) {
    Comlink.expose(api, port);
  },
  status: () => api.status(),
};

self.addEventListener('error', (event) => fatal(`Uncaught error in the engine worker: ${event.message}`));
self.addEventListener('unhandledrejection', (event) =>
  fatal(`Unhandled rejection in the engine worker: ${event.reason}`),
);
Comlink.expose(control);
