import { Workbox } from 'workbox-window';
import { EngineError, type LoadProgress, type ModelTask, type RunsOn } from '../engine-interface/index.ts';
import {
  candidateChain,
  candidateKey,
  isRemote,
  modelChain,
  type CandidateFailure,
  type LocalCandidate,
  type ModelCandidate,
  type ModelChain,
  type ModelProfile,
  type RoutingPolicy,
  validateProfile,
} from '../models/model-profile.ts';
import { DEFAULT_PROFILE } from '../models/model-registry.ts';
import { indexedDbKeyStorage, KeyRing, localStorageAppKeys } from '../keys/index.ts';
import {
  hostLock,
  isProtocolCheck,
  isBusy,
  isIndexing,
  isServed,
  KEEP_AWAKE_MS,
  type KeepAwake,
  PORT_REQUEST,
  PROTOCOL_VERSION,
  REQUEST_ID_HEADER,
  type AbortRequest,
  type DeviceInfo,
  type DevicePreference,
  type EngineStatus,
  type EngineWorkerConfig,
  type Indexing,
  type KeepFiles,
  type ProtocolCheck,
  type RunReport,
} from '../worker/protocol.ts';
import { deviceCapabilities } from '../worker/device.ts';
import { EngineHost } from './engine-host.ts';
import { ModelStorage } from './model-storage.ts';
import { offlineStatus, pageFiles, type OfflineStatus } from './offline-readiness.ts';
import { endBrokenStreams } from './stream-breaks.ts';

export interface LocalAPIOptions {
  /** URL of the service worker script that mounts Lantern (default `/service-worker.js`, as the Vite plugin emits). */
  serviceWorker?: string;
  /**
   * URL of the engine worker script (default `lantern/engine-worker.js` beside the service worker, where the Vite
   * plugin and the package's prebuilt files put it).
   */
  engineWorker?: string;
  /**
   * Public model IDs and what each runs (default: `DEFAULT_PROFILE`, real models from the Hugging Face hub, cached
   * after their first download). `bundledProfile('/models')` selects the tiny fixture models that ship with the app.
   * A profile that cannot be served (an alias that is also an ID, or of two entries) is refused: `startLocalAPI`
   * rejects with a TypeError that says why.
   */
  profile?: ModelProfile;
  /**
   * For IDs whose chains have remote candidates: `local-first` (default) tries the local ones this device can run,
   * then the servers; `remote-first` the servers, then the local ones; `local-only` never forwards a request.
   */
  policy?: RoutingPolicy;
  /** Where models run (default `auto`: WebGPU when the browser has an adapter, otherwise WebAssembly). */
  device?: DevicePreference;
  /** Run reports carry each token's timestamp (`tokenTimes`), for benchmarks. */
  trace?: boolean;
  /**
   * Ask the browser to keep this origin's storage (keys, stored responses, downloaded models) until the user clears
   * it (`navigator.storage.persist()`): Safari deletes a site's storage after seven days without a visit, and every
   * browser may evict it under storage pressure, unless persisted. Default: ask when a model is first downloaded,
   * whose loss would cost the download again (`lantern.persisted` has the answer); `true` asks at start; `false`
   * never asks. Firefox asks its user.
   */
  persistStorage?: boolean;
}

/** The events of a LocalAPI; every tab receives them, whichever tab hosts the engine. */
export interface LocalAPIEventMap {
  /** Model download and load progress. */
  progress: CustomEvent<LoadProgress>;
  /** The device the engine runs on, once known. */
  device: CustomEvent<DeviceInfo>;
  /** One finished model run: tokens, time, outcome. */
  run: CustomEvent<RunReport>;
  /** This tab became the engine host (the previous one closed, or it is the first). */
  host: CustomEvent<{ isHost: true }>;
  /** The engine worker was replaced after a failure; the detail says why. */
  restart: CustomEvent<{ reason: string }>;
  /**
   * A new version of the service worker took control of this page (every open tab hears it, the first visit's too):
   * the app may tell its user to reload, and must when `mismatch` follows.
   */
  update: Event;
  /**
   * This page and Lantern's service worker (or engine worker) are different versions (`PROTOCOL_VERSION`): a page left
   * open across an app update. The page stops hosting the engine (a tab of the new version takes over) until a service
   * worker of its version controls it; tell the user to reload. Dispatched once per version met.
   */
  mismatch: CustomEvent<VersionMismatch>;
  /** A public ID is now answered by another candidate (`backend` is its `candidateKey`). */
  served: CustomEvent<{ model: string; backend: string }>;
  /**
   * A vector store's file is being indexed: its chunks embedded so far, of how many (`vectorStoreId`, `fileId`,
   * `chunksDone`, `chunksTotal`). Its status in the Vector Stores API says when it is done, or failed.
   */
  indexing: CustomEvent<Omit<Indexing, 'type'>>;
  /** This device can work offline from now on: the detail says which models answer offline (see `offlineReady`). */
  'offline-ready': CustomEvent<OfflineStatus>;
}

