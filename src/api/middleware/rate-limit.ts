import type { MiddlewareHandler } from 'hono';
import type { KeyInfo } from '../../keys/index.ts';
import type { Lease, RateLimiter } from '../rate-limiter.ts';
import { isEventStream } from '../stream-end.ts';

/**
 * Admits the request under its key's rate limit (or answers 429) and holds a generation slot until the generation is
 * over: at once for a JSON answer; for an event stream, the route hands `generation.release` to the stream, which
 * calls it when the generation ends (finished, failed or aborted), with no extra pass over every chunk.
 */
export function rateLimit(limiter: RateLimiter): MiddlewareHandler<{ Variables: { key: KeyInfo; generation: Lease } }> {
  return async (c, next) => {
    const lease = limiter.admit(c.get('key').id);
    c.set('generation', lease);
    try {
      await next();
    } catch (error) {
      lease.release();
      throw error;
    }
    for (const [name, value] of Object.entries(lease.headers)) c.res.headers.set(name, value);
    if (!isEventStream(c.res)) lease.release();
  };
}
