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
import { EngineError, type ChatEvent, type Engine, type EngineErrorKind, type ModelTask } from '../engine/index.ts';
import { createEngine } from '../engines/index.ts';
import { detectDevice } from './device.ts';
import {
  registerEngineErrorTransfer,
  type CallMessage,
  type EngineWorkerApi,
  type EngineWorkerControl,
  type RunReport,
} from './protocol.ts';

registerEngineErrorTransfer();

// Self-hosted onnxruntime-web: transformers.js would otherwise fetch these from a CDN, which breaks offline use.
const ONNX_WASM_PATHS = {
  wasm: new URL(onnxWasmUrl, self.location.href).href,
  mjs: new URL(onnxMjsUrl, self.location.href).href,
};

/**
 * Errors after which this worker's transformers.js cannot be trusted: one failed load or run leaves its shared
 * promise chain rejected, failing every later call (transformers.js#1635, #1767). The host replaces the worker.
 */
const POISONING: ReadonlySet<EngineErrorKind> = new Set(['internal', 'load_failed']);

let engine: Engine | undefined;
let report: (report: RunReport) => void = () => {};
let fatal: (reason: string) => void = () => {};

function running(): Engine {
  if (!engine) throw new EngineError('unavailable', 'The engine worker has not been started yet.');
  return engine;
}

/**
 * Runs one call with its own port: `abort` on the port aborts it; `end` is sent when it is over, after every event,
 * so the caller can wait for the last event before it answers.
 */
async function withCallPort<T>(
  port: MessagePort,
  model: string,
  task: ModelTask,
  run: (signal: AbortSignal, send: (event: ChatEvent) => void) => Promise<T>,
  usage: (result: T) => { promptTokens: number; completionTokens: number },
): Promise<T> {
  const abort = new AbortController();
  port.onmessage = (message: MessageEvent<CallMessage>) => {
    if (message.data.type === 'abort') abort.abort();
  };
  const started = performance.now();
  let events = 0;
  let eventsAfterAbort = 0;
  const send = (event: ChatEvent) => {
    events += 1;
    if (abort.signal.aborted) eventsAfterAbort += 1;
    port.postMessage({ type: 'event', event } satisfies CallMessage);
  };
  const finish = (outcome: RunReport['outcome'], tokens = { promptTokens: 0, completionTokens: 0 }) =>
    report({ model, task, outcome, ...tokens, events, eventsAfterAbort, milliseconds: performance.now() - started });
  try {
    const result = await run(abort.signal, send);
    finish('completed', usage(result));
    return result;
  } catch (thrown) {
    const error = EngineError.from(thrown);
    finish(error.kind);
    // Ask for a replacement only once this call's answer is on its way: the host terminates the worker at once.
    if (POISONING.has(error.kind)) setTimeout(() => fatal(error.message), 0);
    throw error;
  } finally {
    port.postMessage({ type: 'end' } satisfies CallMessage);
    port.close();
  }
}

const api: EngineWorkerApi = {
  models: async () => running().models(),

  chat: (model, request, port) =>
    withCallPort(
      port,
      model,
      'chat',
      (signal, send) =>
        running().chat(model, request, {
          signal,
          onEvent: send,
        }),
      (result) => result.usage,
    ),

  embed: async (model, request, port) => {
    const result = await withCallPort(
      port,
      model,
      'embeddings',
      (signal) => running().embed(model, request, { signal }),
      (r) => ({ promptTokens: r.usage.promptTokens, completionTokens: 0 }),
    );
    // Move the vectors' memory to the caller instead of copying it.
    return Comlink.transfer(
      result,
      result.embeddings.map((v) => v.buffer as ArrayBuffer),
    );
  },
};

const control: EngineWorkerControl = {
  async start(config, onProgress, onReport, onFatal) {
    report = onReport;
    fatal = onFatal;
    env.allowLocalModels = true; // model folders served by the app itself (the bundled profile), by URL path
    env.backends.onnx.wasm!.wasmPaths = ONNX_WASM_PATHS;
    const device = await detectDevice(config.device);
    engine = createEngine({ profile: config.profile, device: device.device, onProgress: (p) => void onProgress(p) });
    return device;
  },
  connect(port) {
    Comlink.expose(api, port);
  },
};

self.addEventListener('error', (event) => fatal(`Uncaught error in the engine worker: ${event.message}`));
self.addEventListener('unhandledrejection', (event) =>
  fatal(`Unhandled rejection in the engine worker: ${event.reason}`),
);
Comlink.expose(control);
