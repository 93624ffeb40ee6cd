import type { RealtimeSession } from '../realtime/realtime-session.ts';

/** The WebSocket ready states (RFC 6455). */
const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

/** What `GET /v1/realtime` answers a client secret with: the call it opened (src/api/realtime/route.ts). */
interface WebSocketCall {
  id: string;
  credential: string;
  model: string;
  session: unknown;
}

export interface LocalRealtimeSocketOptions {
  /** What carries the session's requests (default: the page's `fetch`, which its service worker answers). */
  fetch?: typeof fetch;
}

/**
 * A socket of the Realtime API run in this page, for apps that want no WebRTC (or a browser without it, such as
 * WebKitGTK): a service worker never sees a WebSocket, so the session runs here, as the Node upgrade's does, and makes
 * its transcription, chat and speech requests through `fetch` (the service worker) with the socket's key. It has the
 * shape a browser `WebSocket` has for the Agents SDK's `OpenAIRealtimeWebSocket` (`createWebSocket`) and any code
 * written against one: `readyState`, `send`, `close`, and `open`, `message`, `error` and `close` events. Audio travels
 * as events, as over a WebSocket: the app sends `input_audio_buffer.append` (the Agents SDK's `sendAudio`) and plays
 * `response.output_audio.delta` (its `audio` events).
 *
 * Opening asks `GET /v1/realtime` with the key: the API answers 426 to a key it accepts (a client secret's answer names
 * its session and the credential the session runs with), else its refusal (`error`, then `close` 1006, as a refused
 * WebSocket handshake).
 *
 * @example
 * import { OpenAIRealtimeWebSocket, RealtimeSession } from '@openai/agents-realtime';
 * import { LocalRealtimeSocket } from 'lantern/client';
 * const transport = new OpenAIRealtimeWebSocket({
 *   createWebSocket: async ({ url, apiKey }) => new LocalRealtimeSocket(url, apiKey) as never,
 * });
 * await new RealtimeSession(agent, { transport }).connect({ apiKey: ek, url: `${lantern.baseURL}/realtime` });
 */
export class LocalRealtimeSocket extends EventTarget {
  readyState: number = CONNECTING;
  readonly url: string;
  readonly protocol = 'realtime';
  #session: RealtimeSession | undefined;
  /** What was sent before the session opened (nothing is, by a client that waits for `open`; kept in order if so). */
  readonly #early: string[] = [];

  /**
   * @param url The socket's URL (`ws:`/`wss:` or `http:`/`https:`, `…/v1/realtime?model=…`), fetched as `http(s):`.
   * @param apiKey The key (`lt_…`) or a client secret (`ek_…`) the session runs as.
   */
  constructor(url: string | URL, apiKey: string, options: LocalRealtimeSocketOptions = {}) {
    super();
    const address = new URL(url, globalThis.location?.href);
    address.protocol = address.protocol.replace(/^ws/, 'http');
    this.url = address.href;
    void this.#open(address, apiKey, options.fetch ?? globalThis.fetch.bind(globalThis));
  }

  send(data: string): void {
    if (this.readyState === CONNECTING) return void this.#early.push(data);
    if (this.readyState !== OPEN) throw new DOMException('The socket is not open.', 'InvalidStateError');
    this.#session?.receive(data);
  }

  close(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.#session?.close();
    this.dispatchEvent(closeEvent(1000, ''));
  }

  async #open(url: URL, apiKey: string, fetcher: typeof fetch): Promise<void> {
    try {
      const check = await fetcher(url, { headers: { Authorization: `Bearer ${apiKey}` } });
      const body = (await check.json().catch(() => ({}))) as { call?: WebSocketCall; error?: { message?: string } };
      if (check.status !== 426) throw new Error(body.error?.message ?? `The API answered ${check.status}.`);
      // Loaded when a socket opens: pages that never open one do not carry the session.
      const { RealtimeSession } = await import('../realtime/realtime-session.ts');
      if (this.readyState === CLOSED) return;
      const { call } = body;
      const credential = call?.credential ?? apiKey;
      this.#session = new RealtimeSession({
        model: url.searchParams.get('model')?.trim() || call?.model || 'gpt-realtime',
        ...(call?.session !== undefined && { session: call.session }),
        request: (path, init) => {
          const headers = new Headers(init.headers);
          headers.set('Authorization', `Bearer ${credential}`);
          return fetcher(new URL(path, url), { ...init, headers });
        },
        // Events go out on a task of their own, as a socket's messages arrive.
        send: (event) => {
          const data = JSON.stringify(event);
          queueMicrotask(() => this.readyState === OPEN && this.dispatchEvent(new MessageEvent('message', { data })));
        },
        onClose: () => this.close(),
      });
      if (call) this.addEventListener('close', () => void this.#hangup(call, url, fetcher), { once: true });
      this.readyState = OPEN;
      this.dispatchEvent(new Event('open'));
      this.#session.open();
      for (const data of this.#early.splice(0)) this.#session.receive(data);
    } catch (error) {
      if (this.readyState === CLOSED) return;
      this.readyState = CLOSED;
      const message = (error as Error).message;
      this.dispatchEvent(Object.assign(new Event('error'), { message, error }));
      this.dispatchEvent(closeEvent(1006, message));
    }
  }

  /** A client secret's socket ends its call, so that the credential dies with it. */
  async #hangup(call: WebSocketCall, url: URL, fetcher: typeof fetch): Promise<void> {
    const headers = { Authorization: `Bearer ${call.credential}` };
    await fetcher(new URL(`/v1/realtime/calls/${call.id}/hangup`, url), { method: 'POST', headers }).catch(() => {});
  }
}

/** A `close` event with a WebSocket's fields (built on `Event`: Node 20, where the tests run the socket, has no CloseEvent). */
const closeEvent = (code: number, reason: string) =>
  Object.assign(new Event('close'), { code, reason, wasClean: code === 1000 });
