import * as Comlink from 'comlink';
import {
  ChatResultBuilder,
  EngineError,
  type ChatEvent,
  type ModelTask,
  type TaskEvent,
  type TaskRequest,
  type TaskResult,
} from '../src/engine-interface/index.ts';
import type { LocalEngine, LocalRunOptions, LocalTarget } from '../src/engines/local-engine.ts';
import type { RoutingConfig } from '../src/models/model-profile.ts';
import {
  CALLER_ALIVE_MS,
  registerEngineErrorTransfer,
  type CallMessage,
  type EngineWorkerApi,
  type WorkerAnswers,
} from '../src/worker/protocol.ts';

/**
 * How long a request waits for a port to the engine worker before it is answered "unavailable": long enough for a
 * host tab to answer a port request, or for the next tab to take over (a worker starts in well under a second; model
 * loading happens later, per request), short enough that a page with no host tab learns it quickly.
 */
export const PORT_WAIT_MS = 10_000;

interface Connection {
  api: Comlink.Remote<EngineWorkerApi>;
  port: MessagePort;
  /** `host#worker`: the worker behind the port. */
  key: string;
  /** Tells the calls still running on this connection that it is gone. */
  calls: Set<() => void>;
}

/** A call's connection went away before the call settled. */
class ConnectionLost extends Error {}

export interface EngineWorkerClientOptions {
  /** Asks for a port when there is none (the service worker asks its window clients). */
  requestPort: () => void;
  /**
   * Why no open page can host an engine worker of this protocol version, when that is so (every open page is another
   * version of the app: see PROTOCOL_VERSION); asked when a call finds no port, and by `recheck`.
   */
  hostless?: () => Promise<string | undefined>;
  portWaitMs?: number;
  /** How often a running call says `alive` to its worker (default CALLER_ALIVE_MS; tests shorten it). */
  aliveMs?: number;
}

/**
 * The service worker's client of the engine worker: the local engine, served at the other end of a MessagePort that
 * the host tab hands over, and what the service worker's router sends local links to. The port can be replaced at any
 * time (a new host tab, a restarted worker) or dropped (the host tab went away). A call still running on it then fails
 * as `engine_lost` at once, rather than waiting for answers that will never come; whether it is sent again, to the next
 * worker, is the router's walk to decide (it is, while nothing was output). A caller's abort is answered at once too,
 * whether or not a worker is still there to hear it.
 */
export class EngineWorkerClient implements LocalEngine {
  readonly #requestPort: () => void;
  readonly #portWaitMs: number;
  readonly #aliveMs: number;
  #connection: Connection | undefined;
  /** The last host's routing; kept when it goes, since remote candidates need no engine worker. */
  #routing: RoutingConfig | undefined;
  readonly #hostless: (() => Promise<string | undefined>) | undefined;
  readonly #waiting = new Set<(connection: Connection | EngineError) => void>();

  constructor(options: EngineWorkerClientOptions) {
    registerEngineErrorTransfer();
    this.#requestPort = options.requestPort;
    this.#hostless = options.hostless;
    this.#portWaitMs = options.portWaitMs ?? PORT_WAIT_MS;
    this.#aliveMs = options.aliveMs ?? CALLER_ALIVE_MS;
  }

  /**
   * Uses `port` from now on. `key` names the worker behind it (`host#worker`): a second port to the same worker is
   * closed unused, so a repeated offer does not cut off running calls. `routing` is the host's.
   */
  connect(port: MessagePort, key: string, routing?: RoutingConfig): void {
    if (routing) this.#routing = routing;
    if (this.#connection?.key === key) {
      port.close();
      return;
    }
    this.#drop();
    const connection: Connection = { api: Comlink.wrap<EngineWorkerApi>(port), port, key, calls: new Set() };
    this.#connection = connection;
    this.#waiting.forEach((resolve) => resolve(connection));
    this.#waiting.clear();
  }

