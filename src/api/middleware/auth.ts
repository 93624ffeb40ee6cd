import type { MiddlewareHandler } from 'hono';
import { KEY_PREFIX, type KeyInfo, type KeyStore } from '../../keys/index.ts';
import { ApiError } from '../errors.ts';
import {
  isSecretShaped,
  SECRET_PREFIX,
  type CallGrant,
  type ClientSecretGrant,
  type RealtimeSecrets,
} from '../realtime/realtime-secrets.ts';

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
export function auth(
  keys: KeyStore,
  secrets?: RealtimeSecrets,
): MiddlewareHandler<{ Variables: { key: KeyInfo; realtimeGrant?: ClientSecretGrant | CallGrant } }> {
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
    if (secrets && key.startsWith(SECRET_PREFIX)) {
      const { info, grant } = await realtimeSecret(keys, secrets, key, c.req.method, c.req.path);
      c.set('key', info);
      c.set('realtimeGrant', grant);
      return next();
    }
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

/** What each kind of Realtime secret may call: a client secret opens calls; a call's credential runs its models. */
const SECRET_ROUTES: Record<'client_secret' | 'call', readonly string[]> = {
  client_secret: ['POST /v1/realtime/calls', 'GET /v1/realtime'],
  call: [
    'POST /v1/audio/transcriptions',
    'POST /v1/chat/completions',
    'POST /v1/audio/speech',
    'GET /v1/models',
    // Its own call only (the route checks): the answering page ends the call when its peer goes.
    'POST /v1/realtime/calls/{id}/hangup',
  ],
};

/** The key a Realtime secret (`ek_…`) stands for, if the secret is live, allows this route, and its key is unrevoked. */
async function realtimeSecret(keys: KeyStore, secrets: RealtimeSecrets, value: string, method: string, path: string) {
  const check = isSecretShaped(value) ? await secrets.verify(value) : ({ ok: false, reason: 'unknown' } as const);
  if (!check.ok) {
    throw unauthorized(
      check.reason === 'expired'
        ? 'This client secret has expired: mint another with POST /v1/realtime/client_secrets.'
        : 'Incorrect client secret provided.',
      'invalid_api_key',
    );
  }
  const routes = SECRET_ROUTES[check.grant.kind];
  const route = `${method} ${path.replace(/\/+$/, '').replace(/^\/v1\/realtime\/calls\/[^/]+\/hangup$/, '/v1/realtime/calls/{id}/hangup')}`;
  if (!routes.includes(route)) {
    const what = check.grant.kind === 'client_secret' ? 'A client secret' : "A call's credential";
    throw unauthorized(
      `${what} (ek_…) is accepted only by ${routes.join(', ')}; send an API key (lt_…).`,
      'invalid_api_key',
    );
  }
  const info = (await keys.list()).find((key) => key.id === check.keyId);
  if (!info || info.revokedAt !== undefined) {
    throw unauthorized('The API key this client secret was minted with has been revoked.', 'invalid_api_key');
  }
  return { info, grant: check.grant };
}
