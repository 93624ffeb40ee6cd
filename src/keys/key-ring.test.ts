import { describe, expect, it } from 'vitest';
import { timingSafeEqual } from './key-crypto.ts';
import { KeyRing, MAX_KEY_NAME_LENGTH, memoryKeyStorage, type KeyRecord } from './key-ring.ts';

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
    expect(await ring.verify(a.key)).toEqual({ ok: true, info: a.info });
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

describe('timingSafeEqual', () => {
  it('compares whole strings, whatever the position of the first difference', () => {
    expect(timingSafeEqual('abc', 'abc')).toBe(true);
    expect(timingSafeEqual('abc', 'abd')).toBe(false);
    expect(timingSafeEqual('xbc', 'abc')).toBe(false);
    expect(timingSafeEqual('abc', 'abcd')).toBe(false);
    expect(timingSafeEqual('', '')).toBe(true);
  });
});
