import { createParser } from 'eventsource-parser';
import { EngineError } from '../../engine-interface/index.ts';
import { keyOf } from '../engine-descriptor.ts';
import {
  basicCredentials,
  candidateSecrets,
  REMOTE_ENGINE,
  type RemoteCandidate,
  type RemoteTimeouts,
} from './remote-engine.ts';
import { cutShort, fromStatus, notAnAnswer, timedOut, unreachable, type ErrorContext } from './upstream-errors.ts';

/**
 * The timeouts of a remote candidate that sets none, in milliseconds. `connect`, until the server accepts a streamed
 * request (its response headers): vLLM and llama.cpp's server send them at once, while Ollama and Lantern's own server
 * send them with the first token, after loading a cold model; half a minute covers that load for a small model, and an
 * unreachable host (Node's fetch gives up connecting after 10 s by itself). `firstByte`, until the first token (a
 * stream's first event, or a JSON answer, which servers send whole): two minutes covers a long prompt on a loaded
 * server. `idle`: once a stream runs, a minute without a token is a server that hung.
 */
export const REMOTE_TIMEOUTS: Readonly<RemoteTimeouts> = Object.freeze({
  connect: 30_000,
  firstByte: 120_000,
  idle: 60_000,
});

/** Most bytes of an error answer read: error bodies are small, and a misconfigured URL may answer a large page. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** Where a remote candidate's requests go, and what they carry. */
export class UpstreamTarget {
  readonly candidate: RemoteCandidate;
  readonly context: ErrorContext;
  readonly timeouts: RemoteTimeouts;
  readonly #headers: Record<string, string>;

  constructor(candidate: RemoteCandidate) {
    this.candidate = candidate;
    this.timeouts = { ...REMOTE_TIMEOUTS, ...candidate.timeouts };
    const basic = basicCredentials(candidate.baseURL);
    this.#headers = {
      // A base URL's user and password (`https://user:pass@host/v1`), the way curl sends them: fetch refuses a URL
      // that carries them. A candidate's `apiKey` or `authorization` header, when it has one, is sent instead.
      ...(basic && { authorization: `Basic ${basic}` }),
      ...(candidate.apiKey && { authorization: `Bearer ${candidate.apiKey}` }),
      ...candidate.headers,
    };
    this.context = { backend: keyOf(REMOTE_ENGINE, candidate), secrets: candidateSecrets(candidate) };
  }

  /**
   * The URL of an endpoint (`/chat/completions`); a path such as `/api/llm/v1` is on this page's origin. The endpoint
   * goes after the base's path and before its query (`…/v1/chat/completions?api-version=…`); its user and password
   * go as a header instead, as fetch refuses a URL that carries them, with the URL in its message.
   */
  url(endpoint: string): string {
    try {
      const url = new URL(this.candidate.baseURL, globalThis.location?.href);
      url.username = url.password = '';
      url.pathname = url.pathname.replace(/\/+$/, '') + endpoint;
      return url.href;
    } catch {
      throw new EngineError(
        'upstream_error',
        `The remote candidate ${this.context.backend} has no absolute baseURL (a path needs a page's origin).`,
        { backend: this.context.backend, retry: false },
      );
    }
  }

  headers(stream: boolean): Record<string, string> {
    return {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      ...this.#headers,
    };
  }
}

/**
 * One request's deadline and cancellation: the caller's abort and each timeout abort the same fetch, which closes the
 * connection to the server; `explain` then says which of them it was.
 */
class Guard {
  readonly controller = new AbortController();
  readonly #target: UpstreamTarget;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.controller.abort();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timeout: EngineError | undefined;

