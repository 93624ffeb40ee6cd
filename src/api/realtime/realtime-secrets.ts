import { base64url, hashKey, timingSafeEqual } from '../../keys/key-crypto.ts';
import type { RecordStore } from '../../record-store/index.ts';

/**
 * The Realtime API's short-lived credentials, kept per key in a record store (the service worker's IndexedDB, so that
 * they outlive a stopped or updated worker; memory in Node):
 * - a **client secret** (`ek_…`, `POST /v1/realtime/client_secrets`): what a browser app is given to open a call, as
 *   OpenAI's ephemeral keys are. It is bound to the key that minted it and to a session configuration, lives 10 s to 2
 *   hours (10 minutes by default), and opens calls only: `POST /v1/realtime/calls` and the WebSocket URL.
 * - a **call credential** (same shape): what the page that answers a call sends on the requests its session makes of
 *   the API (transcription, chat, speech), so that they run as the call's key, with its limits. It lives as long as
 *   the call, at most 60 minutes (as OpenAI's sessions), and is dropped at hangup.
 *
 * Only a hash of each is kept, as keys are. A secret names its key (`ek_<key id>.<random>`) so that it is found on its
 * key's shelf without an index across keys; the key id is not secret (it is in every list of keys). Every use also
 * needs the key itself unrevoked (auth checks it), so revoking a key ends its secrets and calls.
 */

export const SECRET_PREFIX = 'ek_';

/** Client secrets live 600 s unless `expires_after.seconds` says otherwise (10 to 7,200), as OpenAI's. */
export const CLIENT_SECRET_SECONDS = Object.freeze({ default: 600, min: 10, max: 7200 });

/** The longest a call lives: OpenAI ends a Realtime session after 60 minutes. */
export const MAX_CALL_MS = 60 * 60 * 1000;

/**
 * How many secrets a key keeps: the least recently minted leave first past these (a call's credential among them, so a
 * key that mints hundreds of secrets during a call ends it).
 */
export const REALTIME_SECRET_LIMITS = Object.freeze({ maxRecords: 512, maxBytes: 16 * 1024 * 1024 });

/** 32 random bytes, as an `lt_` key. */
const SECRET_BYTES = 32;

/** What a client secret was minted with: the configuration of the sessions it opens. */
export interface ClientSecretGrant {
  kind: 'client_secret';
  /** Milliseconds since the epoch. */
  expiresAt: number;
  /** The session configuration as given (the wire's `session` object), or undefined for the defaults. */
  session: unknown;
}

/** A live call's credential. */
export interface CallGrant {
  kind: 'call';
  callId: string;
  expiresAt: number;
}

/** The index from a call's id to its credential, for hangup. */
interface CallIndex {
  kind: 'call_index';
  credentialHash: string;
  expiresAt: number;
}

export type SecretRecord = ClientSecretGrant | CallGrant | CallIndex;

/** What a presented secret is: its key, and what it grants. */
export type SecretCheck =
  { ok: true; keyId: string; grant: ClientSecretGrant | CallGrant } | { ok: false; reason: 'unknown' | 'expired' };

/** The shape of a secret: `ek_`, the key id's base64url, a dot, 43 characters of base64url. Anything else is refused unread. */
const SECRET_SHAPE = /^ek_([A-Za-z0-9_-]{1,128})\.([A-Za-z0-9_-]{43})$/;

export const isSecretShaped = (value: string) => SECRET_SHAPE.test(value);

export class RealtimeSecrets {
  readonly #store: RecordStore<SecretRecord>;
  readonly #now: () => number;

  constructor(store: RecordStore<SecretRecord>, now: () => number) {
    this.#store = store;
    this.#now = now;
  }

  /** Mints a client secret of `keyId` for `session`, living `seconds`. */
  async mintClientSecret(
    keyId: string,
    session: unknown,
    seconds: number,
  ): Promise<{ value: string; expiresAt: number }> {
    const expiresAt = this.#now() + seconds * 1000;
    const value = newSecret(keyId);
    await this.#keep(keyId, 'ek:' + (await hashKey(value)), { kind: 'client_secret', expiresAt, session });
    return { value, expiresAt };
  }

  /** Opens a call of `keyId` (`rtc_…`, living {@link MAX_CALL_MS}): its id, its credential, and when it ends. */
  async openCall(keyId: string): Promise<{ id: string; credential: string; expiresAt: number }> {
    const id = 'rtc_' + crypto.randomUUID().replace(/-/g, '');
    const expiresAt = this.#now() + MAX_CALL_MS;
    const credential = newSecret(keyId);
    const credentialHash = await hashKey(credential);
    await this.#keep(keyId, 'call:' + credentialHash, { kind: 'call', callId: id, expiresAt });
    await this.#keep(keyId, id, { kind: 'call_index', credentialHash, expiresAt });
    return { id, credential, expiresAt };
  }

  /** What `value` grants, if it is a live secret of this store. */
  async verify(value: string): Promise<SecretCheck> {
    const match = SECRET_SHAPE.exec(value);
    const keyId = match && decodeKeyId(match[1]!);
    if (!keyId) return { ok: false, reason: 'unknown' };
    const hash = await hashKey(value);
    for (const id of ['ek:' + hash, 'call:' + hash]) {
      const record = await this.#store.get(keyId, id);
      if (!record || record.data.kind === 'call_index') continue;
      // The hash is the lookup key; comparing it again costs nothing and keeps the check independent of the store.
      if (!timingSafeEqual(id.slice(id.indexOf(':') + 1), hash)) continue;
      if (record.data.expiresAt <= this.#now()) {
        await this.#store.delete(keyId, id);
        return { ok: false, reason: 'expired' };
      }
      return { ok: true, keyId, grant: record.data };
    }
    return { ok: false, reason: 'unknown' };
  }

  /** Whether `keyId` has a live call `callId`. */
  async hasCall(keyId: string, callId: string): Promise<boolean> {
    const index = await this.#store.get(keyId, callId);
    return index?.data.kind === 'call_index' && index.data.expiresAt > this.#now();
  }

  /** Ends call `callId` of `keyId`: its credential stops working. False when the key has no such live call. */
  async endCall(keyId: string, callId: string): Promise<boolean> {
    const index = await this.#store.get(keyId, callId);
    if (index?.data.kind !== 'call_index') return false;
    await this.#store.delete(keyId, 'call:' + index.data.credentialHash);
    await this.#store.delete(keyId, callId);
    return index.data.expiresAt > this.#now();
  }

  async #keep(owner: string, id: string, data: SecretRecord): Promise<void> {
    const now = this.#now();
    const kept = await this.#store.put({ id, owner, createdAt: now, storedAt: now, data });
    if (!kept)
      throw new Error('A realtime secret could not be kept: its session configuration is over the store limit.');
  }
}

function newSecret(keyId: string): string {
  const id = base64url(new TextEncoder().encode(keyId));
  return `${SECRET_PREFIX}${id}.${base64url(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)))}`;
}

function decodeKeyId(encoded: string): string | undefined {
  try {
    const binary = atob(encoded.replace(/-/g, '+').replace(/_/g, '/'));
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)));
  } catch {
    return undefined;
  }
}
