import type { MiddlewareHandler } from 'hono';
import type { KeyInfo } from '../../keys/index.ts';
import type { RateLimiter } from '../rate-limiter.ts';

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
    if (response.body && response.headers.get('content-type')?.startsWith('text/event-stream')) {
      c.res = new Response(whenDone(response.body, lease.release), response);
    } else {
      lease.release();
    }
  };
}

/** The same stream, calling `done` once when it ends, fails or is cancelled by its reader. */
function whenDone(source: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: ended, value } = await reader.read();
        if (ended) {
          done();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        done();
        controller.error(error);
      }
    },
    async cancel(reason) {
      done();
      await reader.cancel(reason);
    },
  });
}
