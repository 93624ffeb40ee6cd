import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Handler } from '../api/create-handler.ts';
import { ApiError } from '../api/errors.ts';
import type { WebSocketCall } from '../api/realtime/route.ts';
import {
  MAX_CLIENT_EVENT_CHARS,
  RealtimeSession,
  type RealtimeServerEvent,
  type RealtimeSessionOptions,
} from '../realtime/realtime-session.ts';
import {
  handleWebSockets,
  handshakeHeaders,
  messageText,
  refuseUpgrade,
  webSocketUpgrades,
  type WebSocketUpgrades,
} from './websocket-upgrade.ts';

/** The Realtime API's WebSocket URL (`wss://api.openai.com/v1/realtime?model=…`). */
export const REALTIME_WEBSOCKET_PATH = '/v1/realtime';

/** The model a socket opened without `?model=` talks to: the Realtime API's own default. */
const DEFAULT_MODEL = 'gpt-realtime';
/**
 * The subprotocol browsers open the Realtime WebSocket with (beside the key's), echoed so the browser keeps the socket;
 * and the prefix of the one that carries the key, since a browser's WebSocket cannot send an `Authorization` header.
 */
const REALTIME_PROTOCOL = 'realtime';
const KEY_PROTOCOL_PREFIX = 'openai-insecure-api-key.';
/**
 * The largest message a socket takes by default: the largest client event the session reads (an
 * `input_audio_buffer.append` of the Realtime API's 15 MiB, in its JSON; ASCII, so its characters are its bytes).
 */
const DEFAULT_MAX_PAYLOAD_BYTES = MAX_CLIENT_EVENT_CHARS;
/**
 * Past this many bytes not yet written to a slow client, the socket stops reading what the client sends (its audio),
 * so that a client that does not read holds no more of the session's work; reading resumes once the bytes are out.
 */
const HIGH_WATER_BYTES = 1024 * 1024;
/** Past this many unwritten bytes the client is taken as gone and the socket closes (1008). */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;
/** The longest close reason a WebSocket close frame carries, in bytes. */
const MAX_CLOSE_REASON_BYTES = 123;

export interface RealtimeWebSocketOptions {
  /**
   * The largest message a socket takes (default 16 MiB: one `input_audio_buffer.append` of the Realtime API's 15 MiB).
   * A message over it closes the socket (1009, as the WebSocket protocol does), before it is held in memory whole.
   */
  maxPayloadBytes?: number;
  /**
   * Options of each socket's {@link RealtimeSession} beyond those the socket binds (`request`, `send`, `model`,
   * `onClose`): a clock, or observers such as the bench's.
   */
  session?: Partial<Omit<RealtimeSessionOptions, 'request' | 'send' | 'model' | 'onClose' | 'speaker'>>;
}

/** The Realtime API's WebSocket form over a handler, for a Node HTTP server's `upgrade` requests of `/v1/realtime`. */
export type RealtimeWebSocket = WebSocketUpgrades;

/**
 * The Realtime API's WebSocket form (openai-node's `OpenAIRealtimeWS`, the Agents SDK's `OpenAIRealtimeWebSocket`)
 * over `handler`: a socket on `GET /v1/realtime?model=…`, opened with the key in `Authorization: Bearer lt_…` (or, from
 * a browser, in the `openai-insecure-api-key.<key>` subprotocol beside `realtime`), speaks the Realtime event protocol
 * with one {@link RealtimeSession}: client events in, server events out, one message each; audio both ways as base64
 * PCM16 in `input_audio_buffer.append` and `response.output_audio.delta`.
 *
 * Nothing here is a second API: the handshake is checked by asking the handler for `GET /v1/realtime` with the
 * handshake's headers (its key or client secret, its origin), and refused with the handler's own answer when that is
 * not its 426 (a client secret's names the session it was minted with, which the socket's session starts from); the
 * session's transcriptions, chat completions and speech are requests made to `handler` under the same key, so they
 * are authenticated, rate-limited and bounded exactly as over HTTP, and one key's socket sees nothing of another's.
 * A socket that closes ends its session (its running response is aborted); a session that ends by itself closes its
 * socket (1011, with the reason). `?call_id=` (joining a WebRTC call's events) is refused: Lantern's calls carry their
 * events on their own data channel.
 *
 * @example
 * const ws = realtimeWebSocket(handler);
 * server.on('upgrade', (request, socket, head) => {
 *   if (!ws.handleUpgrade(request, socket, head)) socket.destroy(); // another URL: the app's own, or none
 * });
 * @see handleRealtimeWebSocket, which does this for a server whose only WebSocket URL is this one.
 */
export function realtimeWebSocket(handler: Handler, options: RealtimeWebSocketOptions = {}): RealtimeWebSocket {
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    // A browser offers `realtime` beside the key's subprotocol and drops a socket whose answer names none it offered;
    // the key's is never echoed.
    handleProtocols: (protocols) => (protocols.has(REALTIME_PROTOCOL) ? REALTIME_PROTOCOL : false),
  });

  const accept = async (request: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => {
    const headers = handshakeHeaders(request);
    const key = protocolKey(request);
    if (!headers.has('authorization') && key) headers.set('authorization', `Bearer ${key}`);
    if (url.searchParams.has('call_id')) return refuseUpgrade(socket, callIdRefused());
    // The handler decides whether the key (and the origin) may use this URL, as for any request: a good one is its 426
    // (this URL takes only a WebSocket), which for a client secret (ek_…) names the call it opened (its session, and
    // the credential its requests run with).
    const check = await handler(new Request(url, { method: 'GET', headers }));
    if (check.status !== 426) return refuseUpgrade(socket, check);
    const { call } = (await check.json()) as { call?: WebSocketCall };
    if (call) headers.set('authorization', `Bearer ${call.credential}`);
    const model = url.searchParams.get('model')?.trim() || call?.model || DEFAULT_MODEL;
    server.handleUpgrade(request, socket, head, (ws) =>
      serveSocket(ws, handler, url.origin, headers, { model, call }, options),
    );
  };

  return webSocketUpgrades(server, REALTIME_WEBSOCKET_PATH, accept);
}

