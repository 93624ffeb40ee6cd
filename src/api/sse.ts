import type { ErrorBody } from './errors.ts';

/**
 * Emits one server-sent event: a `data:` line holding the JSON of the value, after an `event:` line naming it when
 * `event` is given (the Responses API names its events; chat completions send data-only frames).
 */
export type SendEvent = (data: unknown, event?: string) => void;

export interface EventStreamOptions {
  /** The request's signal: the client going away stops the producer. */
  signal?: AbortSignal | undefined;
  headers?: Record<string, string>;
  /** How a failure after the first event is written into the stream (the status line is already sent). */
  errorBody: (error: unknown) => ErrorBody;
  /**
   * Whether a finished stream ends with `data: [DONE]` (default true), as chat and text completions do; the Responses
   * API's streams end with their last event instead.
   */
  doneFrame?: boolean;
}

/**
 * An event's data already serialised as JSON, which `send` writes as it is: for a producer that builds the JSON of its
 * many small events faster by hand than `JSON.stringify` would (a chat chunk's envelope, the same on every token, is
 * serialised once per stream).
 */
export class JsonText {
  constructor(readonly json: string) {}
}

/** The end of each event stream still being written, by its body: see {@link streamEnd}. */
const ends = new WeakMap<ReadableStream<Uint8Array>, Promise<void>>();

/**
 * When `response` is an event stream of {@link eventStream}: a promise of the end of its producer, however it ended
 * (finished, failed, or aborted by the client). Middleware that holds something for the length of a generation (a
 * rate-limit slot) lets go of it then. Keyed by the body stream, which a Response rebuilt around it keeps.
 */
export function streamEnd(response: Response): Promise<void> | undefined {
  return response.body ? ends.get(response.body) : undefined;
}

/**
 * Runs `produce` and streams what it sends as server-sent events in the form openai-node reads: data-only frames,
 * then `data: [DONE]`, then the body closes. An error after the first event becomes a `data: {"error": ...}` frame
 * and the body closes. When the request is aborted, the body fails with the abort's reason instead.
 *
 * The Response is returned once the first event is sent (or the producer finishes): a failure before any output,
 * such as a prompt over the context window, is thrown instead so that it is answered with its own status code.
 * Aborting the request or cancelling the body aborts the signal handed to `produce`.
 */
export async function eventStream(
  produce: (send: SendEvent, signal: AbortSignal) => Promise<void>,
  options: EventStreamOptions,
): Promise<Response> {
  const encoder = new TextEncoder();
  return producedResponse(
    (write, signal) => {
      const send: SendEvent = (data, event) => {
        const json = data instanceof JsonText ? data.json : JSON.stringify(data);
        write(encoder.encode(`${event === undefined ? '' : `event: ${event}\n`}data: ${json}\n\n`));
      };
      return produce(send, signal).then(() => {
        if (options.doneFrame !== false) write(encoder.encode('data: [DONE]\n\n'));
      });
    },
    {
      signal: options.signal,
      headers: { ...options.headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
      lateError: (error) => encoder.encode(`data: ${JSON.stringify(options.errorBody(error))}\n\n`),
    },
  );
}

export interface ByteStreamOptions {
  /** The request's signal: the client going away stops the producer. */
  signal?: AbortSignal | undefined;
  headers?: Record<string, string>;
}

/**
 * Runs `produce` and streams the bytes it writes as the body, as they are written (chunked): a binary answer made as
 * it goes, such as speech sentence by sentence. As with {@link eventStream}, the Response is returned once the first
 * bytes are written, so a failure before any is thrown to be answered with its own status; a failure after fails the
 * body (there is no frame to write an error into, and a file cut short must not read as a whole one).
 */
export function byteStream(
  produce: (write: (bytes: Uint8Array) => void, signal: AbortSignal) => Promise<void>,
  options: ByteStreamOptions,
): Promise<Response> {
  return producedResponse(produce, { signal: options.signal, headers: options.headers ?? {} });
}

/**
 * A Response whose body is what `produce` writes, returned once it has written something (or finished). A failure
 * before that is thrown; after, `lateError` writes it into the body, which then closes, or without one the body fails.
 */
async function producedResponse(
  produce: (write: (bytes: Uint8Array) => void, signal: AbortSignal) => Promise<void>,
  options: {
    signal?: AbortSignal | undefined;
    headers: Record<string, string>;
    lateError?: (error: unknown) => Uint8Array;
  },
): Promise<Response> {
  const abort = new AbortController();
  const onAbort = () => abort.abort(options.signal?.reason);
  // A request aborted before it got here never fires its abort event again: check first.
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => {
      open = false;
      // Aborted on the next task, not inside `cancel`: WebKit's service worker hangs for good when an AbortController
      // is aborted while the browser is cancelling a response body (every later request then fails).
      setTimeout(() => abort.abort(), 0);
    },
  });

  let started = false;
  let markStarted!: () => void;
  const firstOutput = new Promise<void>((resolve) => (markStarted = resolve));
  const write = (bytes: Uint8Array) => {
    if (open) controller.enqueue(bytes);
    if (!started) {
      started = true;
      markStarted();
    }
  };

  let failure: unknown;
  const finished = produce(write, abort.signal)
    .catch((error: unknown) => {
      if (!started) throw error;
      if (abort.signal.aborted) return;
      if (options.lateError) write(options.lateError(error));
      else failure = error;
    })
    .finally(() => {
      options.signal?.removeEventListener('abort', onAbort);
      if (!open) return;
      open = false;
      // After a client abort the body fails with the abort reason, as a fetch body does when its request is aborted.
      if (abort.signal.aborted) controller.error(abort.signal.reason);
      else if (failure !== undefined) controller.error(failure);
      else controller.close();
    });

  ends.set(
    body,
    finished.catch(() => {}),
  );
  await Promise.race([firstOutput, finished]);
  return new Response(body, { headers: options.headers });
}
