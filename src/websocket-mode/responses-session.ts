/**
 * The Responses API's WebSocket mode, as openai-node's `ResponsesWS` and the Agents SDK's websocket transport speak it,
 * apart from any socket: what a socket's messages become (requests to the same handler path as `POST /v1/responses`
 * with `stream: true`) and what it sends back (the events those stream). Node's upgrade (src/node/) and the page's
 * socket-shaped class (src/client/) each carry it.
 */
import { createParser } from 'eventsource-parser';

/** An error answer's body, as every OpenAI client reads it (the API's `ErrorBody`; this leaf imports none of it). */
interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The URL of WebSocket mode, as openai-node's `ResponsesWS` connects to it. */
export const RESPONSES_WEBSOCKET_PATH = '/v1/responses';

/** The `error` event a socket sends: the handler's error answer, its status, and `type: 'error'`. */
export interface ResponsesWebSocketError extends ErrorBody {
  type: 'error';
  status: number;
}

const DEFAULT_MAX_QUEUED = 16;

/** The `error` event of an error answer. */
const errorEvent = (status: number, body: ErrorBody): ResponsesWebSocketError => ({ type: 'error', status, ...body });
/** A socket's own refusal, typed as the API types its statuses' errors. */
const refusal = (status: 400 | 429 | 500, message: string, param: string | null = null, code: string | null = null) =>
  errorEvent(status, { error: { message, type: ERROR_TYPES[status], param, code } });
const ERROR_TYPES = { 400: 'invalid_request_error', 429: 'requests', 500: 'server_error' } as const;

/** How a {@link ResponsesSession} reaches the API and its client. */
export interface ResponsesSessionOptions {
  /** Makes one `POST /v1/responses` of `body` (JSON text), aborted by `signal`: the handler, or `fetch`. */
  request(body: string, signal: AbortSignal): Promise<Response>;
  /**
   * Sends one message to the client; a promise when the client is slow to take it, which the response's events then
   * wait for.
   */
  send(data: string): Promise<void> | undefined;
  /** How many `response.create` messages may wait behind the running one (default 16). */
  maxQueued?: number | undefined;
}

/**
 * One socket of WebSocket mode, whatever carries it: its `response.create` messages, each a streamed
 * `POST /v1/responses` (the same handler path as over HTTP), run one at a time in the order they came, each answered
 * with the events it streams, one message per event; any failure an `error` event, after which the next message runs.
 */
export class ResponsesSession {
  readonly #options: ResponsesSessionOptions;
  readonly #maxQueued: number;
  readonly #waiting: string[] = [];
  #running: AbortController | undefined;
  #closed = false;

  constructor(options: ResponsesSessionOptions) {
    this.#options = options;
    this.#maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  }

  /** A client message: its text, or null for a binary one. */
  receive(text: string | null): void {
    if (this.#closed) return;
    const body = requestBody(text);
    if (typeof body !== 'string') return this.#sendError(body);
    if (this.#waiting.length >= this.#maxQueued) {
      const message = `${this.#maxQueued} responses already wait on this socket; send more once they are answered.`;
      return this.#sendError(refusal(429, message, null, 'too_many_queued_responses'));
    }
    this.#waiting.push(body);
    if (!this.#running) this.#next();
  }

  /** The socket closed: the running response is aborted, those waiting dropped. */
  close(): void {
    this.#closed = true;
    this.#waiting.length = 0;
    this.#running?.abort(new DOMException('The WebSocket closed.', 'AbortError'));
  }

  #send = (data: string) => (this.#closed ? undefined : this.#options.send(data));
  #sendError(event: ResponsesWebSocketError) {
    void this.#send(JSON.stringify(event));
  }

  #next() {
    const body = this.#waiting.shift();
    if (body === undefined || this.#closed) return;
    void this.#run(body).then(() => this.#next());
  }

  async #run(body: string) {
    const abort = new AbortController();
    this.#running = abort;
    try {
      const answer = await this.#options.request(body, abort.signal);
      if (!answer.headers.get('content-type')?.startsWith('text/event-stream') || !answer.body) {
        this.#sendError(await errorOf(answer));
        return;
      }
      await forwardEvents(answer.body, this.#send, abort.signal);
    } catch (error) {
      if (abort.signal.aborted) return;
      this.#sendError(refusal(500, `The response failed: ${(error as Error).message}`));
    } finally {
      this.#running = undefined;
    }
  }
}

/**
 * The `POST /v1/responses` body of a client message: its fields but `type`, streamed; or why it is not one. What the
 * body holds is the handler's to judge, as over HTTP.
 */
function requestBody(text: string | null): string | ResponsesWebSocketError {
  if (text === null)
    return refusal(400, 'WebSocket mode takes JSON text messages; this one was binary.', null, 'invalid_json');
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch (error) {
    return refusal(400, `The message is not valid JSON (${(error as Error).message}).`, null, 'invalid_json');
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    return refusal(
      400,
      'A message must be a JSON object, such as {"type": "response.create", …}.',
      null,
      'invalid_json',
    );
  }
  const { type, ...fields } = event as Record<string, unknown>;
  if (type !== 'response.create') {
    return refusal(
      400,
      `Unknown event type ${JSON.stringify(type)}: WebSocket mode takes "response.create".`,
      'type',
      'unknown_event_type',
    );
  }
  // As OpenAI's WebSocket mode: the events of the socket are the stream, and a response it starts runs while it is open.
  if (fields.background === true) {
    return refusal(400, 'background is not supported over WebSocket; use POST /v1/responses.', 'background');
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
  return refusal(500, `The API answered ${answer.status} without an error body.`);
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
