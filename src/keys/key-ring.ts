import { localKeyChanges } from './key-changes.ts';
import { generateKey, generateKeyId, hashKey, shownPrefix, timingSafeEqual } from './key-crypto.ts';
import type { IssuedKey, KeyCheck, KeyInfo, KeyStore } from './key-store.ts';

/** What is persisted for a key: its public record and the SHA-256 of the key, never the key. */
export interface KeyRecord {
  info: KeyInfo;
  hash: string;
}

/** Longest key name: a label for people, shown in lists; anything longer is a mistake (or an object stringified). */
export const MAX_KEY_NAME_LENGTH = 256;

/**
 * How often a key's `lastUsedAt` is written, in seconds: at most once per key per interval, so that `verify` (on every
 * request) stays a read, and staleness is still known to the minute.
 */
export const LAST_USED_INTERVAL_S = 60;

/** Most keys held as verified: far more than the keys in use at once; past it, the longest held goes first. */
const MAX_VERIFIED_KEYS = 256;

/** Where a KeyRing keeps its records: memory here, IndexedDB in the browser. */
export interface KeyRecordStorage {
  all(): Promise<KeyRecord[]>;
  /** Inserts the record, or replaces the one with the same `info.id`. */
  put(record: KeyRecord): Promise<void>;
  /**
   * Reads the record `id` and writes what `change` makes of it (nothing when it returns undefined), in one atomic step:
   * a revocation and a use recorded at the same time, in two contexts, must not undo each other. Resolves with whether
   * the record exists. A change is announced to every context's KeyRing (`watch`) unless `options.unseen`: a change no
   * check depends on (a use recorded), so that recording one does not make every context read the records again.
   */
  update(
    id: string,
    change: (record: KeyRecord) => KeyRecord | undefined,
    options?: { unseen?: boolean },
  ): Promise<boolean>;
  /**
   * Calls `listener` after every write to the records, by this context or any other sharing them, and whenever they
   * may have changed unseen (the database deleted under this context); returns a function that stops the calls. A
   * KeyRing remembers the keys it verified only over a storage that has it: without it, every `verify` reads.
   */
  watch?(listener: () => void): () => void;
}

/** Records in a process's memory: gone when it ends. */
export function memoryKeyStorage(): KeyRecordStorage {
  const records = new Map<string, KeyRecord>();
  const changes = localKeyChanges();
  const copy = (r: KeyRecord): KeyRecord => ({ info: { ...r.info }, hash: r.hash });
  return {
    all: async () => [...records.values()].map(copy),
    put: async (record) => {
      records.set(record.info.id, copy(record));
      await changes.announce();
    },
    update: async (id, change, options) => {
      const record = records.get(id);
      if (!record) return false;
      const next = change(copy(record));
      if (next) {
        records.set(id, copy(next));
        if (!options?.unseen) await changes.announce();
      }
      return true;
    },
    watch: (listener) => changes.watch(listener),
  };
}

/**
 * Where `forApp` keeps each app's plaintext key between starts, by the key's name, so that the app finds its key
 * again instead of issuing a new one on every start: memory by default, localStorage in pages
 * (`localStorageAppKeys`).
 */
export interface AppKeyStorage {
  get(name: string): string | undefined;
  set(name: string, key: string): void;
}

/** App keys in this KeyRing's memory: one key per name for the life of the process. */
export function memoryAppKeys(): AppKeyStorage {
  const keys = new Map<string, string>();
  return { get: (name) => keys.get(name), set: (name, key) => void keys.set(name, key) };
}

