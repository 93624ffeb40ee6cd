import type { MiddlewareHandler } from 'hono';
import { KEY_PREFIX, type KeyInfo, type KeyStore } from '../../keys/index.ts';
import { ApiError } from '../errors.ts';

/** Keys are `lt_` + base64url; anything else is refused before the store is asked. Bounded to keep hashing cheap. */
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{16,256}$`);

const unauthorized = (message: string, code: string | null) => new ApiError(401, message, { code });

/**
 * Requires `Authorization: Bearer lt_…` with a key the store knows and has not revoked; sets `key` for the next
 * middleware. Messages say what is wrong and never echo the presented key.
 */
export function auth(keys: KeyStore): MiddlewareHandler<{ Variables: { key: KeyInfo } }> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (!header) {
      throw unauthorized(
        "You didn't provide an API key. Send it in an Authorization header using Bearer auth " +
          '(Authorization: Bearer lt_…); an administrator issues keys.',
        null,
      );
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      throw unauthorized('The Authorization header must have the form `Bearer lt_…`.', 'invalid_api_key');
    }
    const key = match[1]!;
    if (!KEY_SHAPE.test(key)) {
      throw unauthorized(
        `Incorrect API key provided. Lantern API keys begin with \`${KEY_PREFIX}\`.`,
        'invalid_api_key',
      );
    }
    const check = await keys.verify(key);
    if (!check.ok) {
      throw unauthorized(
        check.reason === 'revoked' ? 'This API key has been revoked.' : 'Incorrect API key provided.',
        'invalid_api_key',
      );
    }
    c.set('key', check.info);
    await next();
  };
}