/** The detail of a LocalAPI's `mismatch` event. */
export interface VersionMismatch {
  /** Which part of Lantern runs another version than this page. */
  part: 'service worker' | 'engine worker';
  /** This page's protocol version (`PROTOCOL_VERSION`), and the other part's (null where it did not say). */
  page: number;
  other: number | null;
  /** What happened, for a log; the user needs to reload the page. */
  message: string;
}

/** A public model ID on this device: what it will try, first to last, what answers it, and what it will not, with why. */
export interface ModelChoice extends Omit<ModelChain, 'candidates'> {
  id: string;
  task: ModelTask;
  /** What serves it, first to last: the local candidates this device can run and the servers, in the policy's order. */
  candidates: ModelCandidate[];
  /** The `candidateKey` of the candidate that answered its last request (null before any: the first is tried first). */
  servedBy: string | null;
  /**
   * Where each of its candidates loaded on the engine computes, by `candidateKey`, as its runtime found it once loaded
   * (`RunsOn`: `webgpu`, `wasm`, …): only those loaded since the engine (re)started.
   */
  runsOn: Record<string, RunsOn>;
}

/** Messages between the tabs of an origin, so that every tab hears the host's events. */
type TabMessage =
  | { type: 'progress'; detail: LoadProgress }
  | { type: 'device'; detail: DeviceInfo }
  | { type: 'run'; detail: RunReport }
  | { type: 'restart'; detail: { reason: string } }
  | { type: 'failures'; detail: CandidateFailure[] }
  | { type: 'runtime'; detail: true | string }
  | { type: 'hello' }
  | { type: 'restart-request'; reason: string };

const HOST_LOCK = 'lantern:engine-host';
const TAB_CHANNEL = 'lantern:tabs';

/**
 * Lantern, started in this page: `/v1` on this origin answers the OpenAI-shaped API. Point the openai SDK at
 * `baseURL` with the app's key from `keys.forApp(name)`.
 */
export class LocalAPI extends EventTarget {
  /** `${location.origin}/v1`: absolute, as the openai SDK requires. */
  readonly baseURL = `${location.origin}/v1`;
  /**
   * Issue, list and revoke API keys (IndexedDB, hashes only; shared by every tab and the service worker); `forApp`
   * returns the app's own key, kept in localStorage so that every page load uses the same one; `revokeUnusedSince`
   * clears out stale ones. Any script of this origin can do all of it: see docs/security.md.
   */
  readonly keys: KeyRing = new KeyRing({ storage: indexedDbKeyStorage(), appKeys: localStorageAppKeys() });
  #device: DeviceInfo | undefined;
  /** Candidates that failed to load in the host's engine workers, and are skipped. */
  #failures: CandidateFailure[] = [];
  #profile: ModelProfile = DEFAULT_PROFILE;
  #policy: RoutingPolicy = 'local-first';
  /** Public ID → the candidate that answered it last, as the service worker reports it. */
  readonly #servedBy = new Map<string, string>();
  #host: EngineHost | undefined;
  readonly #closed = new AbortController();
  /** The next keep-awake this page sends its busy service worker (see KEEP_AWAKE_MS). */
  #awake: ReturnType<typeof setTimeout> | undefined;
  /** What this page hosts with, once started; and its place in the election, while it is in it. */
  #election: { config: EngineWorkerConfig; script: URL } | undefined;
  #candidacy: AbortController | undefined;
  /** The mismatch last told (`mismatch` event), while it lasts. */
  #mismatch: VersionMismatch | undefined;
  readonly #tabs = new BroadcastChannel(TAB_CHANNEL);