  /**
   * Asks `hostless` again (a page told its version): when no open page can host an engine worker of this version, the
   * calls waiting for a port fail at once with `version_mismatch`, rather than waiting for a port none will give.
   */
  async recheck(): Promise<void> {
    if (this.#connection || this.#waiting.size === 0) return;
    const why = await this.#hostless?.();
    if (!why || this.#connection) return;
    const refusal = new EngineError('version_mismatch', why);
    this.#waiting.forEach((settle) => settle(refusal));
    this.#waiting.clear();
  }

  /** Forgets the port of `host`'s worker, if that is the current one: the host page is going away. */
  disconnect(host: string): void {
    if (this.#connection?.key.startsWith(`${host}#`)) this.#drop();
  }

  /** The host's profile, policy and device: known once a host offered a port (asked for, and waited for, if not). */
  async routing(signal?: AbortSignal): Promise<RoutingConfig> {
    if (!this.#routing) await this.#connect(signal);
    if (!this.#routing) throw new EngineError('unavailable', 'The page hosting the engine sent no model profile.');
    return this.#routing;
  }

  /**
   * A call of `task`: its events arrive on its own port, its request crosses as its task sends it, and its result is
   * made of the worker's answer (and, for chat, of the events) by its task's rules (`PORT_TASKS`).
   */
  async run<T extends ModelTask>(
    task: T,
    target: LocalTarget,
    request: TaskRequest<T>,
    options: LocalRunOptions<T> = {},
  ): Promise<TaskResult<T>> {
    const rules: PortTask<T> = PORT_TASKS[task];
    const call = rules.watch(request, options);
    const answer = await this.#send(options.signal, (connection, lost) =>
      this.#withCallPort(call.options, lost, (port) => {
        const sent = rules.crossing?.(request) ?? request;
        // Comlink's types see a generic method at its constraint: the answer is this task's.
        return connection.api.run(task, target, sent, port) as Promise<WorkerAnswers[T]>;
      }),
    );
    return call.result(answer);
  }

  #drop(): void {
    const previous = this.#connection;
    if (!previous) return;
    this.#connection = undefined;
    previous.calls.forEach((lost) => lost());
    previous.port.close();
  }

  /**
   * Sends a call to the engine. `call` gets a signal that fires when its connection is lost: nothing will come back on
   * it, so it lets go of what it holds, and the call fails as `engine_lost`.
   */
  async #send<T>(
    signal: AbortSignal | undefined,
    call: (connection: Connection, lost: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const connection = await this.#connect(signal);
    try {
      return await this.#settleOnLoss(connection, signal, (lost) => call(connection, lost));
    } catch (error) {
      if (!(error instanceof ConnectionLost)) throw error;
      throw new EngineError(
        'engine_lost',
        'The engine went away while this request was running (the tab hosting the models closed, or its engine ' +
          'worker was restarted). Retry the request.',
      );
    }
  }

  /**
   * A call with its own port: events arrive on it, `abort` leaves on it, and `end` marks the last event. When its
   * connection is `lost`, neither the result nor `end` will ever come: the call stops saying `alive` and closes its
   * port then, rather than keep a timer running for a worker that is gone.
   */
  async #withCallPort<T extends ModelTask, A>(
    options: LocalRunOptions<T>,
    lost: AbortSignal,
    invoke: (port: MessagePort) => Promise<A>,
  ): Promise<A> {
    const { port1: mine, port2: theirs } = new MessageChannel();
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    mine.onmessage = (message: MessageEvent<CallMessage>) => {
      if (message.data.type === 'event') options.onEvent?.(message.data.event as TaskEvent<T>);
      else if (message.data.type === 'backend') options.onBackend?.(message.data.backend, message.data.runsOn);
      else if (message.data.type === 'end') ended();
    };
    const onAbort = () => mine.postMessage({ type: 'abort' } satisfies CallMessage);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const alive = setInterval(() => mine.postMessage({ type: 'alive' } satisfies CallMessage), this.#aliveMs);
    const release = () => {
      clearInterval(alive);
      options.signal?.removeEventListener('abort', onAbort);
      lost.removeEventListener('abort', release);
      mine.close();
    };
    lost.addEventListener('abort', release, { once: true });
    try {
      // The result comes back on Comlink's port and the events on this one: wait for `end`, so that every event has
      // been delivered before the caller sees the result or the error.
      try {
        return await invoke(Comlink.transfer(theirs, [theirs]));
      } finally {
        await end;
      }
    } finally {
      release();
    }
  }

  /**
   * Runs a call across the port, but settles at once when its caller aborts or its connection goes away; `run` is told
   * of the latter through its signal.
   */
  #settleOnLoss<T>(
    connection: Connection,
    signal: AbortSignal | undefined,
    run: (lost: AbortSignal) => Promise<T>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const gone = new AbortController();
      const lost = () => {
        gone.abort();
        reject(new ConnectionLost());
      };
      const onAbort = () => reject(new EngineError('aborted', 'The request was cancelled by the client.'));
      if (signal?.aborted) return onAbort();
      connection.calls.add(lost);
      signal?.addEventListener('abort', onAbort, { once: true });
      run(gone.signal)
        .then(resolve, (error: unknown) => reject(EngineError.from(error)))
        .finally(() => {
          connection.calls.delete(lost);
          signal?.removeEventListener('abort', onAbort);
        });
    });
  }

  /** The current connection, or the next one offered; asks for one, and gives up after the wait. */
  #connect(signal?: AbortSignal): Promise<Connection> {
    if (this.#connection) return Promise.resolve(this.#connection);
    this.#requestPort();
    const waiting = new Promise<Connection>((resolve, reject) => {
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiting.delete(connected);
      };
      const connected = (connection: Connection | EngineError) => {
        settle();
        if (connection instanceof EngineError) reject(connection);
        else resolve(connection);
      };
      const onAbort = () => {
        settle();
        reject(new EngineError('aborted', 'The request was cancelled by the client.'));
      };
      const timer = setTimeout(() => {
        settle();
        reject(
          new EngineError(
            'unavailable',
            'No page is hosting the engine. Open a page of this app that calls startLocalAPI(), then retry.',
          ),
        );
      }, this.#portWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.add(connected);
    });
    void this.recheck();
    return waiting;
  }
}

