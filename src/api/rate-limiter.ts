import { ApiError } from './errors.ts';
import type { RateLimits } from './options.ts';

/**
 * How long a client refused for concurrency should wait: no clock says when a running generation ends, and one
 * second lets the openai SDK's two automatic retries span a short generation without hammering the device.
 */
const CONCURRENCY_RETRY_AFTER_MS = 1000;

interface Bucket {
  tokens: number;
  updatedAt: number;
  running: number;
}

/**
 * A request admitted under its key's limits. It takes a slot on the engine (`occupyEngine`) only once it is ready to
 * run, its body read; `release` gives back both, and is idempotent.
 */
export interface Lease {
  /** Takes one of the engine's slots, all keys together, or throws a 429 `engine_busy` (the key's request is refunded). */
  occupyEngine(): void;
  release(): void;
  /** The `x-ratelimit-*` headers that describe the key's state after this request was admitted. */
  headers: Record<string, string>;
}

/**
 * Per-key admission of the requests that run on the engine (chat completions and embeddings alike): a token bucket of
 * `requestsPerMinute` (refilled continuously, so a burst of a full minute's requests is allowed and then one every
 * 60/rpm seconds), a cap on each key's requests in flight, and a bound on all of them together (the engine queue).
 * The two are taken apart: a key's slot when the request arrives, the engine's once its body is read, so that a body
 * sent slowly holds only its own key's slot, never one that every key shares (issue 41).
 */
export class RateLimiter {
  readonly #limits: RateLimits;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();
  /** Requests admitted and not yet released, all keys together. */
  #inFlight = 0;

  constructor(limits: RateLimits, now: () => number) {
    this.#limits = limits;
    this.#now = now;
  }

  /** Admits one request for `key` under its own limits, or throws a 429 ApiError with retry headers. */
  admit(key: string): Lease {
    const { requestsPerMinute: rpm, concurrentGenerations, maxGenerations } = this.#limits;
    const now = this.#now();
    const bucket = this.#buckets.get(key) ?? { tokens: rpm, updatedAt: now, running: 0 };
    this.#buckets.set(key, bucket);
    const msPerToken = 60_000 / rpm;
    bucket.tokens = Math.min(rpm, bucket.tokens + (now - bucket.updatedAt) / msPerToken);
    bucket.updatedAt = now;

    if (bucket.running >= concurrentGenerations) {
      throw rateLimited(
        `Too many concurrent requests for this API key: the limit is ${concurrentGenerations} generations or ` +
          `embeddings at once. Wait for one to finish, then try again. ${howToRaise('concurrentGenerations')}`,
        CONCURRENCY_RETRY_AFTER_MS,
        this.#headers(bucket, msPerToken),
      );
    }
    if (bucket.tokens < 1) {
      const wait = Math.ceil((1 - bucket.tokens) * msPerToken);
      throw rateLimited(
        `Rate limit reached for requests per minute (RPM): limit ${rpm}. Please try again in ` +
          `${formatDuration(wait)}. ${howToRaise('requestsPerMinute')}`,
        wait,
        this.#headers(bucket, msPerToken),
      );
    }
    bucket.tokens -= 1;
    bucket.running += 1;
    const headers = this.#headers(bucket, msPerToken);
    let occupied = false;
    let released = false;
    return {
      headers,
      occupyEngine: () => {
        if (occupied || released) return;
        if (this.#inFlight >= maxGenerations) {
          // Refused for the device's load, not the key's: the request it was counted as is given back.
          bucket.tokens = Math.min(rpm, bucket.tokens + 1);
          throw rateLimited(
            `The engine is busy: ${maxGenerations} requests are already running or waiting on this device. ` +
              `Try again shortly. ${howToRaise('maxGenerations')}`,
            CONCURRENCY_RETRY_AFTER_MS,
            this.#headers(bucket, msPerToken),
            'engine_busy',
          );
        }
        occupied = true;
        this.#inFlight += 1;
      },
      release: () => {
        if (released) return;
        released = true;
        bucket.running -= 1;
        if (occupied) this.#inFlight -= 1;
      },
    };
  }

  #headers(bucket: Bucket, msPerToken: number): Record<string, string> {
    const rpm = this.#limits.requestsPerMinute;
    return {
      'x-ratelimit-limit-requests': String(rpm),
      'x-ratelimit-remaining-requests': String(Math.floor(bucket.tokens)),
      'x-ratelimit-reset-requests': formatDuration(Math.ceil((rpm - bucket.tokens) * msPerToken)),
    };
  }
}

/** Where each limit is set: `npm run serve:node`'s environment variables name the handler's `rateLimits`. */
export const RATE_LIMIT_VARIABLES: Readonly<Record<keyof RateLimits, string>> = Object.freeze({
  requestsPerMinute: 'LANTERN_REQUESTS_PER_MINUTE',
  concurrentGenerations: 'LANTERN_CONCURRENT_GENERATIONS',
  maxGenerations: 'LANTERN_MAX_GENERATIONS',
});

/** What a refusal tells the operator: the limit's option, and `npm run serve:node`'s variable for it. */
const howToRaise = (limit: keyof RateLimits) =>
  `(The server's operator sets this limit: \`rateLimits.${limit}\` of createHandler or mountLantern, or ` +
  `${RATE_LIMIT_VARIABLES[limit]} for \`npm run serve:node\`.)`;

function rateLimited(
  message: string,
  retryAfterMs: number,
  headers: Record<string, string>,
  code = 'rate_limit_exceeded',
): ApiError {
  return new ApiError(429, message, {
    code,
    headers: {
      ...headers,
      'retry-after-ms': String(retryAfterMs),
      'retry-after': String(Math.ceil(retryAfterMs / 1000)),
    },
  });
}

/** Durations as the OpenAI API writes them in `x-ratelimit-reset-*`: `20ms`, `1.5s`, `6m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${Number(seconds.toFixed(3))}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m${Math.round(seconds - minutes * 60)}s`;
}
