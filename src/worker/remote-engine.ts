import * as Comlink from 'comlink';
import {
  EngineError,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type ModelCard,
} from '../engine/index.ts';
import { registerEngineErrorTransfer, type CallMessage, type EngineWorkerApi } from './protocol.ts';

/**
 * How long a request waits for a port to the engine worker before it is answered "unavailable": long enough for a
 * host tab to answer a port request, or for the next tab to take over (a worker starts in well under a second; model
 * loading happens later, per request), short enough that a page with no host tab learns it quickly.
 */
export const PORT_WAIT_MS = 10_000;

interface Connection {
  api: Comlink.Remote<EngineWorkerApi>;
  port: MessagePort;
  key: string;
  /** Fails the calls still running on this connection. */
  calls: Set<(error: EngineError) => void>;
}

export interface RemoteEngineOptions {
  /** Asks for a port when there is none (the service worker asks its window clients). */
  requestPort: () => void;
  portWaitMs?: number;
}

/**
 * The engine interface, served by an engine worker at the other end of a MessagePort: what the service worker's
 * handler talks to. The port can be replaced at any time (a new host tab, a restarted worker); calls still running on
 * the old one then fail as `unavailable` at once instead of waiting for answers that will never come, and a caller's
 * abort is answered at once too, whether or not the worker is still there to hear it.
 */
export class RemoteEngine implements Engine {
  readonly #requestPort: () => void;
  readonly #portWaitMs: number;
  #connection: Connection | undefined;
  readonly #waiting = new Set<(connection: Connection) => void>();

  constructor(options: RemoteEngineOptions) {
    registerEngineErrorTransfer();
    this.#requestPort = options.requestPort;
    this.#portWaitMs = options.portWaitMs ?? PORT_WAIT_MS;
  }

  /** Whether a port to an engine worker is connected. */
  get connected(): boolean {
    return this.#connection !== undefined;
  }

  /**
   * Uses `port` from now on. `key` names the worker behind it: a second port to the same worker is closed unused, so
   * a duplicate offer does not cut off running calls.
   */
  connect(port: MessagePort, key: string): void {
    if (this.#connection?.key === key) {
      port.close();
      return;
    }
    const previous = this.#connection;
    const connection: Connection = { api: Comlink.wrap<EngineWorkerApi>(port), port, key, calls: new Set() };
    this.#connection = connection;
    if (previous) {
      const error = new EngineError(
        'unavailable',
        'The engine host changed while this request was running (the tab hosting the models closed, or its engine ' +
          'worker was restarted). Retry the request.',
      );
      previous.calls.forEach((fail) => fail(error));
      previous.port.close();
    }
    this.#waiting.forEach((resolve) => resolve(connection));
    this.#waiting.clear();
  }

  async models(): Promise<ModelCard[]> {
    const connection = await this.#connect();
    return this.#call(connection, undefined, () => connection.api.models());
  }

  async chat(model: string, request: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    const connection = await this.#connect(options.signal);
    return this.#withCallPort(connection, options, (port) => connection.api.chat(model, request, port));
  }

  async embed(model: string, request: EmbedRequest, options: EmbedOptions = {}): Promise<EmbedResult> {
    const connection = await this.#connect(options.signal);
    return this.#withCallPort(connection, options, (port) => connection.api.embed(model, request, port));
  }

  /** A call with its own port: events arrive on it, `abort` leaves on it, and `end` marks the last event. */
  async #withCallPort<T>(
    connection: Connection,
    options: ChatOptions,
    invoke: (port: MessagePort) => Promise<T>,
  ): Promise<T> {
    const { port1: mine, port2: theirs } = new MessageChannel();
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    mine.onmessage = (message: MessageEvent<CallMessage>) => {
      if (message.data.type === 'event') options.onEvent?.(message.data.event);
      else if (message.data.type === 'end') ended();
    };
    const onAbort = () => mine.postMessage({ type: 'abort' } satisfies CallMessage);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.#call(connection, options.signal, async () => {
        // The result comes back on Comlink's port and the events on this one; wait for `end` so that every event
        // has been delivered before the caller sees the result or the error.
        try {
          return await invoke(Comlink.transfer(theirs, [theirs]));
        } finally {
          await end;
        }
      });
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      mine.close();
    }
  }

  /** Runs a remote call that fails at once when its caller aborts or its connection is replaced. */
  #call<T>(connection: Connection, signal: AbortSignal | undefined, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const fail = (error: EngineError) => reject(error);
      const onAbort = () => reject(new EngineError('aborted', 'The request was cancelled by the client.'));
      if (signal?.aborted) return onAbort();
      connection.calls.add(fail);
      signal?.addEventListener('abort', onAbort, { once: true });
      run()
        .then(resolve, (error: unknown) => reject(EngineError.from(error)))
        .finally(() => {
          connection.calls.delete(fail);
          signal?.removeEventListener('abort', onAbort);
        });
    });
  }

  /** The current connection, or the next one offered; asks for one, and gives up after the wait. */
  #connect(signal?: AbortSignal): Promise<Connection> {
    if (this.#connection) return Promise.resolve(this.#connection);
    this.#requestPort();
    return new Promise<Connection>((resolve, reject) => {
      const done = (connection: Connection) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiting.delete(done);
        resolve(connection);
      };
      const giveUp = (error: EngineError) => {
        this.#waiting.delete(done);
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        reject(error);
      };
      const onAbort = () => giveUp(new EngineError('aborted', 'The request was cancelled by the client.'));
      const timer = setTimeout(
        () =>
          giveUp(
            new EngineError(
              'unavailable',
              'No page is hosting the engine. Open a page of this app that calls startLocalAPI(), then retry.',
            ),
          ),
        this.#portWaitMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.add(done);
    });
  }
}
