/**
 * The one error type that leaves an engine. `kind` says what went wrong in terms the API layer can map to a status
 * (in `src/api/errors.ts`); engines never know about HTTP.
 */
export type EngineErrorKind =
  /** No such model, or not for this task. */
  | 'model_not_found'
  /** The prompt plus the requested tokens do not fit the model's context window. */
  | 'context_length_exceeded'
  /** The engine understood the request but cannot serve it as asked (e.g. an input it does not support). */
  | 'invalid_request'
  /** The caller aborted; nobody is waiting for an answer. */
  | 'aborted'
  /** No engine is reachable right now (no page hosts one, or its worker has not started); trying again can succeed. */
  | 'unavailable'
  /**
   * The engine went away while the call ran (its host tab closed, its worker was replaced): the same call can run on
   * the next one, and the router sends it there while it has produced no output.
   */
  | 'engine_lost'
  /**
   * The GPU device the engine ran on was lost (the browser's GPU process crashed or was reset, a driver update): the
   * engine worker is replaced, and the request can be sent again.
   */
  | 'device_lost'
  /**
   * The page, its service worker and its engine worker are not all the same version of Lantern (`PROTOCOL_VERSION`):
   * a page left open across an app update. Reloading the page heals it; retrying alone does not.
   */
  | 'version_mismatch'
  /** A model could not be loaded (missing files, unsupported device); trying again will not help until fixed. */
  | 'load_failed'
  /** A model's download would not fit in the storage quota. */
  | 'insufficient_storage'
  /** A model's files could not be downloaded (offline, a server that keeps failing, a file that fails its check). */
  | 'download_failed'
  /** The engine failed while running. */
  | 'internal'
  /**
   * A constrained choice ended without a valid answer (its JSON incomplete after a stop sequence, or invalid through a
   * gap in the grammar engine): never returned as a success. Sampling again can succeed.
   */
  | 'invalid_output'
  /** The server that serves the model is busy and says when to come back (`retryAfterMs`, `headers`). */
  | 'rate_limited'
  /** The server that serves the model answered with a failure that is not the request's fault, or not an answer. */
  | 'upstream_error'
  /** The server that serves the model could not be reached, did not answer in time, or is cooling down after that. */
  | 'upstream_unavailable';

export interface EngineErrorOptions {
  /** The request field the error is about, when there is one (e.g. `messages`, `input`). */
  param?: string;
  cause?: unknown;
  /** Whether the same request can succeed if sent again; when unset, the error's kind decides. */
  retry?: boolean;
  /** How long to wait before trying again, in milliseconds. */
  retryAfterMs?: number;
  /** Headers of a server's answer worth passing on to the client (`retry-after`, `x-ratelimit-*`). */
  headers?: Record<string, string>;
  /** The candidate that failed, when a remote one did: its `candidateKey`, its public name once the router passed it. */
  backend?: string;
}

export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly kind: EngineErrorKind;
  readonly param: string | undefined;
  readonly retry: boolean | undefined;
  readonly retryAfterMs: number | undefined;
  readonly headers: Readonly<Record<string, string>>;
  readonly backend: string | undefined;

  constructor(kind: EngineErrorKind, message: string, options: EngineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.param = options.param;
    this.retry = options.retry;
    this.retryAfterMs = options.retryAfterMs;
    this.headers = options.headers ?? {};
    this.backend = options.backend;
  }

  /** Wraps anything thrown inside an engine so that only EngineErrors leave it. */
  static from(error: unknown, kind: EngineErrorKind = 'internal'): EngineError {
    if (error instanceof EngineError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new EngineError(kind, message, { cause: error });
  }
}

/**
 * The error for a public model ID that is not there: in the OpenAI API's words, then what the caller can use instead
 * (`detail`), e.g. the models of the task it asked for.
 */
export function modelNotFound(id: string, detail?: string): EngineError {
  const message = `The model \`${id}\` does not exist or you do not have access to it.`;
  return new EngineError('model_not_found', detail ? `${message} ${detail}` : message, { param: 'model' });
}

/** Throws the `aborted` EngineError when the signal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new EngineError('aborted', 'The request was cancelled by the client.');
}
