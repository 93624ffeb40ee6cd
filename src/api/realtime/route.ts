import type { Context } from 'hono';
import { ApiError, invalidRequest } from '../errors.ts';
import { formText, readForm } from '../multipart.ts';
import { parseJsonObject } from '../request-body.ts';
import type { Env } from '../route-deps.ts';
import type { RealtimeCallAnswerer } from '../options.ts';
import { CLIENT_SECRET_SECONDS, type RealtimeSecrets } from './realtime-secrets.ts';

/** The model a session names when it names none: OpenAI's current Realtime model name (an alias of a chat model). */
export const DEFAULT_REALTIME_MODEL = 'gpt-realtime';

/** An SDP offer is a few kilobytes; one over this is not an offer a browser made. */
const MAX_SDP_BYTES = 64 * 1024;
/** A session configuration (instructions, tools) kept with a client secret: large tool lists fit, a flood does not. */
const MAX_SESSION_BYTES = 256 * 1024;

export interface RealtimeRouteDeps {
  secrets: RealtimeSecrets;
  /** Answers WebRTC offers (the service worker's page peer); absent in Node, where calls are WebSockets. */
  answerer: RealtimeCallAnswerer | undefined;
}

/** What `GET /v1/realtime`'s answer gives the WebSocket of a client secret: see `websocketOnly`. */
export interface WebSocketCall {
  id: string;
  credential: string;
  model: string;
  session: unknown;
}

const callNotFound = (id: string) =>
  new ApiError(404, `No live call with id '${id}' was found.`, { param: 'call_id', code: 'not_found' });

/**
 * The Realtime API's HTTP routes: client secrets (`ek_…`) for browser apps, WebRTC calls answered by a Lantern peer in
 * the calling page, and hangup. The session itself (its events, audio and models) is src/realtime/'s; a call is only
 * its credentials and the page that answers it, so these routes run no model.
 */
export function realtimeRoutes({ secrets, answerer }: RealtimeRouteDeps) {
  const keyId = (c: Context<Env>) => c.get('key').id;

  return {
    /** `POST /v1/realtime/client_secrets`: a secret that opens calls as this key, with this session configuration. */
    createClientSecret: async (c: Context<Env>) => {
      if (c.get('realtimeGrant')) {
        throw new ApiError(401, 'A client secret is minted with an API key (lt_…), not with another secret.', {
          code: 'invalid_api_key',
        });
      }
      const bytes = c.get('body');
      const body = bytes.byteLength === 0 ? {} : parseJsonObject(bytes);
      const seconds = readExpiry(body['expires_after']);
      const session = readSession(body['session'], 'session');
      const { value, expiresAt } = await secrets.mintClientSecret(keyId(c), session, seconds);
      return c.json({
        value,
        expires_at: Math.floor(expiresAt / 1000),
        session: sessionObject(session),
      });
    },

    /**
     * `POST /v1/realtime/calls`: the client's SDP offer (`application/sdp`, or a form with `sdp` and `session`), answered
     * by a Lantern peer in the page that made the request, which runs the session. `201 Created`, the answer's SDP, and
     * `Location: /v1/realtime/calls/rtc_…`, as OpenAI's.
     */
    createCall: async (c: Context<Env>) => {
      if (!answerer) {
        throw invalidRequest(
          'WebRTC calls are answered by a Lantern page (startLocalAPI() in the browser); this server takes the Realtime ' +
            'API as a WebSocket: connect to /v1/realtime?model=… instead.',
          null,
          'webrtc_unavailable',
        );
      }
      const grant = c.get('realtimeGrant');
      const { offer, session: given } = await readOffer(c);
      // A client secret's session is the call's unless the form gives one; an API key's calls start from the defaults.
      const session = given ?? (grant?.kind === 'client_secret' ? grant.session : undefined);
      const { id, credential, expiresAt } = await secrets.openCall(keyId(c));
      let sdp: string;
      try {
        sdp = await answerer.answer(
          { id, offer, model: sessionModel(session), session, credential, expiresAt },
          c.req.raw,
        );
      } catch (error) {
        await secrets.endCall(keyId(c), id);
        throw new ApiError(500, `The call could not be answered: ${(error as Error).message}`, {
          code: 'call_not_answered',
          cause: error,
        });
      }
      return c.body(sdp, 201, { 'content-type': 'application/sdp', location: `/v1/realtime/calls/${id}` });
    },

    /** `POST /v1/realtime/calls/{id}/hangup`: ends the call; its page closes the peer. Another key's call is a 404. */
    hangup: async (c: Context<Env>) => {
      const id = c.req.param('id')!;
      const grant = c.get('realtimeGrant');
      // A call's credential hangs up its own call; it has never heard of the key's others.
      if (grant?.kind === 'call' && grant.callId !== id) throw callNotFound(id);
      if (!(await secrets.endCall(keyId(c), id))) throw callNotFound(id);
      await answerer?.hangup?.(id);
      return c.body(null, 200);
    },

    /**
     * `GET /v1/realtime`: the WebSocket URL (src/node/ upgrades it once this answer says the credential was accepted).
     * A request that is not an upgrade is told so. Presented a client secret, the answer also carries the socket's
     * call, as `POST /v1/realtime/calls` makes one: the secret's session and model, and the credential its session's
     * requests run with (a client secret itself opens calls only).
     */
    websocketOnly: async (c: Context<Env>) => {
      const error = new ApiError(426, 'The Realtime API takes GET /v1/realtime as a WebSocket only.', {
        code: 'websocket_upgrade_required',
      });
      const grant = c.get('realtimeGrant');
      if (grant?.kind !== 'client_secret') throw error;
      const { id, credential } = await secrets.openCall(keyId(c));
      const call: WebSocketCall = { id, credential, model: sessionModel(grant.session), session: grant.session };
      return c.json({ ...error.body(), call }, 426);
    },
  };
}

