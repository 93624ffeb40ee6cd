import type { MiddlewareHandler } from 'hono';
import type { KeyInfo } from '../../keys/index.ts';
import type { RateLimiter } from '../rate-limiter.ts';
import { isEventStream, onStreamEnd } from '../stream-end.ts';

/**
 * Admits the request under its key's rate limit (or answers 429) and holds a generation slot until the answer is
 * complete: at once for a JSON answer, when the stream closes or is cancelled for an event stream.
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
    const response = c.res;
    for (const [name, value] of Object.entries(lease.headers)) response.headers.set(name, value);
    if (isEventStream(response)) {
      c.res = new Response(onStreamEnd(response.body!, lease.release), response);
    } else {
      lease.release();
    }
  };
}