  /**
   * Whether the browser keeps this origin's storage until the user clears it: resolves once the browser has answered
   * (`persistStorage` asks it; Firefox asks its user, so this may wait on them), false where it has no StorageManager
   * (WebKitGTK). When false, the storage may be evicted: keys then answer 401 and models download again.
   */
  persisted: Promise<boolean> = Promise.resolve(false);
  /** Whether to ask for persistent storage when a model is next stored: until asked once (`persistStorage`). */
  #persistOnDownload = true;
  /** Candidates passed over on their last load (no room for their download, or no network), by key, with why. */
  readonly #passedOver = new Map<string, { model: string; reason: string }>();
  /** Where each candidate loaded on the engine runs, by key, from its `ready` progress; gone with the engine. */
  readonly #runsOn = new Map<string, RunsOn>();
  /** The engine worker's runtime: true once kept for offline starts, a reason where it cannot be, else unknown yet. */
  #runtime: true | string | undefined;
  #engineWorker: URL | undefined;
  #offlineReady!: (status: OfflineStatus) => void;
  /**
   * Resolves once this device can work offline (Workbox apps' "ready to work offline"): a reload without the network
   * starts Lantern, and the models in the status's `models` answer (the app's bundled ones, once its service worker
   * keeps them, and any stored complete); `missing` says which need the network first, and why. It is stored in the
   * background from the first visit, whether or not a model runs: the page, the workers and this device's runtime
   * (onnxruntime-web's build, 14 to 27 MB). While the network is gone before that download ends, it waits for the
   * network to come back. Resolves with `ready: false` and the `reason` where it cannot be (a service worker that keeps
   * no files, a browser that gives no room); `offline-ready` is dispatched when it resolves ready.
   *
   * @example
   * lantern.offlineReady.then(({ ready }) => ready && showToast('Ready to work offline'));
   */
  readonly offlineReady: Promise<OfflineStatus> = new Promise((resolve) => (this.#offlineReady = resolve));

  /**
   * The models stored on this device: what each ID has stored, a download ahead of need (`prefetch`), removal, and
   * the origin's quota (see ModelStorage).
   */
  readonly storage: ModelStorage = new ModelStorage({
    profile: () => this.#profile,
    chains: async () =>
      (await this.models()).map(({ id, candidates }) => ({
        id,
        candidates: candidates.filter((c): c is LocalCandidate => !isRemote(c)),
      })),
    progress: (detail) => this.#broadcast({ type: 'progress', detail }),
    persist: () => (this.persisted = keepStorage(true)),
    persisted: () => this.persisted,
  });

  /** The device the engine runs on, once the host has started it. */
  get device(): DeviceInfo | undefined {
    return this.#device;
  }

  /**
   * Each public model ID with what this device will try for it, first to last (`candidates`: the fallback chain after
   * the device's capabilities, the failures and the policy are taken into account: the local candidates and the
   * servers; empty: the ID cannot be served here), which of them answered it last (`servedBy`), the candidates that failed
   * to load on this page and are skipped until `restartEngine()` (`failed`, each with its reason), and those this
   * device cannot run (`skipped`, each with why). Waits until the device is known.
   */
  async models(): Promise<ModelChoice[]> {
    const info =
      this.#device ??
      (await new Promise<DeviceInfo>((resolve) =>
        this.addEventListener('device', (event) => resolve(event.detail), { once: true }),
      ));
    const device = deviceCapabilities(info);
    return Object.entries(this.#profile).map(([id, entry]) => {
      const candidates = candidateChain(entry, device, this.#policy, this.#failures);
      const servedBy = this.#servedBy.get(id) ?? null;
      const chain = modelChain(entry, device, this.#failures);
      const passedOver = candidates.flatMap((c) => {
        const skip = this.#passedOver.get(candidateKey(c));
        return skip?.model === id ? [{ candidate: candidateKey(c), reason: skip.reason }] : [];
      });
      const runsOn = Object.fromEntries(
        candidates.flatMap((c) => {
          const on = this.#runsOn.get(candidateKey(c));
          return on ? [[candidateKey(c), on] as const] : [];
        }),
      );
      const skipped = [...chain.skipped, ...passedOver];
      return { id, task: entry.task, ...chain, skipped, candidates, servedBy, runsOn };
    });
  }

  /**
   * `fetch`, for the openai SDK's `fetch` option: the same requests, but an abort of a request whose answer has not
   * started streaming also reaches the engine (browsers do not pass those aborts on to service workers), and a stream
   * that breaks because the service worker answering it stopped (the host tab's renderer crashed and took it along)
   * ends with the retryable SSE error a closed host gets, not a bare network error (see `endBrokenStreams`).
   *
   * @example new OpenAI({ baseURL: lantern.baseURL, apiKey, fetch: lantern.fetch, dangerouslyAllowBrowser: true })
   */
  readonly fetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const request = new Request(input, init);
    const id = crypto.randomUUID();
    const headers = new Headers(request.headers);
    headers.set(REQUEST_ID_HEADER, id);
    const onAbort = () =>
      navigator.serviceWorker.controller?.postMessage({ type: 'lantern:abort', id } satisfies AbortRequest);
    request.signal.addEventListener('abort', onAbort, { once: true });
    try {
      return endBrokenStreams(await fetch(new Request(request, { headers })), request.signal);
    } finally {
      // Once the answer has started, aborting cancels its body, which the service worker does see.
      request.signal.removeEventListener('abort', onAbort);
    }
  };

  /**
   * Whether this device can work offline now, and which models answer offline (see `offlineReady`): call it again
   * after a download (`storage.prefetch`) or a first request to a real model.
   */
  async offlineStatus(): Promise<OfflineStatus> {
    const chains = (await this.models()).map(({ id, candidates }) => ({ id, candidates }));
    const files = this.#engineWorker ? pageFiles(this.#engineWorker) : [];
    return offlineStatus({ runtime: this.#runtime, files, chains });
  }

  /** What the engine is doing: calls in flight. Null in a tab that does not host the engine. */
  async engineStatus(): Promise<EngineStatus | null> {
    return this.#host ? this.#host.status() : null;
  }

  /**
   * Replaces the engine worker with a fresh one, freeing every loaded model; they load again on next use, and
   * candidates that failed to load are tried again. Requests running on the old worker end with an error (an SSE error
   * event when streaming). Works from any tab.
   */
  restartEngine(reason = 'restarted by the app'): void {
    if (this.#host) this.#host.restart(reason);
    else this.#tabs.postMessage({ type: 'restart-request', reason } satisfies TabMessage);
  }

  /** Whether this tab hosts the engine worker. */
  get isHost(): boolean {
    return this.#host !== undefined;
  }

  override addEventListener<K extends keyof LocalAPIEventMap>(
    type: K,
    listener: (event: LocalAPIEventMap[K]) => void,
    options?: boolean | AddEventListenerOptions,
  ): void;
  override addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void {
    super.addEventListener(type, listener, options);
  }

  override removeEventListener<K extends keyof LocalAPIEventMap>(
    type: K,
    listener: (event: LocalAPIEventMap[K]) => void,
    options?: boolean | EventListenerOptions,
  ): void;
  override removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions,
  ): void {
    super.removeEventListener(type, listener, options);
  }

  /** Leaves: stops hosting (another tab takes over) and stops listening. `/v1` keeps working from other tabs. */
  close(): void {
    this.#closed.abort();
    clearTimeout(this.#awake);
    this.#tabs.close();
  }

  /** @internal Wires this page up; called once by startLocalAPI. */
  async _start(options: LocalAPIOptions): Promise<void> {
    if (options.profile) validateProfile(options.profile);
    const container = navigator.serviceWorker;
    // Listen before registering: a restarted service worker may ask for a port at any moment.
    container.addEventListener('message', (event) => {
      if (event.data?.type === PORT_REQUEST && event.source instanceof ServiceWorker) {
        // A restarted service worker knows no page's version: this page's goes with the port, if it hosts.
        this.#checkProtocol(event.source);
        if (this.#host) void this.#host.offerPort(event.source);
      } else if (isIndexing(event.data)) {
        const { type: _type, ...progress } = event.data;
        this.dispatchEvent(new CustomEvent('indexing', { detail: progress }));
      } else if (isServed(event.data)) {
        const { model, backend } = event.data;
        this.#servedBy.set(model, backend);
        this.dispatchEvent(new CustomEvent('served', { detail: { model, backend } }));
      } else if (isBusy(event.data) && event.source instanceof ServiceWorker) {
        this.#keepAwake(event.source, event.data.busy);
      } else if (isProtocolCheck(event.data) && event.source === container.controller) {
        this.#onServiceWorkerProtocol(event.data.protocol);
      } else if (isRealtimeMessage(event.data)) {
        // A WebRTC call this page made (the Agents SDK's `transport: 'webrtc'`): its peer is answered here, the
        // session runs here; the code (and its reading of the message) loads the first time a page calls, so that an
        // app's own bundle carries none of it.
        void import('../realtime-webrtc/page-calls.ts').then((calls) =>
          calls.onCallMessage(event.data, event.ports[0]),
        );
      }
    });
    container.startMessages();
    this.#tabs.onmessage = (event: MessageEvent<TabMessage>) => this.#onTabMessage(event.data);

    const serviceWorker = options.serviceWorker ?? '/service-worker.js';
    const workbox = new Workbox(serviceWorker);
    // Every change of controller after the first is a new version taking over (`skipWaiting` and `clients.claim`),
    // told to every tab, whenever it opened. Not workbox-window's `controlling`: it decides `isUpdate` once, at
    // registration, and is not fired for a worker found later, so a tab opened on the first visit never heard of one.
    let controlled = container.controller !== null;
    container.addEventListener('controllerchange', () => {
      if (controlled) this.dispatchEvent(new Event('update'));
      controlled = true;
      this.#checkProtocol();
      if (this.#host && container.controller) void this.#host.offerPort(container.controller);
    });
    await workbox.register();
    // The service worker claims open pages when it activates, so even the first load is controlled.
    if (!container.controller) {
      await new Promise<void>((resolve) =>
        container.addEventListener('controllerchange', () => resolve(), { once: true }),
      );
    }

    this.#profile = options.profile ?? DEFAULT_PROFILE;
    this.#policy = options.policy ?? 'local-first';
    this.#persistOnDownload = options.persistStorage === undefined;
    this.persisted = keepStorage(options.persistStorage === true);
    const engineWorker = new URL(
      options.engineWorker ?? 'lantern/engine-worker.js',
      new URL(serviceWorker, location.href),
    );
    this.#engineWorker = engineWorker;
    this.#election = {
      config: { device: options.device ?? 'auto', trace: options.trace === true },
      script: engineWorker,
    };
    this.#checkProtocol();
    this.#elect();
    this.#tabs.postMessage({ type: 'hello' } satisfies TabMessage);
  }

  /** Tells the service worker this page's protocol version; it answers with its own (see #onServiceWorkerProtocol). */
  #checkProtocol(serviceWorker = navigator.serviceWorker.controller): void {
    const check: ProtocolCheck = { type: 'lantern:protocol', protocol: PROTOCOL_VERSION };
    serviceWorker?.postMessage(check);
  }

  /**
   * The service worker's protocol version. Another than this page's: the page's engine worker may not speak it, so the
   * page leaves the election (a tab of the service worker's version hosts instead) and tells the app. Its own again (a
   * service worker of its version took over): it joins the election again.
   */
  #onServiceWorkerProtocol(protocol: number): void {
    if (protocol === PROTOCOL_VERSION) {
      if (this.#mismatch?.part !== 'service worker') return;
      this.#mismatch = undefined;
      this.#elect();
      return;
    }
    this.#mismatched({
      part: 'service worker',
      page: PROTOCOL_VERSION,
      other: protocol,
      message:
        `This page runs another version of the app than its service worker (protocol ${PROTOCOL_VERSION} against ` +
        `${protocol}): reload the page.`,
    });
  }

  /** Leaves the election (stops hosting, or waiting to), and tells the app, once per version met. */
  #mismatched(mismatch: VersionMismatch): void {
    this.#candidacy?.abort();
    this.#candidacy = undefined;
    if (this.#mismatch?.part === mismatch.part && this.#mismatch.other === mismatch.other) return;
    this.#mismatch = mismatch;
    console.warn(`[lantern] ${mismatch.message}`);
    this.dispatchEvent(new CustomEvent('mismatch', { detail: mismatch }));
  }

  /**
   * Queues for the origin's engine-host lock. The first tab gets it at once; the others wait, and the next in line
   * takes over when the host tab closes (the browser releases a closed tab's locks), so there is always one host and
   * one copy of each model.
   */
  #elect(): void {
    if (!this.#election || this.#candidacy || this.#closed.signal.aborted) return;
    const { config, script } = this.#election;
    const candidacy = new AbortController();
    this.#candidacy = candidacy;
    // Left on close(), or on a version mismatch.
    const leave = AbortSignal.any([this.#closed.signal, candidacy.signal]);
    navigator.locks
      .request(HOST_LOCK, { signal: leave }, async () => {
        const host = new EngineHost(
          config,
          { profile: this.#profile, policy: this.#policy },
          {
            progress: (detail) => this.#broadcast({ type: 'progress', detail }),
            report: (detail) => this.#broadcast({ type: 'run', detail }),
            device: (detail) => this.#broadcast({ type: 'device', detail }),
            restarted: (reason) => {
              this.#broadcast({ type: 'restart', detail: { reason } });
              const controller = navigator.serviceWorker.controller;
              if (controller) void host.offerPort(controller);
            },
            failures: (detail) => this.#broadcast({ type: 'failures', detail }),
            runtime: (detail) => this.#broadcast({ type: 'runtime', detail }),
          },
          script,
        );
        // Held while this page hosts: a service worker learns from its release that the host is gone, however it went.
        await holdLock(hostLock(host.id), leave);
        if (leave.aborted) return;
        const started = host.start();
        this.#host = host;
        this.#broadcast({ type: 'failures', detail: host.failures }); // a new host knows of no failure yet
        // On pagehide (closing, reloading or navigating away) the worker dies with this page: say so first.
        const retire = () => {
          const controller = navigator.serviceWorker.controller;
          if (controller) host.retire(controller);
        };
        addEventListener('pagehide', retire);
        leave.addEventListener('abort', retire, { once: true });
        try {
          await started.catch((error: unknown) => {
            // An engine worker of another version (its script served by a newer service worker, or by the network).
            if (error instanceof EngineError && error.kind === 'version_mismatch') {
              this.#mismatched({ part: 'engine worker', page: PROTOCOL_VERSION, other: null, message: error.message });
            }
            throw error;
          });
          this.dispatchEvent(new CustomEvent('host', { detail: { isHost: true } }));
          const controller = navigator.serviceWorker.controller;
          if (controller) await host.offerPort(controller);
          // Hold the lock for as long as this page keeps the API open and speaks its service worker's protocol.
          await untilAborted(leave);
        } finally {
          removeEventListener('pagehide', retire);
          host.close();
          if (this.#host === host) this.#host = undefined;
        }
      })
      .catch((error: unknown) => {
        if (!leave.aborted) console.error('[lantern] engine host failed:', error);
      });
  }

  /**
   * Resolves `offlineReady` once the status says ready, or says why it cannot be. A service worker that keeps the
   * files it serves (Lantern's prebuilt one) is asked to keep the page's, which it served before it controlled the
   * page; checked again for a while, as it fetches them.
   */
  async #checkOffline(runtime: true | string): Promise<void> {
    let status = await this.offlineStatus();
    for (let tries = 0; !status.ready && runtime === true && tries < 20; tries += 1) {
      if (tries === 0) {
        const keep: KeepFiles = { type: 'lantern:keep-files', urls: pageFiles(this.#engineWorker!) };
        navigator.serviceWorker.controller?.postMessage(keep);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      status = await this.offlineStatus();
    }
    this.#offlineReady(status);
    if (status.ready) this.dispatchEvent(new CustomEvent('offline-ready', { detail: status }));
  }

  /**
   * While the service worker says it is busy, one event for it every KEEP_AWAKE_MS, each answered with whether it still
   * is: a browser would otherwise stop it in the middle of a long request (see KEEP_AWAKE_MS).
   */
  #keepAwake(serviceWorker: ServiceWorker, busy: boolean): void {
    clearTimeout(this.#awake);
    if (!busy || this.#closed.signal.aborted) return;
    const keepAwake: KeepAwake = { type: 'lantern:keep-awake' };
    this.#awake = setTimeout(() => serviceWorker.postMessage(keepAwake), KEEP_AWAKE_MS);
  }

  /** Sends a message to every other tab and dispatches it here too. */
  #broadcast(message: Exclude<TabMessage, { type: 'hello' | 'restart-request' }>): void {
    this.#tabs.postMessage(message);
    this.#onTabMessage(message);
  }

  /**
   * Keeps what `models()` says of candidates passed over (until one loads), and asks for persistent storage when a
   * model is first stored: a download is what eviction would cost.
   */
  #noteProgress(progress: LoadProgress): void {
    if (progress.status === 'skipped') this.#passedOver.set(progress.candidate, progress);
    else if (progress.status === 'ready') {
      this.#passedOver.delete(progress.resolved);
      if (progress.runsOn) this.#runsOn.set(progress.resolved, progress.runsOn);
    } else if (progress.status === 'download' && this.#persistOnDownload) {
      this.#persistOnDownload = false;
      this.persisted = keepStorage(true);
    }
  }

  #onTabMessage(message: TabMessage): void {
    if (message.type === 'restart-request') {
      this.#host?.restart(message.reason);
      return;
    }
    if (message.type === 'hello') {
      // A tab just opened: tell it the device and the failed candidates, if this tab hosts the engine.
      if (this.#host) {
        this.#tabs.postMessage({ type: 'failures', detail: this.#host.failures } satisfies TabMessage);
        if (this.#device) this.#tabs.postMessage({ type: 'device', detail: this.#device } satisfies TabMessage);
        if (this.#runtime !== undefined) {
          this.#tabs.postMessage({ type: 'runtime', detail: this.#runtime } satisfies TabMessage);
        }
      }
      return;
    }
    if (message.type === 'failures') {
      this.#failures = message.detail; // read by models(); the progress events already told of each failure
      return;
    }
    if (message.type === 'runtime') {
      if (this.#runtime !== true) void this.#checkOffline((this.#runtime = message.detail));
      return;
    }
    if (message.type === 'device') this.#device = message.detail;
    if (message.type === 'restart') this.#runsOn.clear(); // the engine's models went with it
    if (message.type === 'progress') this.#noteProgress(message.detail);
    this.dispatchEvent(new CustomEvent(message.type, { detail: message.detail }));
  }
}

/** Resolves when `signal` aborts (at once if it has). */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Takes the Web Lock `name` and holds it until `signal` aborts; resolves once it is held. */
function holdLock(name: string, signal: AbortSignal): Promise<void> {
  return new Promise((held) => {
    void navigator.locks.request(name, () => {
      held();
      return untilAborted(signal);
    });
  });
}

/** Asks for persistent storage if `ask` and not yet granted; resolves with whether the storage is persistent. */
async function keepStorage(ask: boolean): Promise<boolean> {
  const storage = navigator.storage as StorageManager | undefined;
  if (!storage?.persisted) return false;
  try {
    if (await storage.persisted()) return true;
    return ask && storage.persist ? await storage.persist() : false;
  } catch {
    return false; // a browser that refuses the question (an opaque origin, a sandboxed frame) keeps the default
  }
}

/**
 * Starts Lantern in this page: registers the service worker that answers `/v1`, waits until it controls the page, and
 * joins the election of the tab that hosts the engine. Resolves once `fetch('/v1/...')` is answered by Lantern.
 *
 * @example
 * const lantern = await startLocalAPI();
 * const { key } = await lantern.keys.forApp('my app'); // the same key on every load
 * const client = new OpenAI({ baseURL: lantern.baseURL, apiKey: key, dangerouslyAllowBrowser: true });
 */
export async function startLocalAPI(options: LocalAPIOptions = {}): Promise<LocalAPI> {
  if (!('serviceWorker' in navigator)) {
    throw new Error(
      'Lantern needs service workers: serve the page over https or from localhost, in a browser that has them.',
    );
  }
  const api = new LocalAPI();
  await api._start(options);
  return api;
}

/** A message about a WebRTC call (src/realtime-webrtc/call-messages.ts), told apart by its type alone. */
const isRealtimeMessage = (data: unknown) =>
  typeof data === 'object' &&
  data !== null &&
  typeof (data as { type?: unknown }).type === 'string' &&
  (data as { type: string }).type.startsWith('lantern:realtime-');
