import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Handler } from '../api/create-handler.ts';
import { ApiError, invalidRequest, type ErrorBody } from '../api/errors.ts';
import { DEFAULT_LIMITS } from '../api/options.ts';

/** The URL of the Responses API's WebSocket mode, as openai-node's `ResponsesWS` connects to it. */
export const RESPONSES_WEBSOCKET_PATH = '/v1/responses';

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

/** The WebSocket mode of a handler's Responses API, for a Node HTTP server's `upgrade` requests. */
export interface ResponsesWebSocket {
  /**
   * Takes an `upgrade` request: true when its URL is {@link RESPONSES_WEBSOCKET_PATH} (it is then accepted, or refused
   * with the handler's own error answer), false for any other URL, which is left to the caller.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes every open socket (1001, going away), aborting the responses they run. */
  close(): void;
}

/** The `error` event a socket sends: the handler's error answer, its status, and `type: 'error'`. */
export interface ResponsesWebSocketError extends ErrorBody {
  type: 'error';
  status: number;
}

const DEFAULT_MAX_QUEUED = 16;
/** Past this many bytes not yet written to a slow client, a response's events wait for the socket to drain. */
const HIGH_WATER_BYTES = 1024 * 1024;
/** Request headers that describe the WebSocket handshake itself: not passed on to the handler's requests. */
const HANDSHAKE_HEADERS = new Set(['connection', 'upgrade', 'host', 'content-length', 'transfer-encoding']);

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
  const maxQueued = options.maxQueuedResponses ?? DEFAULT_MAX_QUEUED;
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: options.maxPayloadBytes ?? 4 * DEFAULT_LIMITS.maxBodyBytes,
  });

  const accept = async (request: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => {
    const headers = handshakeHeaders(request);
    // The handler decides, as for any request: a bad key is its 401, and a good one its 426 (this URL takes only a
    // WebSocket), on which the socket is opened.
    const answer = await handler(new Request(url, { method: 'GET', headers }));
    if (answer.status !== 426) return refuse(socket, answer);
    await answer.body?.cancel();
    server.handleUpgrade(request, socket, head, (ws) => serveSocket(ws, handler, url, headers, maxQueued));
  };

  return {
    handleUpgrade(request, socket, head) {
      const url = new URL(request.url ?? '/', `http://${request.headers.host ?? 'localhost'}`);
      if (url.pathname.replace(/\/$/, '') !== RESPONSES_WEBSOCKET_PATH) return false;
      accept(request, socket, head, url).catch(() => socket.destroy());
      return true;
    },
    close() {
      for (const ws of server.clients) ws.close(1001, 'server closing');
      server.close();
    },
  };
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
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (ws.handleUpgrade(request, socket, head)) return;
    // The app's other listeners answer their own URLs; without any, the upgrade is refused as an unknown URL is.
    if (server.listeners('upgrade').length > 1) return;
    const error = new ApiError(404, `Unknown WebSocket URL: ${request.url ?? '/'}.`, { code: 'unknown_url' });
    void refuse(socket, Response.json(error.body(), { status: error.status }));
  };
  server.on('upgrade', onUpgrade);
  server.once('close', () => ws.close());
  return ws;
}

/** The handshake's headers (the key, origin, user agent…) for the requests made on its behalf. */
function handshakeHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || HANDSHAKE_HEADERS.has(name) || name.startsWith('sec-websocket-')) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** Writes the handler's answer as the HTTP answer to an upgrade it refused, and closes the connection. */
async function refuse(socket: Duplex, answer: Response): Promise<void> {
  const body = Buffer.from(await answer.arrayBuffer());
  const lines = [`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}`];
  answer.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  });
  lines.push(`content-length: ${body.byteLength}`, 'connection: close');
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
}

/** The `error` event of an error answer. */
const errorEvent = (status: number, body: ErrorBody): ResponsesWebSocketError => ({ type: 'error', status, ...body });
const apiErrorEvent = (error: ApiError) => errorEvent(error.status, error.body());

/**
 * One open socket: its `response.create` messages, each a streamed `POST /v1/responses` of the handler, run one at a
 * time in the order they came.
 */
