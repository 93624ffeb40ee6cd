/**
 * Everything that crosses the engine worker's boundary: the API the worker exposes over Comlink, the messages of a
 * call's own port, the port hand-off between page and service worker, and the Comlink handler that carries typed
 * engine errors across intact. Imported by the worker, the service worker and the page alike.
 */
import * as Comlink from 'comlink';
import {
  EngineError,
  type EngineErrorKind,
  type LoadProgress,
  type ModelTask,
  type RunsOn,
  type TaskEvent,
  type TaskRequest,
  type TaskResult,
  type TokenUsage,
} from '../engine-interface/index.ts';
import type { LocalTarget } from '../engines/local-engine.ts';
import type { AdapterLimits, CandidateFailure, RoutingConfig } from '../models/model-profile.ts';

/**
 * The version of everything in this file that crosses between page, service worker and engine worker: the port offer,
 * the messages, the Comlink APIs and what they carry. Raise it with any change that a counterpart of the previous
 * version would misread. Each side checks it: the service worker refuses a port offer of another version (and answers
 * `/v1` with 503 `version_mismatch`), the engine worker refuses to start for a page of another version, and a page
 * asks its service worker for its version (`ProtocolCheck`) and, when they differ, stops hosting and says so
 * (`LocalAPI`'s `mismatch` event). A page left open across an app update is the usual case: its service worker is new
 * (`skipWaiting`, `clients.claim`), its own code old, until it reloads.
 */
export const PROTOCOL_VERSION = 4;

/** What runs the models in the worker: WebGPU when an adapter exists (or is asked for), otherwise WebAssembly. */
export type DevicePreference = 'auto' | 'webgpu' | 'wasm';

export interface DeviceInfo {
  device: 'webgpu' | 'wasm';
  /**
   * The WebGPU adapter, when there is one (even if wasm was chosen), as the engines get it (`powerPreference:
   * 'high-performance'`). `isFallbackAdapter`: a software adapter (SwiftShader), WebGPU on the CPU. `limits`: those
   * that decide whether a model fits.
   */
  adapter: {
    vendor: string;
    architecture: string;
    description: string;
    isFallbackAdapter: boolean;
    limits: AdapterLimits;
  } | null;
  /** Whether the adapter can run half-precision shaders (web-llm's q4f16 models need it). */
  shaderF16: boolean;
  /**
   * The device's memory as the browser reports it (`navigator.deviceMemory`: Chromium, rounded down to a power of two
   * and capped), or null where it reports none (Safari, Firefox).
   */
  memoryBytes: number | null;
}

/**
 * How the host page configures a fresh engine worker. It routes nothing (the service worker's router does, with the
 * host's profile and policy): it loads the targets it is asked for, on this device.
 */
export interface EngineWorkerConfig {
  device: DevicePreference;
  /** Run reports carry each token's timestamp (`tokenTimes`): for benchmarks. */
  trace?: boolean;
  /** The page's PROTOCOL_VERSION, sent by `EngineHost`: a worker of another version refuses to start. */
  protocol?: number;
}

/** One finished model run, reported to the host page (progress UIs, tokens per second, tests). */
export interface RunReport {
  model: string;
  task: ModelTask;
  outcome: 'completed' | EngineErrorKind;
  /** Token counts of a completed run; 0 for a run that failed or was aborted. */
  promptTokens: number;
  completionTokens: number;
  /** Events the run emitted, and how many of them came after its caller aborted (at most the token in flight). */
  events: number;
  eventsAfterAbort: number;
  milliseconds: number;
  /** With `trace`: when each text delta left the worker, in epoch milliseconds (`performance.timeOrigin` based). */
  tokenTimes?: number[];
}

/** What the engine worker is doing. */
export interface EngineStatus {
  /** Calls (of any task) running or waiting in the worker. */
  calls: number;
}

/** The host page's side of the worker: start it, and connect a port on which the engine API is exposed. */
export interface EngineWorkerControl {
  /**
   * Configures the worker. `onProgress` and `onReport` are Comlink proxies; `onFatal` is called when the engine can
   * no longer be trusted (a failed load or run leaves transformers.js' promise chain rejected), so the host replaces
   * the worker. With `failed`, it was a candidate's load that broke it: the host remembers it, and the routing of its
   * next port offers names it, for the router's walk to skip. Calls the broken worker still holds get no answer: they
   * end when their connection goes (`engine_lost`), and the walk sends them to the next worker.
   */
  start(
    config: EngineWorkerConfig,
    onProgress: (progress: LoadProgress) => void,
    onReport: (report: RunReport) => void,
    onFatal: (reason: string, failed?: CandidateFailure) => void,
    decodeAudio: DecodeAudioInPage,
  ): Promise<DeviceInfo>;
  /** Exposes the engine API on `port` (for a service worker). */
  connect(port: MessagePort): void;
  /**
   * Resolves once the worker's runtime for its device (onnxruntime-web's build) is loaded: true when it is kept in
   * the origin's caches, so that a reload without the network starts the engine; otherwise why it is not. Waits while
   * the download cannot finish (offline): it is tried again when the browser is back online, and by the next call.
   */
  runtimeKept(): Promise<true | string>;
  status(): EngineStatus;
}