function readExpiry(value: unknown): number {
  if (value === undefined || value === null) return CLIENT_SECRET_SECONDS.default;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest('`expires_after` must be an object: {"anchor": "created_at", "seconds": …}.', 'expires_after');
  }
  const { anchor, seconds } = value as Record<string, unknown>;
  if (anchor !== undefined && anchor !== 'created_at') {
    throw invalidRequest('`expires_after.anchor` must be "created_at".', 'expires_after.anchor');
  }
  if (seconds === undefined) return CLIENT_SECRET_SECONDS.default;
  const { min, max } = CLIENT_SECRET_SECONDS;
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < min || seconds > max) {
    throw invalidRequest(
      `\`expires_after.seconds\` must be a whole number from ${min} to ${max}.`,
      'expires_after.seconds',
    );
  }
  return seconds;
}

/** A session configuration as given: an object of a Realtime session (checked whole when the session opens). */
function readSession(value: unknown, param: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest(`\`${param}\` must be an object: a Realtime session configuration.`, param);
  }
  const session = value as Record<string, unknown>;
  if (session['type'] === 'transcription') {
    throw invalidRequest(
      'Transcription sessions are not served here; use a realtime session (type "realtime") with ' +
        '`audio.input.transcription`, or POST /v1/audio/transcriptions.',
      `${param}.type`,
      'unsupported_session_type',
    );
  }
  if (session['type'] !== undefined && session['type'] !== 'realtime') {
    throw invalidRequest('`type` must be "realtime".', `${param}.type`);
  }
  if (session['model'] !== undefined && typeof session['model'] !== 'string') {
    throw invalidRequest('`model` must be a string.', `${param}.model`);
  }
  if (new TextEncoder().encode(JSON.stringify(session)).length > MAX_SESSION_BYTES) {
    throw invalidRequest(`\`${param}\` is over ${MAX_SESSION_BYTES / 1024} KiB.`, param);
  }
  return session;
}

const sessionModel = (session: unknown) => {
  const model = (session as Record<string, unknown> | undefined)?.['model'];
  return typeof model === 'string' ? model : DEFAULT_REALTIME_MODEL;
};

/** The session a client secret answers with: as given, with its type, object and model. */
const sessionObject = (session: Record<string, unknown> | undefined) => ({
  type: 'realtime',
  object: 'realtime.session',
  id: 'sess_' + crypto.randomUUID().replace(/-/g, ''),
  ...session,
  model: sessionModel(session),
});

async function readOffer(c: Context<Env>): Promise<{ offer: string; session: Record<string, unknown> | undefined }> {
  const bytes = c.get('body');
  const type = c.req.header('content-type') ?? '';
  let offer: string | undefined;
  let session: Record<string, unknown> | undefined;
  if (/^multipart\/form-data/i.test(type)) {
    const form = await readForm(c.req.raw, bytes, 'Realtime calls');
    offer = formText(form, 'sdp');
    const text = formText(form, 'session');
    if (text !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw invalidRequest('The `session` field must be JSON: a Realtime session configuration.', 'session');
      }
      session = readSession(parsed, 'session');
    }
  } else if (/^application\/sdp/i.test(type)) {
    offer = new TextDecoder().decode(bytes);
  } else {
    throw invalidRequest(
      'A call takes its SDP offer as `application/sdp`, or as the `sdp` field of a `multipart/form-data` form.',
      null,
      'unsupported_content_type',
    );
  }
  if (offer === undefined || offer.trim() === '') throw invalidRequest('The SDP offer is missing.', 'sdp');
  if (new TextEncoder().encode(offer).length > MAX_SDP_BYTES) {
    throw invalidRequest(`The SDP offer is over ${MAX_SDP_BYTES / 1024} KiB.`, 'sdp');
  }
  if (!/^v=0\r?\n/.test(offer) || !/^m=audio /m.test(offer)) {
    throw invalidRequest('The SDP offer must be a session description (v=0) with an audio track (m=audio).', 'sdp');
  }
  return { offer, session };
}
