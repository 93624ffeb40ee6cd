import type { MiddlewareHandler } from 'hono';
import type { KeyInfo } from '../../keys/index.ts';
import type { RateLimiter } from '../rate-limiter.ts';
import { readBody } from '../request-body.ts';
import { streamEnd } from '../sse.ts';

/** How large a route's body may be, and how long it may take to arrive. */
export interface BodyLimits {
  maxBytes: number;
  timeoutMs: number;
}

/**
 * Admits a request that runs a model, in three steps: under its key's rate limit (or 429); then its body, read whole
 * within `body`'s size and deadline (400), and set as `body` for the route; then onto the engine, a slot of those all
 * keys share (or 429 `engine_busy`). A body that trickles in (one byte a second) thus holds only a slot of its own key,
 * never one of the engine's (issue 41). Both are held until the model's work is over: when the route answers with
 * JSON, or when an event stream's generation ends (finished, failed or aborted), with no pass over its chunks; or, when
 * the route set `outlasting` (a background response's run), when that ends. Routes know nothing else of it.
 */
export function rateLimit(
  limiter: RateLimiter,
  body: BodyLimits,
): MiddlewareHandler<{ Variables: { key: KeyInfo; body: Uint8Array; outlasting?: Promise<void> } }> {
  return async (c, next) => {
    const lease = limiter.admit(c.get('key').id);
    try {
      c.set('body', await readBody(c.req.raw, body.maxBytes, body.timeoutMs));
      lease.occupyEngine();
      await next();
    } catch (error) {
      lease.release();
      throw error;
    }
    for (const [name, value] of Object.entries(lease.headers)) c.res.headers.set(name, value);
    // Work the route left running past its answer (a background response) holds the slots until it ends, not the answer.
    const end = c.get('outlasting') ?? streamEnd(c.res);
    if (end) void end.finally(() => lease.release());
    else lease.release();
  };
}