/**
 * The host page's audio decoder, a Comlink proxy: a worker has no `AudioContext`, so audio that is not WAV (mp3, ogg,
 * webm, m4a) is decoded by the page, to mono samples at the model's rate, once the page has measured it against the
 * request's `maxSeconds` (issue 41). Its answer is transferred, not copied.
 */
export type DecodeAudioInPage = (bytes: Uint8Array, sampleRate: number, maxSeconds?: number) => Promise<Float32Array>;

/**
 * What a call's answer carries back, per task: its result, but for chat, whose events carried the choices (the caller
 * builds the result from them), only the usage.
 */
export type WorkerAnswers = { [T in ModelTask]: T extends 'chat' ? TokenUsage : TaskResult<T> };

/**
 * The local engine on a connected port (see `LocalEngine`): one `run` for every task. Each call carries its own
 * MessagePort: the worker pushes every event of the run on it as it happens (one message a token, no reply awaited),
 * then `end`; the caller sends `abort` on it. The call answers with `WorkerAnswers[T]`.
 */
export interface EngineWorkerApi {
  run<T extends ModelTask>(
    task: T,
    target: LocalTarget,
    request: TaskRequest<T>,
    port: MessagePort,
  ): Promise<WorkerAnswers[T]>;
}

/**
 * Messages on a call's port. Events and `end` go worker → caller; `abort` and `alive` go caller → worker. The caller
 * says `alive` every CALLER_ALIVE_MS: a service worker can be stopped by the browser at any moment, without a word to
 * the ports it held, so a call that stops hearing from its caller is aborted rather than generating for nobody.
 */
export type CallMessage =
  | { type: 'event'; event: TaskEvent<ModelTask> }
  /** Which candidate serves the call (`candidateKey`), and where its model runs, before its first event. */
  | { type: 'backend'; backend: string; runsOn?: RunsOn }
  | { type: 'end' }
  | { type: 'abort' }
  | { type: 'alive' };

/** How often a caller says `alive` on a running call's port: one message a second is nothing next to the tokens. */
export const CALLER_ALIVE_MS = 1_000;

/**
 * How long a call may go without hearing from its caller before it is aborted: four missed `alive`s, so that a busy
 * service worker is not mistaken for a stopped one, while an orphaned generation wastes at most a few seconds. Counted
 * in time the worker was free to listen: a forward pass that blocks its thread counts once, however long it took.
 */
export const CALLER_SILENCE_MS = 4_000;

/** Service worker → every window: "send me a port to the engine". */
export const PORT_REQUEST = 'lantern:port-request';

/** Host page → service worker, with a MessagePort to the engine worker as the message's one transferred port. */
export interface PortOffer {
  type: 'lantern:port-offer';
  /** The page's PROTOCOL_VERSION: a service worker of another version closes the port unused. */
  protocol: number;
  /** Which host and which of its workers (counted from 1) the port leads to; a service worker keeps the first port of each. */
  host: string;
  worker: number;
  /**
   * The host's profile, policy and device: the service worker decides with them which candidate serves a request,
   * and forwards to a remote one itself, with no engine worker involved (it keeps them when the host goes).
   */
  routing: RoutingConfig;
}

export function isPortOffer(data: unknown): data is PortOffer {
  return typeof data === 'object' && data !== null && (data as PortOffer).type === 'lantern:port-offer';
}

/**
 * Page → service worker, once the page is controlled and whenever its controller changes: the page's protocol version.
 * The service worker answers the page with its own, in the same message; either side may then see that they differ.
 */
export interface ProtocolCheck {
  type: 'lantern:protocol';
  protocol: number;
}

export function isProtocolCheck(data: unknown): data is ProtocolCheck {
  return typeof data === 'object' && data !== null && (data as ProtocolCheck).type === 'lantern:protocol';
}

/**
 * The Web Lock that a host page holds for as long as it hosts the engine (`id` is `EngineHost.id`). The browser
 * releases a page's locks when the page goes, however it goes: closed, or its renderer crashed, which says nothing on
 * any port. A service worker that uses the host's engine worker asks for the lock too, and is granted it when the host
 * is gone: then it stops sending to that worker (a request that was streaming ends with the retryable `unavailable`
 * error; one that had produced nothing is sent to the next host).
 */
export const hostLock = (id: string) => `lantern:engine-host:${id}`;

/**
 * Page → service worker: the fetch sent with this id in its `x-lantern-request` header was aborted. Browsers do not
 * tell a service worker when a page aborts a fetch whose answer has not started (w3c/ServiceWorker#1544), so
 * `LocalAPI.fetch` says so itself. (A streamed answer needs no help: aborting cancels its body.)
 */
export interface AbortRequest {
  type: 'lantern:abort';
  id: string;
}

export const REQUEST_ID_HEADER = 'x-lantern-request';

export function isAbortRequest(data: unknown): data is AbortRequest {
  return typeof data === 'object' && data !== null && (data as AbortRequest).type === 'lantern:abort';
}

