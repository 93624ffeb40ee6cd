import { describe, expect, it } from 'vitest';
import { timingSafeEqual } from './key-crypto.ts';
import {
  KeyRing,
  LAST_USED_INTERVAL_S,
  MAX_KEY_NAME_LENGTH,
  memoryAppKeys,
  memoryKeyStorage,
  type KeyRecord,
  type KeyRecordStorage,
} from './key-ring.ts';

describe('KeyRing', () => {
  it('issues lt_ keys with at least 128 random bits, shown once and stored only as a hash', async () => {
    const storage = memoryKeyStorage();
    const ring = new KeyRing({ storage, now: () => 1_700_000_000_000 });
    const { key, info } = await ring.issue('my app');
    expect(key).toMatch(/^lt_[A-Za-z0-9_-]{43}$/); // 256 bits of base64url
    expect(info).toMatchObject({ name: 'my app', createdAt: 1_700_000_000 });
    expect(info.prefix).toBe(key.slice(0, 9) + '…');

    const stored: KeyRecord[] = await storage.all();
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(key.slice(3));
    expect(stored[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(await ring.list()).toEqual([info]);
  });

  it('never issues the same key twice', async () => {
    const ring = new KeyRing();
    const keys = await Promise.all(Array.from({ length: 50 }, () => ring.issue()));
    expect(new Set(keys.map((k) => k.key)).size).toBe(50);
    expect(new Set(keys.map((k) => k.info.id)).size).toBe(50);
  });

  it('verifies known keys, refuses unknown ones, and refuses revoked ones from then on', async () => {
    const ring = new KeyRing();
    const a = await ring.issue('a');
    const b = await ring.issue('b');
    expect(await ring.verify(a.key)).toEqual({ ok: true, info: { ...a.info, lastUsedAt: expect.any(Number) } });
    expect(await ring.verify(a.key.slice(0, -1) + (a.key.endsWith('A') ? 'B' : 'A'))).toEqual({
      ok: false,
      reason: 'unknown',
    });

    expect(await ring.revoke(a.info.id)).toBe(true);
    expect(await ring.revoke(a.info.id)).toBe(true);
    expect(await ring.revoke('key_nope')).toBe(false);
    expect(await ring.verify(a.key)).toEqual({ ok: false, reason: 'revoked' });
    expect((await ring.verify(b.key)).ok).toBe(true);
    expect((await ring.list()).find((k) => k.id === a.info.id)?.revokedAt).toBeTypeOf('number');
  });
});

describe('KeyRing.issue', () => {
  it('refuses a name that is not a string, empty or over-long, storing nothing', async () => {
    const storage = memoryKeyStorage();
    const ring = new KeyRing({ storage });
    const issue = ring.issue.bind(ring) as (name?: unknown) => Promise<unknown>;
    await expect(issue({ name: 'my app' })).rejects.toThrow(
      new TypeError("A key's name must be a string, but got object."),
    );
    await expect(issue(42)).rejects.toBeInstanceOf(TypeError);
    await expect(issue(null)).rejects.toThrow(/but got null/);
    await expect(issue('')).rejects.toBeInstanceOf(RangeError);
    await expect(issue('x'.repeat(MAX_KEY_NAME_LENGTH + 1))).rejects.toThrow(
      new RangeError(`A key's name must be 1 to 256 characters long, but got 257 characters.`),
    );
    expect(await storage.all()).toEqual([]);
    expect((await ring.issue('x'.repeat(MAX_KEY_NAME_LENGTH))).info.name).toHaveLength(256);
    expect((await ring.issue()).info.name).toBe('default');
  });
});

/** A clock the test moves: milliseconds, as `Date.now`. */
function clock(start = 1_700_000_000_000) {
  const time = { now: start };
  return { time, now: () => time.now, advance: (seconds: number) => void (time.now += seconds * 1000) };
}

/** Memory storage that counts its writes: `verify` must stay a read on nearly every request. */
function countingStorage() {
  const inner = memoryKeyStorage();
  const writes = { count: 0 };
  const storage: KeyRecordStorage = {
    all: () => inner.all(),
    put: (record) => (writes.count++, inner.put(record)),
    update: (id, change) =>
      inner.update(id, (record) => {
        const next = change(record);
        if (next) writes.count++;
        return next;
      }),
  };
  return { storage, writes };
}

describe('KeyRing: when each key was last used', () => {
  it('records lastUsedAt on verify, written at most once a minute per key', async () => {
    const { storage, writes } = countingStorage();
    const { now, advance } = clock();
    const ring = new KeyRing({ storage, now });
    const { key, info } = await ring.issue('app');
    expect(info.lastUsedAt).toBeUndefined(); // never used yet
    const issuedAt = info.createdAt;
    writes.count = 0;

    advance(5);
    expect(await ring.verify(key)).toEqual({ ok: true, info: { ...info, lastUsedAt: issuedAt + 5 } });
    expect((await ring.list())[0]!.lastUsedAt).toBe(issuedAt + 5);
    // Ten requests within the minute, some at once: not one more write.
    advance(LAST_USED_INTERVAL_S - 1);
    await Promise.all(Array.from({ length: 5 }, () => ring.verify(key)));
    for (let i = 0; i < 5; i++) await ring.verify(key);
    expect(writes.count).toBe(1);
    expect((await ring.list())[0]!.lastUsedAt).toBe(issuedAt + 5);

    // A minute after the last write: written again, once, however many requests arrive together.
    advance(1);
    await Promise.all(Array.from({ length: 5 }, () => ring.verify(key)));
    expect(writes.count).toBe(2);
    expect((await ring.list())[0]!.lastUsedAt).toBe(issuedAt + 5 + LAST_USED_INTERVAL_S);
  });

  it('never records a use of an unknown or revoked key, and a use recorded while it is revoked keeps it revoked', async () => {
    const inner = memoryKeyStorage();
    let revokeDuringRead: (() => Promise<unknown>) | undefined;
    // The service worker reads the records, then a page revokes the key, then the service worker records the use.
    const storage: KeyRecordStorage = {
      ...inner,
      all: async () => {
        const records = await inner.all();
        const revoke = revokeDuringRead;
        revokeDuringRead = undefined;
        await revoke?.();
        return records;
      },
    };
    const ring = new KeyRing({ storage });
    const { key, info } = await ring.issue('app');
    revokeDuringRead = () => ring.revoke(info.id);
    expect((await ring.verify(key)).ok).toBe(true); // it was valid when read
    const [record] = await ring.list();
    expect(record!.revokedAt).toBeTypeOf('number'); // the use did not write back the record as it was read
    expect(await ring.verify(key)).toEqual({ ok: false, reason: 'revoked' });

    expect(await ring.verify('lt_' + 'x'.repeat(43))).toEqual({ ok: false, reason: 'unknown' });
    expect((await ring.list()).map((k) => k.id)).toEqual([info.id]);
  });

  it('still accepts a valid key when recording its use fails', async () => {
    const inner = memoryKeyStorage();
    const storage: KeyRecordStorage = {
      ...inner,
      update: async () => {
        throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      },
    };
    const ring = new KeyRing({ storage });
    const { key } = await ring.issue('app');
    expect(await ring.verify(key)).toMatchObject({ ok: true });
  });
});

/** Memory storage that counts its reads: a key remembered as verified is answered without one. */
function readCountingStorage() {
  const inner = memoryKeyStorage();
  const reads = { count: 0 };
  const storage: KeyRecordStorage = { ...inner, all: () => (reads.count++, inner.all()) };
  return { storage, reads };
}

describe('KeyRing: keys remembered as verified (issue 26)', () => {
  it('answers a verified key from memory, and refuses it at once when this ring revokes it', async () => {
    const { storage, reads } = readCountingStorage();
    const ring = new KeyRing({ storage });
    const { key, info } = await ring.issue('app');
    expect((await ring.verify(key)).ok).toBe(true);
    const before = reads.count;
    for (let i = 0; i < 5; i++) expect(await ring.verify(key)).toMatchObject({ ok: true, info: { id: info.id } });
    expect(reads.count).toBe(before); // neither hashed nor read again

    await ring.revoke(info.id);
    expect(await ring.verify(key)).toEqual({ ok: false, reason: 'revoked' });
  });

  it('refuses at once a key that another ring over the same records revokes, or that revokeUnusedSince revokes', async () => {
    const { now, advance } = clock();
    const storage = memoryKeyStorage();
    const worker = new KeyRing({ storage, now });
    const page = new KeyRing({ storage, now });
    const a = await page.issue('a');
    const b = await page.issue('b');
    expect((await worker.verify(a.key)).ok).toBe(true);
    expect((await worker.verify(b.key)).ok).toBe(true);

    await page.revoke(a.info.id);
    expect(await worker.verify(a.key)).toEqual({ ok: false, reason: 'revoked' });
    expect((await worker.verify(b.key)).ok).toBe(true);

    advance(30);
    await page.revokeUnusedSince(new Date(now()));
    expect(await worker.verify(b.key)).toEqual({ ok: false, reason: 'revoked' });
  });

  it('reads the record again once the use is due to be written, and never remembers a refusal', async () => {
    const { storage, reads } = readCountingStorage();
    const { now, advance } = clock();
    const ring = new KeyRing({ storage, now });
    const { key } = await ring.issue('app');
    const first = await ring.verify(key);
    expect(first.ok).toBe(true);
    const usedAt = first.ok ? first.info.lastUsedAt! : 0;
    const before = reads.count;
    advance(LAST_USED_INTERVAL_S - 1);
    await ring.verify(key);
    expect(reads.count).toBe(before);
    advance(1);
    expect(await ring.verify(key)).toMatchObject({ ok: true, info: { lastUsedAt: usedAt + LAST_USED_INTERVAL_S } });
    expect(reads.count).toBe(before + 1);

    const unknown = 'lt_' + 'x'.repeat(43);
    await ring.verify(unknown);
    await ring.verify(unknown);
    expect(reads.count).toBe(before + 3);
    expect((await ring.verify(key)).ok).toBe(true);
    expect(reads.count).toBe(before + 3);
  });

  it('reads on every request over a storage that cannot tell of changes', async () => {
    const { storage, reads } = readCountingStorage();
    const { watch: _, ...blind } = storage;
    const ring = new KeyRing({ storage: blind });
    const { key } = await ring.issue('app');
    await ring.verify(key);
    await ring.verify(key);
    expect(reads.count).toBe(2);
  });
});

describe('KeyRing.revokeUnusedSince', () => {
  it('revokes the valid keys unused since a date (never used: since created), and returns them', async () => {
    const { now, advance } = clock();
    const ring = new KeyRing({ now });
    const since = new Date(now());
    const old = await ring.issue('old, never used');
    const usedLongAgo = await ring.issue('used long ago');
    const alreadyRevoked = await ring.issue('already revoked');
    await ring.revoke(alreadyRevoked.info.id);
    advance(10);
    await ring.verify(usedLongAgo.key);
    advance(3600);
    const recent = await ring.issue('recent, never used');
    const active = await ring.issue('active');
    await ring.verify(active.key);
    const oldAlreadyRevokedAt = (await ring.list()).find((k) => k.id === alreadyRevoked.info.id)!.revokedAt;

    advance(60);
    const cutoff = new Date(since.getTime() + 1800 * 1000); // half an hour after the first three were issued
    const revoked = await ring.revokeUnusedSince(cutoff);
    expect(revoked.map((k) => k.name).sort()).toEqual(['old, never used', 'used long ago']);
    expect(revoked.every((k) => k.revokedAt === Math.floor(now() / 1000))).toBe(true);
    expect(await ring.verify(old.key)).toEqual({ ok: false, reason: 'revoked' });
    expect(await ring.verify(usedLongAgo.key)).toEqual({ ok: false, reason: 'revoked' });
    expect((await ring.verify(recent.key)).ok).toBe(true);
    expect((await ring.verify(active.key)).ok).toBe(true);
    // A key revoked before keeps its revocation time.
    expect((await ring.list()).find((k) => k.id === alreadyRevoked.info.id)!.revokedAt).toBe(oldAlreadyRevokedAt);
    expect(await ring.revokeUnusedSince(cutoff)).toEqual([]);
  });

  it('refuses anything but a valid Date', async () => {
    const ring = new KeyRing();
    await ring.issue('app');
    const revokeUnusedSince = ring.revokeUnusedSince.bind(ring) as (since: unknown) => Promise<unknown>;
    for (const since of [Date.now(), '2024-01-01', new Date('not a date'), undefined]) {
      await expect(revokeUnusedSince(since)).rejects.toBeInstanceOf(TypeError);
    }
    expect((await ring.list())[0]!.revokedAt).toBeUndefined();
  });
});

describe('KeyRing.forApp', () => {
  it("returns the app's kept key while it is accepted, in this ring and in the next one (a reload)", async () => {
    const storage = memoryKeyStorage();
    const appKeys = memoryAppKeys();
    const first = await new KeyRing({ storage, appKeys }).forApp('my app');
    expect(first.key).toMatch(/^lt_/);
    expect(first.info.name).toBe('my app');
    const again = await new KeyRing({ storage, appKeys }).forApp('my app');
    expect(again.key).toBe(first.key);
    expect(again.info.id).toBe(first.info.id);
    expect((await storage.all()).map((r) => r.info.id)).toEqual([first.info.id]); // one key, however many starts
    // Another app has a key of its own.
    const other = await new KeyRing({ storage, appKeys }).forApp('other app');
    expect(other.key).not.toBe(first.key);
    expect(await storage.all()).toHaveLength(2);
  });

  it('issues a new key once the kept one is revoked, or unknown (the keys were cleared), and keeps that one', async () => {
    const appKeys = memoryAppKeys();
    const ring = new KeyRing({ appKeys });
    const first = await ring.forApp('my app');
    await ring.revoke(first.info.id);
    const second = await ring.forApp('my app');
    expect(second.key).not.toBe(first.key);
    expect(appKeys.get('my app')).toBe(second.key);
    expect((await ring.forApp('my app')).key).toBe(second.key);

    const cleared = new KeyRing({ appKeys }); // the same kept key, an empty key store
    const third = await cleared.forApp('my app');
    expect(third.key).not.toBe(second.key);
    expect((await cleared.verify(third.key)).ok).toBe(true);
  });

  it('issues one key when an app starts several times at once', async () => {
    const storage = memoryKeyStorage();
    const ring = new KeyRing({ storage });
    const keys = await Promise.all(Array.from({ length: 5 }, () => ring.forApp('my app')));
    expect(new Set(keys.map((k) => k.key)).size).toBe(1);
    expect(await storage.all()).toHaveLength(1);
  });

  it('takes the names issue takes', async () => {
    const ring = new KeyRing();
    const forApp = ring.forApp.bind(ring) as (name?: unknown) => Promise<unknown>;
    await expect(forApp()).rejects.toThrow(new TypeError("A key's name must be a string, but got undefined."));
    await expect(forApp('')).rejects.toBeInstanceOf(RangeError);
    await expect(forApp('x'.repeat(MAX_KEY_NAME_LENGTH + 1))).rejects.toBeInstanceOf(RangeError);
    expect(await ring.list()).toEqual([]);
  });
});

describe('timingSafeEqual', () => {
  it('compares whole strings, whatever the position of the first difference', () => {
    expect(timingSafeEqual('abc', 'abc')).toBe(true);
    expect(timingSafeEqual('abc', 'abd')).toBe(false);
    expect(timingSafeEqual('xbc', 'abc')).toBe(false);
    expect(timingSafeEqual('abc', 'abcd')).toBe(false);
    expect(timingSafeEqual('', '')).toBe(true);
  });
});
