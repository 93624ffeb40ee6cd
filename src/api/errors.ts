import { EngineError, type EngineErrorKind } from '../engine-interface/index.ts';
import { LibraryError } from '../file-search/index.ts';

/** An error answer's body, as every OpenAI client reads it. */
export interface ErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}

/**
 * The statuses this API answers with (the spec's table, 426 for a plain GET of the Responses API's WebSocket URL, and
 * 502 / 503 for a remote server that failed).
 */
export type ErrorStatus = 400 | 401 | 404 | 413 | 426 | 429 | 500 | 502 | 503;

export interface ApiErrorOptions {
  type?: string;
  param?: string | null;
  code?: string | null;
  /** Extra response headers (`retry-after-ms`, `x-should-retry`, ...). */
  headers?: Record<string, string>;
  cause?: unknown;
}

const DEFAULT_TYPE: Record<ErrorStatus, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  404: 'invalid_request_error',
  413: 'invalid_request_error',
  426: 'invalid_request_error',
  429: 'requests',
  500: 'server_error',
  502: 'server_error',
  503: 'server_error',
};

/** The response header naming the candidate that answered (or, on an error from a remote server, that failed). */
export const BACKEND_HEADER = 'x-lantern-backend';

/**
 * An error that becomes one OpenAI-shaped error response. Code anywhere in `src/api` throws it; the single error
 * handler in `create-handler.ts` writes the response.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: ErrorStatus;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
  readonly headers: Record<string, string>;

  constructor(status: ErrorStatus, message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.type = options.type ?? DEFAULT_TYPE[status];
    this.param = options.param ?? null;
    this.code = options.code ?? null;
    this.headers = options.headers ?? {};
  }

  body(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const invalidRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError(400, message, { param, code });

/**
 * How each engine error kind is answered. `retry: false` sends `x-should-retry: false`, which stops the openai SDK's
 * automatic retries of 5xx answers where retrying cannot help; `retry: true` asks for them; without it, the SDK's own
 * rule holds (it retries 5xx).
 */
const ENGINE_ERRORS: Record<EngineErrorKind, { status: ErrorStatus; code: string | null; retry?: boolean }> = {
  model_not_found: { status: 404, code: 'model_not_found' },
  context_length_exceeded: { status: 400, code: 'context_length_exceeded' },
  invalid_request: { status: 400, code: null },
  // Nobody reads this answer: the client went away. It exists so that the handler still returns a Response.
  aborted: { status: 500, code: 'request_cancelled', retry: false },
  unavailable: { status: 500, code: 'engine_unavailable', retry: true },
  // Only once the router could not send the call to the next engine (it had streamed output, or engines kept going).
  engine_lost: { status: 500, code: 'engine_unavailable', retry: true },
  // The GPU went away under the engine: not the request's fault, and gone once the replaced worker has a device (as a
  // server answers while it restarts); the SDK retries a 503.
  device_lost: { status: 503, code: 'gpu_device_lost', retry: true },
  // Only a reload of the app's pages heals it: retrying would hear the same.
  version_mismatch: { status: 503, code: 'version_mismatch', retry: false },
  load_failed: { status: 500, code: 'model_load_failed', retry: false },
  // As OpenAI-compatible servers answer a model they cannot load for want of resources: not the request's fault, and
  // not a broken server; freeing space, or the network coming back, heals it.
  insufficient_storage: { status: 503, code: 'insufficient_storage', retry: false },
  download_failed: { status: 503, code: 'model_download_failed', retry: false },
  // A run that broke its engine: the host replaces the worker at once (a poisoned transformers.js never recovers in
  // place), so the next try runs on a fresh one. No header: the SDK retries a 500 by default.
  internal: { status: 500, code: 'engine_error' },
  invalid_output: { status: 500, code: 'invalid_structured_output', retry: true },
  rate_limited: { status: 429, code: 'rate_limit_exceeded' },
  upstream_error: { status: 502, code: 'upstream_error', retry: true },
  upstream_unavailable: { status: 503, code: 'upstream_unavailable', retry: true },
};

/**
 * The one place where typed engine errors become HTTP errors. An error that knows better than its kind whether a retry
 * can help (a remote server's own `x-should-retry`) says so; a wait becomes `retry-after-ms` and `retry-after`, which
 * the openai SDK honours; a remote server's rate-limit headers pass through.
 */
export function fromEngineError(error: EngineError): ApiError {
  const rule = ENGINE_ERRORS[error.kind];
  const retry = error.retry ?? rule.retry;
  const headers: Record<string, string> = { ...error.headers };
  if (retry !== undefined) headers['x-should-retry'] = String(retry);
  if (error.retryAfterMs !== undefined) {
    headers['retry-after-ms'] = String(Math.ceil(error.retryAfterMs));
    headers['retry-after'] = String(Math.ceil(error.retryAfterMs / 1000));
  }
  if (error.backend !== undefined) headers[BACKEND_HEADER] = error.backend;
  return new ApiError(rule.status, error.message, {
    param: error.param ?? null,
    code: rule.code,
    headers,
    cause: error,
  });
}

/** Anything thrown while serving a request, as an ApiError; unknown errors are 500s that retrying will not fix. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof EngineError) return fromEngineError(error);
  if (error instanceof LibraryError) {
    return new ApiError(error.status, error.message, { param: error.param, code: error.code, cause: error });
  }
  return new ApiError(500, 'The server had an error while processing your request. Sorry about that!', {
    code: 'internal_error',
    headers: { 'x-should-retry': 'false' },
    cause: error,
  });
}