/** A call as its task's rules watch it. */
interface PortCall<T extends ModelTask> {
  /** The caller's options, with the listener that watches the call's events. */
  options: LocalRunOptions<T>;
  /** The call's result, from the worker's answer. */
  result(answer: WorkerAnswers[T]): TaskResult<T>;
}

/** How the worker's client carries one task. */
interface PortTask<T extends ModelTask> {
  watch(request: TaskRequest<T>, options: LocalRunOptions<T>): PortCall<T>;
  /** The request as it crosses to the worker, made again for each attempt. Absent: as it is (copied). */
  crossing?(request: TaskRequest<T>): TaskRequest<T>;
}

/** Each task's rules for the call across the port. */
const PORT_TASKS: { [T in ModelTask]: PortTask<T> } = {
  // Only the usage comes back: the result is put together from the events.
  chat: {
    watch(request, options) {
      const results = new ChatResultBuilder({ choices: request.n, logprobs: request.logprobs !== undefined });
      const onEvent = (event: ChatEvent) => {
        results.add(event);
        options.onEvent?.(event);
      };
      return { options: { ...options, onEvent }, result: (usage) => results.result(usage) };
    },
  },

  embeddings: {
    watch: (_request, options) => ({ options, result: (answer) => answer }),
  },

  // The audio's bytes cross to the worker, transferred from a copy the caller does not keep (a call sent again to the
  // next worker sends them again).
  transcription: {
    watch: (_request, options) => ({ options, result: (answer) => answer }),
    crossing(request) {
      const bytes = request.audio.bytes.slice();
      const sent = { ...request, audio: { ...request.audio, bytes } };
      return Comlink.transfer(sent, [bytes.buffer]);
    },
  },

  // The audio comes back in events; the result holds its length and usage.
  speech: {
    watch: (_request, options) => ({ options, result: (answer) => answer }),
  },
};