  constructor(target: UpstreamTarget, signal: AbortSignal | undefined) {
    this.#target = target;
    this.#signal = signal;
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Starts the deadline of the next wait. */
  arm(what: keyof RemoteTimeouts): void {
    clearTimeout(this.#timer);
    const ms = this.#target.timeouts[what];
    this.#timer = setTimeout(() => {
      this.#timeout = timedOut(what, ms, this.#target.context);
      this.controller.abort(this.#timeout);
    }, ms);
  }

  /** Why a fetch or a read failed: the caller aborted, a deadline passed, or `otherwise`. */
  explain(error: unknown, otherwise: (error: unknown) => EngineError): EngineError {
    if (this.#signal?.aborted) return new EngineError('aborted', 'The request was cancelled by the client.');
    return this.#timeout ?? otherwise(error);
  }

  /** Ends the guard; `close` also drops the connection (an answer not read to its end). */
  finish(close = false): void {
    clearTimeout(this.#timer);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    if (close) this.controller.abort();
  }
}

/** A server's answer, status 2xx, to be read once: as JSON or as a stream of events. */
export class UpstreamAnswer {
  readonly #response: Response;
  readonly #guard: Guard;
  readonly #context: ErrorContext;

  constructor(response: Response, guard: Guard, context: ErrorContext) {
    this.#response = response;
    this.#guard = guard;
    this.#context = context;
  }

  /** The whole body, parsed as JSON. */
  async json(): Promise<unknown> {
    let text = '';
    const decoder = new TextDecoder();
    await this.#read('idle', (bytes) => void (text += decoder.decode(bytes, { stream: true })));
    text += decoder.decode();
    try {
      return JSON.parse(text);
    } catch {
      throw notAnAnswer('a body that is not JSON', this.#context);
    }
  }

  /**
   * Reads server-sent events as they arrive, calling `onData` with each event's data (comments and event names are
   * skipped, as OpenAI's clients do), until the body ends. Each event is handed on before the next is read: nothing
   * is buffered beyond one network read.
   */
  async events(onData: (data: string) => void): Promise<void> {
    const type = this.#response.headers.get('content-type') ?? '';
    if (!type.startsWith('text/event-stream')) {
      this.#guard.finish(true);
      throw notAnAnswer(`a ${type.split(';')[0] || 'untyped'} body where a stream was asked for`, this.#context);
    }
    const decoder = new TextDecoder();
    const parser = createParser({ onEvent: (event) => onData(event.data) });
    await this.#read('firstByte', (bytes) => parser.feed(decoder.decode(bytes, { stream: true })));
  }

  /** Reads the body's bytes as they arrive (binary answers: audio), handing each read on before the next. */
  async bytes(onBytes: (bytes: Uint8Array) => void): Promise<void> {
    await this.#read('firstByte', onBytes);
  }

  /** Reads the body to its end, each wait under its deadline; the first under `first`, the next ones under `idle`. */
  async #read(first: keyof RemoteTimeouts, onBytes: (bytes: Uint8Array) => void): Promise<void> {
    const reader = this.#response.body?.getReader();
    let ended = false;
    try {
      if (!reader) return;
      for (let wait = first; ; wait = 'idle') {
        this.#guard.arm(wait);
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (error) {
          throw this.#guard.explain(error, (cause) => cutShort(this.#context, cause));
        }
        if (chunk.done) break;
        onBytes(chunk.value);
      }
      ended = true;
    } finally {
      this.#guard.finish(!ended);
    }
  }
}

/**
 * POSTs a JSON body to the server and returns its answer once its headers are in, or throws the EngineError its
 * failure maps to (see `upstream-errors.ts`). A streamed request must see its headers within the `connect` timeout; a
 * JSON one, which servers answer whole, within `firstByte`.
 */
export async function postUpstream(
  target: UpstreamTarget,
  endpoint: string,
  body: unknown,
  options: { signal?: AbortSignal | undefined; stream: boolean },
): Promise<UpstreamAnswer> {
  if (options.signal?.aborted) throw new EngineError('aborted', 'The request was cancelled by the client.');
  const url = target.url(endpoint);
  const guard = new Guard(target, options.signal);
  guard.arm(options.stream ? 'connect' : 'firstByte');
  // A form (audio) is sent as multipart, with the boundary fetch writes into its own content type.
  const form = body instanceof FormData;
  const { 'content-type': json, ...others } = target.headers(options.stream);
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: form ? others : { 'content-type': json!, ...others },
      body: form ? body : JSON.stringify(body),
      signal: guard.controller.signal,
    });
  } catch (error) {
    guard.finish();
    throw guard.explain(error, (cause) => unreachable(cause, target.context));
  }
  if (response.ok) return new UpstreamAnswer(response, guard, target.context);
  const text = await readLimited(response, ERROR_BODY_LIMIT).catch(() => '');
  guard.finish(true);
  throw fromStatus(response.status, text, response.headers, target.context);
}

async function readLimited(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const decoder = new TextDecoder();
  let text = '';
  for (let size = 0; size < limit;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    size += value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text;
}
