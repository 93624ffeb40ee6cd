/// <reference lib="webworker" />
/**
 * The engine worker: a dedicated worker, owned by the host page, that runs the models and exposes them over Comlink
 * on every port a service worker is given. One per origin (the host page is elected), so tabs share one copy of each
 * model.
 */
import * as Comlink from 'comlink';
import { EngineError } from '../engine/index.ts';
import type { LocalEngine } from '../engines/local-engine.ts';
import type { CandidateFailure } from '../engines/model-profile.ts';
import { createBrowserEngine } from './browser-engine.ts';
import { registerEngineErrorTransfer, type EngineWorkerControl, type RunReport } from './protocol.ts';
import { createWorkerApi } from './worker-api.ts';

registerEngineErrorTransfer();

let engine: LocalEngine | undefined;
let runtimeKept: Promise<true | string> | undefined;
let trace = false;
let report: (report: RunReport) => void = () => {};
let fatal: (reason: string, failed?: CandidateFailure) => void = () => {};

const api = createWorkerApi(
  () => {
    if (!engine) throw new EngineError('unavailable', 'The engine worker has not been started yet.');
    return engine;
  },
  { report: (r) => report(r), fatal: (reason) => fatal(reason), trace: () => trace },
);

const control: EngineWorkerControl = {
  async start(config, onProgress, onReport, onFatal, decodeAudio) {
    report = onReport;
    fatal = onFatal;
    trace = config.trace === true;
    const started = await createBrowserEngine(config, {
      onProgress: (p) => void onProgress(p),
      replaceWorker: (reason, failed) => fatal(reason, failed),
      decodeAudio,
    });
    engine = started.engine;
    runtimeKept = started.runtimeKept;
    return started.device;
  },
  connect(port) {
    Comlink.expose(api, port);
  },
  status: () => api.status(),
  runtimeKept: () => runtimeKept ?? Promise.resolve('the engine worker has not been started yet'),
};

self.addEventListener('error', (event) => fatal(`Uncaught error in the engine worker: ${event.message}`));
self.addEventListener('unhandledrejection', (event) =>
  fatal(`Unhandled rejection in the engine worker: ${event.reason}`),
);
Comlink.expose(control);
