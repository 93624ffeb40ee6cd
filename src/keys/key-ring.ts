import { generateKey, generateKeyId, hashKey, shownPrefix, timingSafeEqual } from './key-crypto.ts';
import type { IssuedKey, KeyCheck, KeyInfo, KeyStore } from './key-store.ts';

/** What is persisted for a key: its public record and the SHA-256 of the key, never the key. */
export interface KeyRecord {
  info: KeyInfo;
  hash: string;
}

/** Longest key name: a label for people, shown in lists; anything longer is a mistake (or an object stringified). */
export const MAX_KEY_NAME_LENGTH = 256;

/** Where a KeyRing keeps its records: memory here, IndexedDB in the browser. */
export interface KeyRecordStorage {
  all(): Promise<KeyRecord[]>;
  /** Inserts the record, or replaces the one with the same `info.id`. */
  put(record: KeyRecord): Promise<void>;
}

/** Records in a process's memory: gone when it ends. */
export function memoryKeyStorage(): KeyRecordStorage {
  const records = new Map<string, KeyRecord>();
  return {
    all: async () => [...records.values()].map((r) => ({ info: { ...r.info }, hash: r.hash })),
    put: async (record) => void records.set(record.info.id, { info: { ...record.info }, hash: record.hash }),
  };
}

/**
 * The key store: issues keys, keeps only their hashes in its storage, and checks presented keys.
 *
 * @example
 * const keys = new KeyRing(); // in memory
 * const { key } = await keys.issue('my app');
 * await keys.verify(key); // { ok: true, info: { id, name: 'my app', ... } }
 */
export class KeyRing implements KeyStore {
  readonly #storage: KeyRecordStorage;
  readonly #now: () => number;

  /**
   * @param options.storage - where records live (default: memory).
   * @param options.now - the clock in milliseconds since the epoch (default `Date.now`; injectable for tests).
   */
  constructor(options: { storage?: KeyRecordStorage; now?: () => number } = {}) {
    this.#storage = options.storage ?? memoryKeyStorage();
    this.#now = options.now ?? Date.now;
  }

  /**
   * Issues a key named `name` (1 to {@link MAX_KEY_NAME_LENGTH} characters).
   *
   * @throws TypeError when `name` is not a string; RangeError when it is empty or too long.
   */
  async issue(name = 'default'): Promise<IssuedKey> {
    if (typeof name !== 'string') {
      throw new TypeError(`A key's name must be a string, but got ${name === null ? 'null' : typeof name}.`);
    }
    if (name.length === 0 || name.length > MAX_KEY_NAME_LENGTH) {
      throw new RangeError(
        `A key's name must be 1 to ${MAX_KEY_NAME_LENGTH} characters long, but got ${name.length} characters.`,
      );
    }
    const key = generateKey();
    const info: KeyInfo = {
      id: generateKeyId(),
      name,
      prefix: shownPrefix(key),
      createdAt: Math.floor(this.#now() / 1000),
    };
    await this.#storage.put({ info, hash: await hashKey(key) });
    return { key, info };
  }

  async list(): Promise<KeyInfo[]> {
    return (await this.#storage.all()).map((r) => r.info);
  }

  async revoke(id: string): Promise<boolean> {
    const record = (await this.#storage.all()).find((r) => r.info.id === id);
    if (!record) return false;
    if (record.info.revokedAt === undefined) {
      await this.#storage.put({ ...record, info: { ...record.info, revokedAt: Math.floor(this.#now() / 1000) } });
    }
    return true;
  }

  async verify(key: string): Promise<KeyCheck> {
    // Hashing and reading the records overlap: both are on every request's way to its first token.
    const [hash, records] = await Promise.all([hashKey(key), this.#storage.all()]);
    // Compare with every record, each in constant time, so timing tells nothing about which stored hash came close.
    let match: KeyRecord | undefined;
    for (const record of records) if (timingSafeEqual(record.hash, hash)) match = record;
    if (!match) return { ok: false, reason: 'unknown' };
    if (match.info.revokedAt !== undefined) return { ok: false, reason: 'revoked' };
    return { ok: true, info: match.info };
  }
}