/**
 * {@link realtimeWebSocket} on `server`'s `upgrade` requests: the Realtime API at `/v1/realtime`; an upgrade of any
 * other URL is answered 404 unless the app listens for `upgrade` itself too. Its sockets close with the server. (A
 * server that serves the Responses API's WebSocket mode too passes both to `handleWebSockets`, as scripts/serve.ts.)
 *
 * @example
 * const handler = createHandler({ engine, keys });
 * const server = serve({ fetch: handler, port: 8787 }); // @hono/node-server
 * handleRealtimeWebSocket(server, handler);
 */
export function handleRealtimeWebSocket(
  server: Server,
  handler: Handler,
  options: RealtimeWebSocketOptions = {},
): RealtimeWebSocket {
  const ws = realtimeWebSocket(handler, options);
  handleWebSockets(server, [ws]);
  return ws;
}

/** The key a browser sends as the subprotocol `openai-insecure-api-key.<key>`, if any. */
function protocolKey(request: IncomingMessage): string | undefined {
  const offered = request.headers['sec-websocket-protocol'];
  if (!offered) return undefined;
  for (const protocol of offered.split(',')) {
    const trimmed = protocol.trim();
    if (trimmed.startsWith(KEY_PROTOCOL_PREFIX)) return trimmed.slice(KEY_PROTOCOL_PREFIX.length) || undefined;
  }
  return undefined;
}

function callIdRefused(): Response {
  const error = new ApiError(
    400,
    "Lantern's Realtime WebSocket does not join calls: a call's events travel on its own data channel " +
      "('oai-events'). Open a session of its own with /v1/realtime?model=… instead.",
    { param: 'call_id', code: 'unsupported_parameter' },
  );
  return Response.json(error.body(), { status: error.status });
}

/** One open socket's session: its model calls as requests to `handler` with the handshake's headers (its key). */
function serveSocket(
  ws: WebSocket,
  handler: Handler,
  origin: string,
  headers: Headers,
  { model, call }: { model: string; call: WebSocketCall | undefined },
  options: RealtimeWebSocketOptions,
): void {
  let paused = false;
  const resumeOnceWritten = () => {
    if (paused && ws.bufferedAmount < HIGH_WATER_BYTES) {
      paused = false;
      ws.resume();
    }
  };
  const send = (event: RealtimeServerEvent) => {
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) return void ws.close(1008, 'the client does not read its events');
    ws.send(JSON.stringify(event), resumeOnceWritten);
    if (!paused && ws.bufferedAmount >= HIGH_WATER_BYTES) {
      paused = true;
      ws.pause();
    }
  };
  const session = new RealtimeSession({
    ...options.session,
    model,
    ...(call?.session !== undefined && { session: call.session }),
    send,
    request(path, init) {
      // The caller's headers, the handshake's beside them (origin, user agent), and always the handshake's key.
      const merged = new Headers(init.headers);
      headers.forEach((value, name) => {
        if (name === 'authorization' || !merged.has(name)) merged.set(name, value);
      });
      return handler(new Request(new URL(path, origin), { ...init, headers: merged }));
    },
    onClose(reason) {
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(1011, closeReason(reason));
    },
  });
  ws.on('message', (data, isBinary) => {
    if (isBinary) return send(binaryRefused());
    try {
      session.receive(messageText(data));
    } catch (error) {
      // The session answers bad events with error events itself; this is its own failure, said once, not a crash.
      send(serverError(error));
    }
  });
  // A protocol error (an oversized frame) closes the socket; 'close' follows, where the session ends.
  ws.on('error', () => {});
  ws.on('close', () => {
    session.close();
    // A client secret's socket ends its call, so that the credential dies with it.
    if (call) {
      const hangup = new Request(new URL(`/v1/realtime/calls/${call.id}/hangup`, origin), { method: 'POST', headers });
      void handler(hangup).then(
        (answer) => answer.body?.cancel(),
        () => {},
      );
    }
  });
  session.open();
}

/** `reason` cut to what a close frame carries (123 bytes of UTF-8), whole characters only. */
function closeReason(reason: string): string {
  let cut = reason;
  while (Buffer.byteLength(cut) > MAX_CLOSE_REASON_BYTES) cut = cut.slice(0, -1);
  return cut;
}

const eventId = () => `event_${crypto.randomUUID().replaceAll('-', '').slice(0, 20)}`;

function binaryRefused(): RealtimeServerEvent {
  return {
    type: 'error',
    event_id: eventId(),
    error: {
      type: 'invalid_request_error',
      code: 'binary_message',
      message: 'The Realtime API takes JSON text messages; send audio as base64 in input_audio_buffer.append events.',
      param: null,
      event_id: null,
    },
  };
}

function serverError(error: unknown): RealtimeServerEvent {
  return {
    type: 'error',
    event_id: eventId(),
    error: {
      type: 'server_error',
      code: null,
      message: `The session failed on that event: ${error instanceof Error ? error.message : String(error)}`,
      param: null,
      event_id: null,
    },
  };
}