/**
 * Host page → service worker, as the page goes away (`pagehide`): its engine worker goes with it, so the service
 * worker stops sending requests to it and waits for the next host's port instead.
 */
export interface HostGone {
  type: 'lantern:host-gone';
  host: string;
}

export function isHostGone(data: unknown): data is HostGone {
  return typeof data === 'object' && data !== null && (data as HostGone).type === 'lantern:host-gone';
}

/**
 * Service worker → its windows: the candidate that answers a public model ID changed (to a remote server when the
 * device cannot serve it, back to the local model, …); `LocalAPI.models()` reports it.
 */
export interface Served {
  type: 'lantern:served';
  model: string;
  backend: string;
}

export function isServed(data: unknown): data is Served {
  return typeof data === 'object' && data !== null && (data as Served).type === 'lantern:served';
}

/**
 * Service worker → pages: how far the indexing of a vector store's file has got (its chunks embedded so far), so that a
 * page can show it; the file's status in the API says when it is done.
 */
export interface Indexing {
  type: 'lantern:indexing';
  vectorStoreId: string;
  fileId: string;
  chunksDone: number;
  chunksTotal: number;
}

export function isIndexing(data: unknown): data is Indexing {
  return typeof data === 'object' && data !== null && (data as Indexing).type === 'lantern:indexing';
}

/**
 * Browsers stop a service worker whose events stay pending too long: Firefox once its idle timeout has passed and as
 * long again (30 s and 30 s by default), Chromium after five minutes per event. A model's first download or a long
 * generation takes longer, and the request then fails as a network error. Every event a page sends restarts those
 * clocks: so while a service worker has work in flight it tells its windows it is busy (`Busy`), each of them sends a
 * `KeepAwake` every KEEP_AWAKE_MS, and each KeepAwake is answered with a Busy that says whether it still is (a page
 * stops when it is not, or when a service worker stopped after all restarted for the KeepAwake, knowing of no work).
 */
export const KEEP_AWAKE_MS = 5_000;

/** Service worker → windows: whether it has requests in flight (see KEEP_AWAKE_MS). */
export interface Busy {
  type: 'lantern:busy';
  busy: boolean;
}

export function isBusy(data: unknown): data is Busy {
  return typeof data === 'object' && data !== null && (data as Busy).type === 'lantern:busy';
}

/** Page → service worker: an event that restarts its idle clocks, sent while it says it is busy. */
export interface KeepAwake {
  type: 'lantern:keep-awake';
}

export function isKeepAwake(data: unknown): data is KeepAwake {
  return typeof data === 'object' && data !== null && (data as KeepAwake).type === 'lantern:keep-awake';
}

/**
 * Page → service worker: keep these files of the app (same-origin URLs) for offline use. Lantern's prebuilt service
 * worker, which lists no app files of its own, keeps them (the page and scripts it served before it controlled the
 * page); a precaching one has them already and ignores it.
 */
export interface KeepFiles {
  type: 'lantern:keep-files';
  urls: string[];
}

export function isKeepFiles(data: unknown): data is KeepFiles {
  return (
    typeof data === 'object' &&
    data !== null &&
    (data as KeepFiles).type === 'lantern:keep-files' &&
    Array.isArray((data as KeepFiles).urls) &&
    (data as KeepFiles).urls.every((url) => typeof url === 'string')
  );
}

interface SerializedEngineError {
  engineError: true;
  kind: EngineErrorKind;
  message: string;
  param: string | undefined;
  /** A cause that is plain numbers (a storage shortfall: what the walk's last word sums up), else none. */
  cause: Record<string, number> | undefined;
}

/** A cause that crosses as it is: an object of numbers only (a `StorageShortfall`). */
const plainNumbers = (cause: unknown): cause is Record<string, number> =>
  typeof cause === 'object' &&
  cause !== null &&
  Object.getPrototypeOf(cause) === Object.prototype &&
  Object.values(cause).every((v) => typeof v === 'number');

let registered = false;

/**
 * Makes Comlink carry EngineErrors across intact: its built-in `throw` handler keeps only an error's message and
 * name, so `kind` and `param`, which decide the HTTP status, would be lost. Call on both sides of the boundary.
 */
export function registerEngineErrorTransfer(): void {
  if (registered) return;
  registered = true;
  const builtIn = Comlink.transferHandlers.get('throw')!;
  Comlink.transferHandlers.set('throw', {
    canHandle: builtIn.canHandle,
    serialize(thrown: unknown) {
      const { value } = thrown as { value: unknown };
      if (value instanceof EngineError) {
        const serialized: SerializedEngineError = {
          engineError: true,
          kind: value.kind,
          message: value.message,
          param: value.param,
          cause: plainNumbers(value.cause) ? value.cause : undefined,
        };
        return [serialized, []];
      }
      return builtIn.serialize(thrown);
    },
    deserialize(serialized: unknown) {
      if ((serialized as SerializedEngineError).engineError) {
        const { kind, message, param, cause } = serialized as SerializedEngineError;
        throw new EngineError(kind, message, {
          ...(param !== undefined && { param }),
          ...(cause !== undefined && { cause }),
        });
      }
      return builtIn.deserialize(serialized);
    },
  });
}