/** Throws unless `name` can name a key: a string of 1 to {@link MAX_KEY_NAME_LENGTH} characters. */
function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string') {
    throw new TypeError(`A key's name must be a string, but got ${name === null ? 'null' : typeof name}.`);
  }
  if (name.length === 0 || name.length > MAX_KEY_NAME_LENGTH) {
    throw new RangeError(
      `A key's name must be 1 to ${MAX_KEY_NAME_LENGTH} characters long, but got ${name.length} characters.`,
    );
  }
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
  readonly #appKeys: AppKeyStorage;
  readonly #now: () => number;
  /** Key id → its `lastUsedAt` write in flight: concurrent requests with one key write it once. */
  readonly #touches = new Map<string, Promise<unknown>>();
  /** App name → its `forApp` call in flight, where there are no Web Locks (Node): one key per name, not one per call. */
  readonly #forApps = new Map<string, Promise<IssuedKey>>();
  /**
   * Presented key → its record as verified, and until when it is accepted from memory: the key itself, kept only in
   * this context's memory, as the request that presented it was. Absent over a storage that cannot tell of changes.
   */
  readonly #verified: Map<string, { info: KeyInfo; until: number }> | undefined;
  /** Counts the change notices: a verification that read the records before one must not be remembered after it. */
  #generation = 0;

  /**
   * @param options.storage - where records live (default: memory).
   * @param options.appKeys - where `forApp` keeps each app's plaintext key (default: memory).
   * @param options.now - the clock in milliseconds since the epoch (default `Date.now`; injectable for tests).
   */
  constructor(options: { storage?: KeyRecordStorage; appKeys?: AppKeyStorage; now?: () => number } = {}) {
    this.#storage = options.storage ?? memoryKeyStorage();
    this.#appKeys = options.appKeys ?? memoryAppKeys();
    this.#now = options.now ?? Date.now;
    if (this.#storage.watch) {
      this.#verified = new Map();
      this.#storage.watch(() => this.#forget());
    }
  }

  /** Forgets every key verified so far: the records changed, here or in another context. */
  #forget(): void {
    this.#generation++;
    this.#verified?.clear();
  }

  /**
   * Issues a key named `name` (1 to {@link MAX_KEY_NAME_LENGTH} characters).
   *
   * @throws TypeError when `name` is not a string; RangeError when it is empty or too long.
   */
  async issue(name = 'default'): Promise<IssuedKey> {
    checkName(name);
    const key = generateKey();
    const info: KeyInfo = {
      id: generateKeyId(),
      name,
      prefix: shownPrefix(key),
      createdAt: this.#seconds(),
    };
    await this.#storage.put({ info, hash: await hashKey(key) });
    return { key, info };
  }

  /**
   * The key of the app `name`: the one kept by an earlier call (in this ring's `appKeys`: localStorage in a page) while
   * it is still accepted, otherwise a new key, issued and kept for the next call. So an app that calls this on every
   * start uses one key, and gets a fresh one after its key was revoked or the keys were cleared. Calls for one name are
   * taken one at a time (across the tabs of an origin, with Web Locks), so two tabs opening at once share one key.
   *
   * @throws TypeError when `name` is not a string; RangeError when it is empty or too long.
   */
  async forApp(name: string): Promise<IssuedKey> {
    checkName(name);
    const locks = (globalThis.navigator as Navigator | undefined)?.locks;
    if (locks) return locks.request(`lantern:app-key:${name}`, () => this.#forApp(name));
    const call = (this.#forApps.get(name) ?? Promise.resolve())
      .catch(() => undefined) // the previous call's failure is its caller's
      .then(() => this.#forApp(name));
    this.#forApps.set(name, call);
    try {
      return await call;
    } finally {
      if (this.#forApps.get(name) === call) this.#forApps.delete(name);
    }
  }

  async #forApp(name: string): Promise<IssuedKey> {
    const kept = this.#appKeys.get(name);
    if (kept !== undefined) {
      const check = await this.verify(kept);
      if (check.ok) return { key: kept, info: check.info };
    }
    const issued = await this.issue(name);
    this.#appKeys.set(name, issued.key);
    return issued;
  }

  async list(): Promise<KeyInfo[]> {
    return (await this.#storage.all()).map((r) => r.info);
  }

  async revoke(id: string): Promise<boolean> {
    const at = this.#seconds();
    try {
      return await this.#storage.update(id, (record) =>
        record.info.revokedAt === undefined ? { ...record, info: { ...record.info, revokedAt: at } } : undefined,
      );
    } finally {
      this.#forget(); // the storage's notice does it too; this ring's own memory must not depend on that
    }
  }

  /**
   * Revokes every valid key not used since `since` (its `lastUsedAt`, or its `createdAt` for a key never used), and
   * returns their records as revoked. `lastUsedAt` may be up to a minute behind, so keep `since` well in the past.
   *
   * @example
   * await lantern.keys.revokeUnusedSince(new Date(Date.now() - 30 * 24 * 3600 * 1000)); // unused for 30 days
   * @throws TypeError when `since` is not a valid Date.
   */
  async revokeUnusedSince(since: Date): Promise<KeyInfo[]> {
    if (!(since instanceof Date) || Number.isNaN(since.getTime())) {
      throw new TypeError('revokeUnusedSince takes a valid Date: keys not used since then are revoked.');
    }
    const cutoff = since.getTime() / 1000;
    const stale = (info: KeyInfo) => info.revokedAt === undefined && (info.lastUsedAt ?? info.createdAt) < cutoff;
    const at = this.#seconds();
    const revoked: KeyInfo[] = [];
    for (const { id } of (await this.list()).filter(stale)) {
      // Judged again inside the update: a key used since the list was read stays valid.
      await this.#storage.update(id, (record) => {
        if (!stale(record.info)) return undefined;
        const info = { ...record.info, revokedAt: at };
        revoked.push(info);
        return { ...record, info };
      });
    }
    if (revoked.length) this.#forget();
    return revoked;
  }

  /**
   * Checks a presented key. A key found valid is remembered, so that the next requests with it skip its SHA-256 and
   * the read of the records (2.9 ms of the service worker's time per request, issue 26), until any change to the
   * records (a revocation anywhere: see {@link KeyRecordStorage.watch}), and at most until its use is due to be written
   * again ({@link LAST_USED_INTERVAL_S}): that also bounds what a notice that never came (a write by an older Lantern in
   * another tab) lets through to the minute that `lastUsedAt` may lag by.
   */
  async verify(key: string): Promise<KeyCheck> {
    const nowMs = this.#now();
    const held = this.#verified?.get(key);
    if (held) {
      if (nowMs < held.until) return { ok: true, info: { ...held.info } };
      this.#verified!.delete(key);
    }
    const generation = this.#generation;
    const check = await this.#verifyFromRecords(key);
    // Remembered only when no change was heard while reading: a revocation committed meanwhile may not have been seen.
    if (check.ok && this.#verified && generation === this.#generation) {
      if (!this.#verified.has(key) && this.#verified.size >= MAX_VERIFIED_KEYS)
        this.#verified.delete(this.#verified.keys().next().value!);
      const lastUse = (check.info.lastUsedAt ?? Math.floor(nowMs / 1000)) * 1000;
      this.#verified.set(key, { info: { ...check.info }, until: lastUse + LAST_USED_INTERVAL_S * 1000 });
    }
    return check;
  }

  async #verifyFromRecords(key: string): Promise<KeyCheck> {
    // Hashing and reading the records overlap: both are on every request's way to its first token.
    const [hash, records] = await Promise.all([hashKey(key), this.#storage.all()]);
    // Compare with every record, each in constant time, so timing tells nothing about which stored hash came close.
    let match: KeyRecord | undefined;
    for (const record of records) if (timingSafeEqual(record.hash, hash)) match = record;
    if (!match) return { ok: false, reason: 'unknown' };
    if (match.info.revokedAt !== undefined) return { ok: false, reason: 'revoked' };
    const now = this.#seconds();
    if (!due(match.info, now)) return { ok: true, info: match.info };
    await this.#touch(match.info.id, now);
    return { ok: true, info: { ...match.info, lastUsedAt: now } };
  }

  /** Records a use of key `id` at `now`, once however many requests ask at the same time. */
  #touch(id: string, now: number): Promise<unknown> {
    const pending = this.#touches.get(id);
    if (pending) return pending;
    const write = this.#storage
      .update(
        id,
        (record) => (due(record.info, now) ? { ...record, info: { ...record.info, lastUsedAt: now } } : undefined),
        { unseen: true },
      )
      // Best effort: a full or failing database must not refuse a valid key; the use is recorded on a later request.
      .catch(() => false)
      .finally(() => this.#touches.delete(id));
    this.#touches.set(id, write);
    return write;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }
}

/** Whether a key's last use is old enough (or unknown) to be written again at `now`. */
function due(info: KeyInfo, now: number): boolean {
  return info.lastUsedAt === undefined || now - info.lastUsedAt >= LAST_USED_INTERVAL_S;
}
