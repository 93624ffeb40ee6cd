/**
 * `npm run serve:node`'s engine: the local engine (models, tokenizers, grammar compiles) in a worker thread of its
 * own, served over a MessagePort by the same worker API that a browser's engine worker serves (src/worker/worker-api.ts).
 * Started by `startEngineThread()` in scripts/serve.ts with the port as `workerData`. What holds this thread (a long prompt tokenized, a large schema compiled, a forward pass) never holds
 * the server's event loop: other keys' requests, `/v1/models` and refusals are answered meanwhile.
 */
import * as Comlink from 'comlink';
import { parentPort, workerData } from 'node:worker_threads';
import type { LoadProgress } from '../src/engine-interface/index.ts';
import { createLocalEngine } from '../src/engines/local-engine.ts';
import { nodeImageAccess } from '../src/inputs/node-image-access.ts';
import type { CandidateFailure } from '../src/models/model-profile.ts';
import { registerEngineErrorTransfer, type RunReport } from '../src/worker/protocol.ts';
import { createWorkerApi } from '../src/worker/worker-api.ts';

/** What this thread tells the server: progress, each run's report, and why it must be replaced. */
export type EngineThreadMessage =
  | { type: 'ready' }
  | { type: 'progress'; progress: LoadProgress }
  | { type: 'report'; report: RunReport }
  | { type: 'fatal'; reason: string; failed?: CandidateFailure };

export interface EngineThreadData {
  port: MessagePort;
}

const { port } = workerData as EngineThreadData;
const tell = (message: EngineThreadMessage) => parentPort!.postMessage(message);

registerEngineErrorTransfer();
const engine = createLocalEngine({
  onProgress: (progress) => tell({ type: 'progress', progress }),
  // Image URLs only from the handler's allowed hosts, at public addresses; sharp told the pixel limit (issue 41).
  imageAccess: nodeImageAccess(),
});
Comlink.expose(
  createWorkerApi(() => engine, {
    report: (report) => tell({ type: 'report', report }),
    // A failure that broke this realm (a crashed WebAssembly): the server starts a fresh thread, and its routing names
    // the candidate whose load broke it, for the walk to skip.
    fatal: (reason, failed) => tell({ type: 'fatal', reason, ...(failed && { failed }) }),
  }),
  port,
);
tell({ type: 'ready' });
