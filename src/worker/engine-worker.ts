/// <reference lib="webworker" />
/**
 * The engine worker: a dedicated worker, owned by the host page, that runs the models and exposes them over Comlink
 * on every port a service worker is given. One per origin (the host page is elected), so tabs share one copy of each
 * model.
 */
import * as Comlink from 'comlink';
import { EngineError } from '../engine-interface/index.ts';
import type { LocalEngine } from '../engines/local-engine.ts';
import type { CandidateFailure } from '../models/model-profile.ts';
import { createBrowserEngine } from './browser-engine.ts';
import { deviceLostMessage, GpuDeviceWatch, LOSS_SETTLE_MS } from './gpu-device-loss.ts';
import { PROTOCOL_VERSION, registerEngineErrorTransfer, type EngineWorkerControl, type RunReport } from './protocol.ts';
import { createWorkerApi } from './worker-api.ts';

registerEngineErrorTransfer();

let engine: LocalEngine | undefined;
let runtimeKept: Promise<true | string> | undefined;
let trace = false;
let report: (report: RunReport) => void = () => {};
let fatal: (reason: string, failed?: CandidateFailure) => void = () => {};

// A lost GPU device never comes back to this worker's engines: ask for a fresh worker. The calls running on the device
// fail first (their failure, explained below, asks too); the wait lets their answers leave before the worker goes.
const gpu = new GpuDeviceWatch((loss) =>
  setTimeout(() => fatal(deviceLostMessage(loss)), api.status().calls > 0 ? 2 * LOSS_SETTLE_MS : 0),
);
gpu.install();

const api = createWorkerApi(
  () => {
    if (!engine) throw new EngineError('unavailable', 'The engine worker has not been started yet.');
    return engine;
  },
  {
    report: (r) => report(r),
    fatal: (reason, failed) => fatal(reason, failed),
    trace: () => trace,
    // A load that failed because the device was lost is no fault of its candidate: explained, it is not skipped.
    explain: (e) => gpu.explain(e),
  },
);

const control: EngineWorkerControl = {
  async start(config, onProgress, onReport, onFatal, decodeAudio) {
    if (config.protocol !== PROTOCOL_VERSION) {
      throw new EngineError(
        'version_mismatch',
        `This page runs another version of the app than its engine worker (protocol ${config.protocol ?? 'none'} ` +
          `against ${PROTOCOL_VERSION}): reload the page.`,
      );
    }
    report = onReport;
    fatal = onFatal;
    trace = config.trace === true;
    const started = await createBrowserEngine(config, { onProgress: (p) => void onProgress(p), decodeAudio });
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
