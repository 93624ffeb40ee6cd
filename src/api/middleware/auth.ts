import type { MiddlewareHandler } from 'hono';
import { KEY_PREFIX, type KeyInfo, type KeyStore } from '../../keys/index.ts';
import { ApiError } from '../errors.ts';

/** Keys are `lt_` + base64url; anything else is refused before the store is asked. Bounded to keep hashing cheap. */
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[A-Za-z0-9_-]{16,256}$`);

const unauthorized = (message: string, code: string | null) => new ApiError(401, message, { code });

/**
 * The Hono binding of a request the handler sends itself (a batch's line), naming the key it runs as. Only
 * `createHandler`'s own dispatch passes bindings to the app: a request from outside arrives with none, so no header,
 * body or URL can reach this path.
 */
export const INTERNAL_KEY_ID = Symbol('lantern.internalKeyId');
export type InternalBindings = { [INTERNAL_KEY_ID]?: string };

/** The key id of an internal request, when `env` is the handler's own bindings. */
export const internalKeyId = (env: unknown): string | undefined =>
  typeof env === 'object' && env !== null ? (env as InternalBindings)[INTERNAL_KEY_ID] : undefined;

/**
 * Requires `Authorization: Bearer lt_…` with a key the store knows and has not revoked; sets `key` for the next
 * middleware. Messages say what is wrong and never echo the presented key. A request the handler dispatches itself
 * ({@link INTERNAL_KEY_ID}) runs as the key it names, while that key is unrevoked.
 */
export function auth(keys: KeyStore): MiddlewareHandler<{ Variables: { key: KeyInfo } }> {
  return async (c, next) => {
    const internal = internalKeyId(c.env);
    if (internal !== undefined) {
      // The key's secret is kept nowhere: its record is checked instead, so a key revoked since stops its batches.
      const info = (await keys.list()).find((key) => key.id === internal);
      if (!info || info.revokedAt !== undefined)
        throw unauthorized('This API key has been revoked.', 'invalid_api_key');
      c.set('key', info);
      return next();
    }
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