function serveSocket(ws: WebSocket, handler: Handler, url: URL, headers: Headers, maxQueued: number): void {
  const endpoint = new URL(RESPONSES_WEBSOCKET_PATH, url);
  const post = new Headers(headers);
  post.set('content-type', 'application/json');
  const waiting: string[] = [];
  let running: AbortController | undefined;
  let closed = false;

  const send = (data: string): Promise<void> | undefined => {
    if (closed) return undefined;
    if (ws.bufferedAmount < HIGH_WATER_BYTES) {
      ws.send(data);
      return undefined;
    }
    return new Promise((resolve) => ws.send(data, () => resolve()));
  };
  const sendError = (event: ResponsesWebSocketError) => void send(JSON.stringify(event));

  const run = async (body: string) => {
    const abort = new AbortController();
    running = abort;
    try {
      const answer = await handler(
        new Request(endpoint, { method: 'POST', headers: post, body, signal: abort.signal }),
      );
      if (!answer.headers.get('content-type')?.startsWith('text/event-stream') || !answer.body) {
        sendError(await errorOf(answer));
        return;
      }
      await forwardEvents(answer.body, send, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) return;
      sendError(apiErrorEvent(new ApiError(500, `The response failed: ${(error as Error).message}`, { cause: error })));
    } finally {
      running = undefined;
    }
  };
  const next = () => {
    const body = waiting.shift();
    if (body === undefined || closed) return;
    void run(body).then(next);
  };

  ws.on('message', (data, isBinary) => {
    const body = requestBody(data, isBinary);
    if (body instanceof ApiError) return sendError(apiErrorEvent(body));
    if (waiting.length >= maxQueued) {
      return sendError(
        apiErrorEvent(
          new ApiError(429, `${maxQueued} responses already wait on this socket; send more once they are answered.`, {
            code: 'too_many_queued_responses',
          }),
        ),
      );
    }
    waiting.push(body);
    if (!running) next();
  });
  // A protocol error (an oversized frame) closes the socket; 'close' follows, where the work is dropped.
  ws.on('error', () => {});
  ws.on('close', () => {
    closed = true;
    waiting.length = 0;
    running?.abort(new DOMException('The WebSocket closed.', 'AbortError'));
  });
}

/**
 * The `POST /v1/responses` body of a client message: its fields but `type`, streamed; or why it is not one. What the
 * body holds is the handler's to judge, as over HTTP.
 */
function requestBody(data: RawData, isBinary: boolean): string | ApiError {
  if (isBinary)
    return invalidRequest('WebSocket mode takes JSON text messages; this one was binary.', null, 'invalid_json');
  const text = (
    Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? Buffer.from(data) : data
  ).toString();
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch (error) {
    return invalidRequest(`The message is not valid JSON (${(error as Error).message}).`, null, 'invalid_json');
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    return invalidRequest(
      'A message must be a JSON object, such as {"type": "response.create", …}.',
      null,
      'invalid_json',
    );
  }
  const { type, ...fields } = event as Record<string, unknown>;
  if (type !== 'response.create') {
    return invalidRequest(
      `Unknown event type ${JSON.stringify(type)}: WebSocket mode takes "response.create".`,
      'type',
      'unknown_event_type',
    );
  }
  // As OpenAI's WebSocket mode: the events of the socket are the stream, and a response it starts runs while it is open.
  if (fields.background === true) {
    return invalidRequest('background is not supported over WebSocket; use POST /v1/responses.', 'background');
  }
  return JSON.stringify({ ...fields, stream: true });
}

/** The `error` event of a handler's answer that is not an event stream (a refused request). */
async function errorOf(answer: Response): Promise<ResponsesWebSocketError> {
  const text = await answer.text();
  try {
    const body = JSON.parse(text) as Partial<ErrorBody>;
    if (body.error) return errorEvent(answer.status, { error: body.error });
  } catch {
    // Not an error body: said below.
  }
  return apiErrorEvent(new ApiError(500, `The handler answered ${answer.status} without an error body.`));
}

/**
 * Sends each server-sent event of a Responses stream as one message, its data as it is. A stream's late failure, the
 * one frame without an event name (`data: {"error": …}`), becomes an `error` event.
 */
async function forwardEvents(
  body: ReadableStream<Uint8Array>,
  send: (data: string) => Promise<void> | undefined,
  signal: AbortSignal,
): Promise<void> {
  let draining: Promise<void> | undefined;
  const parser = createParser({
    onEvent: (event) => {
      if (event.event !== undefined) {
        draining = send(event.data) ?? draining;
        return;
      }
      const late = JSON.parse(event.data) as ErrorBody;
      draining = send(JSON.stringify(errorEvent(500, late))) ?? draining;
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const stop = () => void reader.cancel(signal.reason).catch(() => {});
  signal.addEventListener('abort', stop, { once: true });
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      parser.feed(decoder.decode(read.value, { stream: true }));
      // A client slower than the model: the stream waits for the socket rather than pile its events up here.
      if (draining) await draining;
      draining = undefined;
    }
  } finally {
    signal.removeEventListener('abort', stop);
  }
}
