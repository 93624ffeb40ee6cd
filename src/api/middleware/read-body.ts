import type { MiddlewareHandler } from 'hono';
import { readBody } from '../request-body.ts';
import type { BodyLimits } from './rate-limit.ts';

/**
 * Reads a body whole, within `body`'s size and deadline (400), and sets it as `body` for the route: for routes that
 * run no model (uploads, vector store management), which no rate limit or engine slot holds. Routes that run a model
 * read theirs through `rateLimit`.
 */
export function readBodyOf(body: BodyLimits): MiddlewareHandler<{ Variables: { body: Uint8Array } }> {
  return async (c, next) => {
    c.set('body', await readBody(c.req.raw, body.maxBytes, body.timeoutMs));
    await next();
  };
}
