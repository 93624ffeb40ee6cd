import type { MiddlewareHandler } from 'hono';
import type { KeyInfo } from '../../keys/index.ts';
import type { RateLimiter } from '../rate-limiter.ts';
import { streamEnd } from '../sse.ts';

/**
 * Admits the request under its key's rate limit (or answers 429) and holds its slot until the model's work is over:
 * when the route answers with JSON, or when an event stream's generation ends (finished, failed or aborted), with no
 * pass over its chunks. Routes know nothing of it.
 */
export function rateLimit(limiter: RateLimiter): MiddlewareHandler<{ Variables: { key: KeyInfo } }> {
  return async (c, next) => {
    const lease = limiter.admit(c.get('key').id);
    try {
      await next();
    } catch (error) {
      lease.release();
      throw error;
    }
    for (const [name, value] of Object.entries(lease.headers)) c.res.headers.set(name, value);
    const end = streamEnd(c.res);
    if (end) void end.finally(() => lease.release());
    else lease.release();
  };
}
