import { EngineError } from '../../engine-interface/index.ts';

/**
 * How a remote server's failures become typed engine errors (the API's one error table then gives them a status):
 *
 * | the server                              | kind                      | HTTP     | x-should-retry                  |
 * | --------------------------------------- | ------------------------- | -------- | ------------------------------- |
 * | 400, 409, 413, 422: the request's fault | `invalid_request`         | 400      | –                               |
 * | … with code `context_length_exceeded`   | `context_length_exceeded` | 400      | –                               |
 * | 429                                     | `rate_limited`            | 429      | its own retry headers           |
 * | 401, 403: Lantern's credentials refused | `upstream_error`          | 502      | false                           |
 * | 404: no such model or path there        | `upstream_error`          | 502      | false                           |
 * | 408, 503: busy or starting              | `upstream_unavailable`    | 503      | its own, else true              |
 * | other 5xx                               | `upstream_error`          | 502      | its own, else true              |
 * | not reachable, timed out, cooling down  | `upstream_unavailable`    | 503      | true (`retry-after` when known) |
 * | a body that is no answer                | `upstream_error`          | 502      | false                           |
 * | a stream cut short or stalled           | `upstream_error`          | (stream) | true                            |
 *
 * Messages name the server by its candidate key (no user, query or fragment of its URL) and never carry a configured
 * key, header value, or the user, password or query values of its `baseURL`: the server's own words are scrubbed of
 * them first, as a server may echo what it was sent. The router then names the server publicly (`PublicView`).
 */

/** Headers of a failed answer that tell the client when and how much to retry: passed on as they are. */
const RETRY_HEADERS = /^(retry-after(-ms)?|x-ratelimit-[a-z-]+)$/;

/** Longest piece of a server's error message passed on: enough for any real message, not a whole HTML page. */
const MAX_MESSAGE = 1_000;

/** Which server, and what must never appear in a message about it. */
export interface ErrorContext {
  backend: string;
  secrets: readonly string[];
}

/** Replaces every secret (and every long word of one, such as the token of `Bearer <token>`) with `[redacted]`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    for (const part of [secret, ...secret.split(/\s+/).filter((word) => word.length >= 8)]) {
      if (part.length >= 4) out = out.split(part).join('[redacted]');
    }
  }
  return out;
}

interface ServerError {
  message: string | undefined;
  param: string | undefined;
  code: string | undefined;
}

/** Reads an error body in the shapes servers use: OpenAI's `{error: {…}}`, vLLM's flat one, FastAPI's `detail`. */
function readErrorBody(body: string): ServerError {
  const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const inner =
      typeof json.error === 'object' && json.error !== null
        ? (json.error as Record<string, unknown>)
        : { message: json.error ?? json.message };
    const message = text(inner.message) ?? (json.detail === undefined ? undefined : JSON.stringify(json.detail));
    return { message, param: text(inner.param), code: text(inner.code) };
  } catch {
    return { message: text(body.trim()), param: undefined, code: undefined };
  }
}

const shorten = (text: string) => (text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text);

/** The retry headers of an answer, and the server's own `x-should-retry` when it sent one. */
function retryInfo(headers: Headers): { headers: Record<string, string>; retry: boolean | undefined } {
  const passed: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (RETRY_HEADERS.test(name)) passed[name] = value;
  });
  const own = headers.get('x-should-retry');
  return { headers: passed, retry: own === 'true' ? true : own === 'false' ? false : undefined };
}

/** A server's answer with an error status, as an EngineError. */
export function fromStatus(status: number, body: string, headers: Headers, context: ErrorContext): EngineError {
  const { backend, secrets } = context;
  const said = readErrorBody(body);
  const words = said.message === undefined ? '' : shorten(scrub(said.message, secrets));
  const retry = retryInfo(headers);
  const common = { backend, headers: retry.headers };
  const theServer = `The model server (${backend})`;
  if (status === 429) {
    return new EngineError('rate_limited', words || `${theServer} is busy: retry later.`, common);
  }
  if (status === 400 || status === 409 || status === 413 || status === 422) {
    const kind = said.code === 'context_length_exceeded' ? 'context_length_exceeded' : 'invalid_request';
    return new EngineError(kind, words || `${theServer} refused the request (${status}).`, {
      ...common,
      ...(said.param && { param: said.param }),
    });
  }
  if (status === 401 || status === 403) {
    return new EngineError(
      'upstream_error',
      `${theServer} refused Lantern's credentials (${status}): check the candidate's apiKey and headers. ${words}`.trim(),
      { ...common, retry: false },
    );
  }
  if (status === 404) {
    return new EngineError(
      'upstream_error',
      `${theServer} answered 404: check the candidate's baseURL and model name. ${words}`.trim(),
      { ...common, retry: false },
    );
  }
  const kind = status === 408 || status === 503 ? 'upstream_unavailable' : 'upstream_error';
  return new EngineError(kind, `${theServer} failed (${status}). ${words}`.trim(), {
    ...common,
    retry: retry.retry ?? (status >= 500 || status === 408),
  });
}

/** The server could not be reached (refused, reset, no such host, a CORS refusal in a browser). */
export function unreachable(cause: unknown, context: ErrorContext): EngineError {
  // Node's fetch says "fetch failed" and puts the reason (ECONNREFUSED, ENOTFOUND, …) in its cause.
  const reason = (cause as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const detail = typeof reason?.code === 'string' ? reason.code : cause instanceof Error ? cause.message : '';
  return new EngineError(
    'upstream_unavailable',
    `The model server (${context.backend}) could not be reached${detail ? ` (${scrub(detail, context.secrets)})` : ''}.`,
    { backend: context.backend, retry: true, cause },
  );
}

/** The server did not answer in time. */
export function timedOut(what: 'connect' | 'firstByte' | 'idle', ms: number, context: ErrorContext): EngineError {
  const waiting = {
    connect: 'start answering',
    firstByte: 'send its first token',
    idle: 'send the next part of its answer',
  }[what];
  return new EngineError(
    what === 'idle' ? 'upstream_error' : 'upstream_unavailable',
    `The model server (${context.backend}) did not ${waiting} within ${ms} ms.`,
    { backend: context.backend, retry: true },
  );
}

/** The server's answer ended before it was complete (the server went away mid-answer). */
export function cutShort(context: ErrorContext, cause?: unknown): EngineError {
  return new EngineError(
    'upstream_error',
    `The model server (${context.backend}) stopped in the middle of its answer.`,
    { backend: context.backend, retry: true, ...(cause !== undefined && { cause }) },
  );
}

/** The server answered 200 with something that is not an answer of the OpenAI API (wrong URL, a proxy's page). */
export function notAnAnswer(what: string, context: ErrorContext): EngineError {
  return new EngineError(
    'upstream_error',
    `The model server (${context.backend}) sent ${what}, not an answer of the OpenAI API: check the candidate's baseURL.`,
    { backend: context.backend, retry: false },
  );
}

/** An error event inside a stream (`data: {"error": {…}}`): the server failed after it had started answering. */
export function fromStreamError(error: unknown, context: ErrorContext): EngineError {
  const said = readErrorBody(JSON.stringify({ error }));
  const words = said.message === undefined ? '' : ` ${shorten(scrub(said.message, context.secrets))}`;
  return new EngineError('upstream_error', `The model server (${context.backend}) failed mid-answer.${words}`, {
    backend: context.backend,
    retry: true,
  });
}
