/// <reference lib="webworker" />
import type { RealtimeCall, RealtimeCallAnswerer } from '../api/options.ts';
import type { CallMessage, CallReply, HangupMessage } from './call-messages.ts';

/**
 * How long the service worker waits for a page to answer a call: the page's answer needs its peer connection's ICE
 * candidates gathered (well under a second on a local host), and a lazy import of the answering code the first time.
 */
export const ANSWER_TIMEOUT_MS = 20_000;

/** The part of the service worker's scope the answerer uses. */
export interface ClientsLike {
  get(id: string): Promise<PageLike | undefined>;
  matchAll(options: { type: 'window' }): Promise<readonly PageLike[]>;
}

interface PageLike {
  postMessage(message: unknown, transfer: Transferable[]): void;
}

/**
 * The service worker's side of WebRTC calls: a service worker cannot hold an RTCPeerConnection, so each call is
 * answered by the page that made it (the fetch event's client), which runs the session there. `noteClient` is told
 * which page sent each request the handler is given, before the handler sees it.
 */
export class PageAnswerer implements RealtimeCallAnswerer {
  readonly #clients: ClientsLike;
  readonly #timeoutMs: number;
  /** The page of each request the handler was given (the Request object the handler receives: Hono's `c.req.raw`). */
  readonly #requestClients = new WeakMap<Request, string>();
  /** The page that answers each live call. */
  readonly #callClients = new Map<string, { clientId: string; expiresAt: number }>();

  constructor(clients: ClientsLike, timeoutMs = ANSWER_TIMEOUT_MS) {
    this.#clients = clients;
    this.#timeoutMs = timeoutMs;
  }

  /** The handler's `request` came from page `clientId`. */
  noteClient(request: Request, clientId: string): void {
    if (clientId) this.#requestClients.set(request, clientId);
  }

  async answer(call: RealtimeCall, request: Request): Promise<string> {
    const clientId = this.#requestClients.get(request);
    const client = clientId ? await this.#clients.get(clientId) : undefined;
    if (!clientId || !client)
      throw new Error(noPage('no page made this request (a WebRTC call must come from a page)'));
    const channel = new MessageChannel();
    const reply = new Promise<CallReply>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(noPage('no Lantern page answered the call'))), this.#timeoutMs);
      channel.port1.onmessage = (event: MessageEvent<CallReply>) => {
        clearTimeout(timer);
        resolve(event.data);
      };
    });
    const message: CallMessage = { type: 'lantern:realtime-call', call };
    client.postMessage(message, [channel.port2]);
    try {
      const answered = await reply;
      if ('error' in answered) throw new Error(`The page could not answer the WebRTC call: ${answered.error}`);
      this.#forgetExpired();
      this.#callClients.set(call.id, { clientId, expiresAt: call.expiresAt });
      return answered.sdp;
    } finally {
      channel.port1.close();
    }
  }

  async hangup(id: string): Promise<void> {
    const live = this.#callClients.get(id);
    this.#callClients.delete(id);
    const message: HangupMessage = { type: 'lantern:realtime-hangup', id };
    // A worker stopped and started again since the call knows not which page answers it: every page hears, and the
    // one that answers it ends it.
    const pages = live ? [await this.#clients.get(live.clientId)] : await this.#clients.matchAll({ type: 'window' });
    for (const page of pages) page?.postMessage(message, []);
  }

  /** Calls past their credential's expiry have ended in their page by themselves. */
  #forgetExpired(): void {
    const now = Date.now();
    for (const [id, { expiresAt }] of this.#callClients) if (expiresAt <= now) this.#callClients.delete(id);
  }
}

const noPage = (what: string) =>
  `${what}: WebRTC calls are answered by a page of this origin that has called startLocalAPI(), ` +
  `within ${ANSWER_TIMEOUT_MS / 1000} s.`;
