/**
 * API keys: `lt_` followed by 256 random bits. A store keeps only each key's SHA-256 hash, so a leaked store does not
 * leak keys, and a key is shown exactly once, when it is issued.
 */

/** What a store knows of a key: never the key itself. */
export interface KeyInfo {
  /** Stable identifier of the key, safe to show and log (`key_…`). */
  id: string;
  /** A human label given at issue time. */
  name: string;
  /** The first characters of the key (`lt_AbC1…`), enough for a person to recognise it. */
  prefix: string;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds; absent while the key is valid. */
  revokedAt?: number;
  /**
   * Unix seconds of the last time the key was accepted; absent until its first use. Written at most once a minute per
   * key (so that checking a key stays a read on nearly every request): it may be up to a minute behind.
   */
  lastUsedAt?: number;
}

/** The answer to `issue`: the plaintext key, which nobody can recover later. */
export interface IssuedKey {
  key: string;
  info: KeyInfo;
}

/** The outcome of checking a presented key: the key's record, or why it is refused. */
export type KeyCheck = { ok: true; info: KeyInfo } | { ok: false; reason: 'unknown' | 'revoked' };

/**
 * Where keys live. The handler only calls `verify`; `issue`, `list` and `revoke` are the administrator's.
 *
 * @example
 * const keys = new MemoryKeyStore();
 * const { key } = await keys.issue('my app');
 * await keys.verify(key); // { ok: true, info: { id, name: 'my app', ... } }
 */
export interface KeyStore {
  issue(name?: string): Promise<IssuedKey>;
  list(): Promise<KeyInfo[]>;
  /** Returns false when no such key exists. Revoking twice is harmless. */
  revoke(id: string): Promise<boolean>;
  verify(key: string): Promise<KeyCheck>;
}
