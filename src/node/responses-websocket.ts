import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Handler } from '../api/create-handler.ts';
import { DEFAULT_LIMITS } from '../api/options.ts';
import { RESPONSES_WEBSOCKET_PATH, ResponsesSession } from '../websocket-mode/responses-session.ts';
import {
  handleWebSockets,
  handshakeHeaders,
  messageText,
  refuseUpgrade,
  webSocketUpgrades,
  type WebSocketUpgrades,
} from './websocket-upgrade.ts';

export interface ResponsesWebSocketOptions {
  /**
   * The largest message a socket takes (default: four times the handler's default `maxBodyBytes`). A message over the
   * handler's own body limit is refused by the handler, as the same body over HTTP is, with an `error` event; only one
   * over this closes the socket (1009, as the WebSocket protocol does), before it is held in memory whole.
   */
  maxPayloadBytes?: number;
  /**
   * How many `response.create` messages may wait behind the one running on a socket (default 16); more are refused
   * with an `error` event (429). Responses over one socket run one at a time, in the order they were sent.
   */
  maxQueuedResponses?: number;
}

/**
 * The WebSocket mode of a handler's Responses API, for a Node HTTP server's `upgrade` requests: it takes those of
 * {@link RESPONSES_WEBSOCKET_PATH}.
 */
export type ResponsesWebSocket = WebSocketUpgrades;

/** Past this many bytes not yet written to a slow client, a response's events wait for the socket to drain. */
const HIGH_WATER_BYTES = 1024 * 1024;

/**
 * The Responses API's WebSocket mode (openai-node's `ResponsesWS`, the Agents SDK's websocket transport) over
 * `handler`: a socket on `GET /v1/responses`, opened with the key's `Authorization: Bearer lt_…`, takes
 * `{"type": "response.create", …}` messages, each the body of a `POST /v1/responses`, and answers each with the events
 * the same request streams over HTTP, one message per event; a failure is an `error` event, and the socket stays open
 * for the next message.
 *
 * Nothing here is a second Responses API: the handshake and every message are requests made to `handler` with the
 * handshake's headers (its key), so they are authenticated, rate-limited, bounded and stored (per key) exactly as over
 * HTTP. A socket that closes aborts the response it runs and drops those waiting.
 *
 * @example
 * const server = createServer(...); // or @hono/node-server's serve({ fetch: handler })
 * const ws = responsesWebSocket(handler);
 * server.on('upgrade', (request, socket, head) => {
 *   if (!ws.handleUpgrade(request, socket, head)) socket.destroy(); // another URL: the app's own, or none
 * });
 * @see handleResponsesWebSocket, which does this for a server whose only WebSocket URL is Lantern's.
 */
export function responsesWebSocket(handler: Handler, options: ResponsesWebSocketOptions = {}): ResponsesWebSocket {
  const maxQueued = options.maxQueuedResponses;
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes ?? 4 * DEFAULT_LIMITS.maxBodyBytes,
  });

  const accept = async (request: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => {
    const headers = handshakeHeaders(request);
    // The handler decides, as for any request: a bad key is its 401, and a good one its 426 (this URL takes only a
    // WebSocket), on which the socket is opened.
    const answer = await handler(new Request(url, { method: 'GET', headers }));
    if (answer.status !== 426) return refuseUpgrade(socket, answer);
    await answer.body?.cancel();
    server.handleUpgrade(request, socket, head, (ws) => serveSocket(ws, handler, url, headers, maxQueued));
  };

  return webSocketUpgrades(server, RESPONSES_WEBSOCKET_PATH, accept);
}

/**
 * {@link responsesWebSocket} on `server`'s `upgrade` requests: the WebSocket mode at `/v1/responses`; an upgrade of any
 * other URL is answered 404 unless the app listens for `upgrade` itself too. Its sockets close with the server.
 *
 * @example
 * const handler = createHandler({ engine, keys });
 * const server = serve({ fetch: handler, port: 8787 }); // @hono/node-server
 * handleResponsesWebSocket(server, handler);
 */
export function handleResponsesWebSocket(
  server: Server,
  handler: Handler,
  options: ResponsesWebSocketOptions = {},
): ResponsesWebSocket {
  const ws = responsesWebSocket(handler, options);
  handleWebSockets(server, [ws]);
  return ws;
}

/** One open socket's session: its messages as requests to `handler` with the handshake's headers (its key). */
function serveSocket(ws: WebSocket, handler: Handler, url: URL, headers: Headers, maxQueued?: number): void {
  const endpoint = new URL(RESPONSES_WEBSOCKET_PATH, url);
  const post = new Headers(headers);
  post.set('content-type', 'application/json');
  const session = new ResponsesSession({
    maxQueued,
    request: (body, signal) => handler(new Request(endpoint, { method: 'POST', headers: post, body, signal })),
    send: (data) => {
      if (ws.bufferedAmount < HIGH_WATER_BYTES) return void ws.send(data);
      return new Promise((resolve) => ws.send(data, () => resolve()));
    },
  });
  ws.on('message', (data, isBinary) => session.receive(isBinary ? null : messageText(data)));
  // A protocol error (an oversized frame) closes the socket; 'close' follows, where the work is dropped.
  ws.on('error', () => {});
  ws.on('close', () => session.close());
}
