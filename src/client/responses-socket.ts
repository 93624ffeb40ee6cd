import { RESPONSES_WEBSOCKET_PATH, ResponsesSession } from '../websocket-mode/responses-session.ts';

type Listener = (...args: never[]) => void;

/** The WebSocket ready states (RFC 6455), as openai-node's socket adapters report them. */
const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

/**
 * A socket of the Responses API's WebSocket mode carried by `fetch`, for a page whose Lantern runs in its service
 * worker: a service worker never sees a WebSocket, so each `response.create` becomes the streamed
 * `POST /v1/responses` the service worker answers, and each event of its stream a message. It has the shape
 * openai-node's `ResponsesWSBase` expects of a socket (`WebSocketLike`: `readyState`, `send`, `close`, `on`/`off`/
 * `once` for `open`, `message`, `error`, `close`); the socket of the Node upgrade (`lantern/node`) runs the same
 * session, so either answers alike.
 *
 * Opening asks `GET /v1/responses` with the key: the API answers 426 to a key it accepts (the socket opens), else
 * its refusal (a 401: `error`, then `close` 1006, as a refused WebSocket handshake).
 *
 * @example
 * import { ResponsesWSBase } from 'openai/resources/responses/ws-base';
 * class LocalResponsesWS extends ResponsesWSBase<LocalResponsesSocket> {
 *   constructor(client: OpenAI) {
 *     super(client);
 *     this._connectInitial();
 *   }
 *   protected override _createSocket(url: URL, authHeaders: Record<string, string>) {
 *     return new LocalResponsesSocket(url, authHeaders);
 *   }
 * }
 */
export class LocalResponsesSocket {
  readyState: number = CONNECTING;
  readonly #listeners = new Map<string, Map<Listener, Listener>>();
  readonly #url: URL;
  #session: ResponsesSession | undefined;

  /**
   * @param url The socket's URL (`ws:`/`wss:` of the API's base, `…/v1/responses`), which is fetched as `http:`/`https:`.
   * @param headers The handshake's headers: `Authorization: Bearer lt_…`.
   * @param fetchImpl What carries the requests (default: the page's `fetch`, which its service worker answers).
   */
  constructor(
    url: string | URL,
    readonly headers: Record<string, string>,
    readonly fetchImpl: typeof fetch = (input, init) => fetch(input, init),
  ) {
    this.#url = new URL(url);
    this.#url.protocol =
      this.#url.protocol === 'wss:' ? 'https:' : this.#url.protocol === 'ws:' ? 'http:' : this.#url.protocol;
    void this.#open();
  }

  async #open(): Promise<void> {
    let status: number;
    try {
      const answer = await this.fetchImpl(this.#url, { headers: this.headers });
      status = answer.status;
      await answer.body?.cancel();
    } catch (error) {
      return this.#fail((error as Error).message);
    }
    if (this.readyState !== CONNECTING) return;
    if (status !== 426) return this.#fail(`Unexpected server response: ${status}`);
    const endpoint = new URL(RESPONSES_WEBSOCKET_PATH, this.#url);
    endpoint.search = '';
    const headers = { ...this.headers, 'content-type': 'application/json' };
    this.#session = new ResponsesSession({
      request: (body, signal) => this.fetchImpl(endpoint, { method: 'POST', headers, body, signal }),
      send: (data) => void this.#emit('message', data, false),
    });
    this.readyState = OPEN;
    this.#emit('open');
  }

  #fail(message: string) {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.#emit('error', new Error(message));
    this.#emit('close', 1006, '');
  }

  send(data: string | ArrayBufferLike | ArrayBufferView): void {
    if (this.readyState !== OPEN || !this.#session) throw new Error('WebSocket is not open');
    this.#session.receive(typeof data === 'string' ? data : null);
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.#session?.close();
    // As a socket's close: its event comes after the call returns.
    queueMicrotask(() => this.#emit('close', code, reason));
  }

  on(event: string, listener: Listener): void {
    this.#for(event).set(listener, listener);
  }

  off(event: string, listener: Listener): void {
    this.#listeners.get(event)?.delete(listener);
  }

  once(event: string, listener: Listener): void {
    const once = ((...args: never[]) => {
      this.off(event, listener);
      listener(...args);
    }) as Listener;
    this.#for(event).set(listener, once);
  }

  #for(event: string) {
    let listeners = this.#listeners.get(event);
    if (!listeners) this.#listeners.set(event, (listeners = new Map()));
    return listeners;
  }

  #emit(event: string, ...args: unknown[]) {
    for (const listener of [...(this.#listeners.get(event)?.values() ?? [])])
      (listener as (...a: unknown[]) => void)(...args);
  }
}
