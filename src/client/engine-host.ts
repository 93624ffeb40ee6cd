import * as Comlink from 'comlink';
import { decodeAudioInPage } from '../audio/index.ts';
import type { LoadProgress } from '../engine-interface/index.ts';
import type { CandidateFailure, RoutingConfig } from '../models/model-profile.ts';
import { deviceCapabilities } from '../worker/device.ts';
import {
  PROTOCOL_VERSION,
  registerEngineErrorTransfer,
  type DeviceInfo,
  type EngineStatus,
  type EngineWorkerConfig,
  type EngineWorkerControl,
  type HostGone,
  type PortOffer,
  type RunReport,
} from '../worker/protocol.ts';

export interface EngineHostEvents {
  progress(progress: LoadProgress): void;
  report(report: RunReport): void;
  device(device: DeviceInfo): void;
  /** The engine worker was replaced, for the reason given. */
  restarted(reason: string): void;
  /** The candidates that failed to load in this host's workers, skipped from now on, changed. */
  failures(failures: CandidateFailure[]): void;
  /** The worker's runtime is loaded: true when it is kept for offline starts, else why not (see `runtimeKept`). */
  runtime(kept: true | string): void;
}

/**
 * The page side of the engine worker, in the one tab elected to host it: spawns the worker, hands service workers
 * ports to it, and replaces it when it breaks (a crash, or a failure that leaves transformers.js unusable), after which
 * the next request runs on the fresh worker.
 *
 * It also remembers what broke its workers: when a candidate's load left a worker unable to load anything more
 * (transformers.js' session chain stays rejected), the host remembers the candidate and why, starts a fresh worker, and
 * names the candidate in the routing of its port offers, so that the service worker's router skips it from then on.
 * The memory lasts as long as this host, or until `restart()`.
 */
export class EngineHost {
  /** Identifies this host in port offers, so a service worker can tell a new host from a repeated offer. */
  readonly id = crypto.randomUUID();
  readonly #config: EngineWorkerConfig;
  /** The profile and policy the service worker's router decides with, sent with each port. */
  readonly #routing: Pick<RoutingConfig, 'profile' | 'policy'>;
  readonly #events: EngineHostEvents;
  readonly #script: URL;
  #worker: Worker | undefined;
  #control: Comlink.Remote<EngineWorkerControl> | undefined;
  #started: Promise<DeviceInfo> | undefined;
  /** Counts workers: a port offer names its worker by this number. */
  #serial = 0;
  /** Candidates whose load broke a worker, by key: the router skips them (see `offerPort`). */
  readonly #failed = new Map<string, CandidateFailure>();

  /**
   * `config` configures each engine worker; `routing` is what the service worker routes with (the worker needs none of
   * it); `script` is the engine worker's URL (see `LocalAPIOptions.engineWorker`).
   */
  constructor(
    config: EngineWorkerConfig,
    routing: Pick<RoutingConfig, 'profile' | 'policy'>,
    events: EngineHostEvents,
    script: URL,
  ) {
    registerEngineErrorTransfer();
    this.#config = config;
    this.#routing = routing;
    this.#events = events;
    this.#script = script;
  }

  /** Spawns and configures the engine worker; resolves with the device it runs on. */
  start(): Promise<DeviceInfo> {
    this.#serial += 1;
    const serial = this.#serial;
    const worker = new Worker(this.#script, {
      type: 'module',
      name: 'lantern-engine',
    });
    worker.addEventListener('error', (event) => this.#replace(serial, `the engine worker crashed: ${event.message}`));
    this.#worker = worker;
    this.#control = Comlink.wrap<EngineWorkerControl>(worker);
    this.#started = this.#control
      .start(
        { ...this.#config, protocol: PROTOCOL_VERSION },
        Comlink.proxy((progress: LoadProgress) => this.#events.progress(progress)),
        Comlink.proxy((report: RunReport) => this.#events.report(report)),
        Comlink.proxy((reason: string, failed?: CandidateFailure) => this.#replace(serial, reason, failed)),
        // The worker has no AudioContext: the page decodes audio that is not WAV, and hands the samples back.
        Comlink.proxy(async (bytes: Uint8Array, sampleRate: number, maxSeconds?: number) => {
          const samples = await decodeAudioInPage(bytes.slice().buffer, sampleRate, maxSeconds);
          return Comlink.transfer(samples, [samples.buffer]);
        }),
      )
      .then((device) => {
        this.#events.device(device);
        return device;
      });
    const control = this.#control;
    void this.#started
      .then((): Promise<true | string> => control.runtimeKept())
      .then(
        (kept) => serial === this.#serial && this.#events.runtime(kept),
        () => {}, // a worker that failed to start is being replaced; its replacement reports
      );
    return this.#started;
  }

  /**
   * Gives `serviceWorker` a new port to the engine worker, once the worker has started. Never rejects: if the worker
   * fails meanwhile, it is being replaced, and the replacement offers its own port.
   */
  async offerPort(serviceWorker: ServiceWorker): Promise<void> {
    const control = this.#control;
    const serial = this.#serial;
    try {
      const device = await this.#started;
      if (!control || !device || serial !== this.#serial) return;
      const { port1, port2 } = new MessageChannel();
      await control.connect(Comlink.transfer(port1, [port1]));
      const routing: RoutingConfig = {
        ...this.#routing,
        device: deviceCapabilities(device),
        failed: this.failures,
      };
      const offer: PortOffer = {
        type: 'lantern:port-offer',
        protocol: PROTOCOL_VERSION,
        host: this.id,
        worker: serial,
        routing,
      };
      serviceWorker.postMessage(offer, [port2]);
    } catch (error) {
      console.warn('[lantern] could not hand the engine worker to the service worker:', error);
    }
  }

  /** What the engine worker is doing. */
  async status(): Promise<EngineStatus> {
    if (!this.#control) return { calls: 0 };
    return this.#control.status();
  }

  /** The candidates that failed to load in this host's workers and are skipped. */
  get failures(): CandidateFailure[] {
    return [...this.#failed.values()];
  }

  /**
   * Replaces the engine worker with a fresh one (its models are freed), which tries every candidate again; see
   * `LocalAPI.restartEngine`.
   */
  restart(reason: string): void {
    if (this.#failed.size > 0) {
      this.#failed.clear();
      this.#events.failures([]);
    }
    this.#replace(this.#serial, reason);
  }

  /** Tells `serviceWorker` that this host's worker is going away, so it waits for the next host instead. */
  retire(serviceWorker: ServiceWorker): void {
    serviceWorker.postMessage({ type: 'lantern:host-gone', host: this.id } satisfies HostGone);
  }

  /** Terminates the worker; the models it held are freed. */
  close(): void {
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#control?.[Comlink.releaseProxy]();
    this.#control = undefined;
    this.#started = undefined;
  }

  #replace(serial: number, reason: string, failed?: CandidateFailure): void {
    if (serial !== this.#serial) return; // an older worker's last words
    if (failed) {
      this.#failed.set(failed.candidate, failed);
      this.#events.failures(this.failures);
    }
    this.close();
    void this.start().catch(() => {});
    this.#events.restarted(reason);
  }
}
