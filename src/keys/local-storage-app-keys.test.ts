import { afterEach, describe, expect, it, vi } from 'vitest';
import { KeyRing } from './key-ring.ts';
import { APP_KEY_PREFIX, localStorageAppKeys } from './local-storage-app-keys.ts';

/** A Storage over a Map, as a page's localStorage (Node has none). */
function mapStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (index) => [...items.keys()][index] ?? null,
    getItem: (name) => items.get(name) ?? null,
    setItem: (name, value) => void items.set(name, String(value)),
    removeItem: (name) => void items.delete(name),
    clear: () => items.clear(),
  };
}

afterEach(() => vi.unstubAllGlobals());

describe('localStorageAppKeys', () => {
  it("keeps each app's key under its name, so the next page load finds it", async () => {
    const storage = mapStorage();
    vi.stubGlobal('localStorage', storage);
    const ring = new KeyRing({ appKeys: localStorageAppKeys() });
    const { key } = await ring.forApp('my app');
    expect(storage.getItem(`${APP_KEY_PREFIX}my app`)).toBe(key);
    // The next load: a new ring over the same key records (here: the same ring's) and the same localStorage.
    expect((await ring.forApp('my app')).key).toBe(key);
    expect(await ring.list()).toHaveLength(1);
  });

  it('reads a storage that refuses (disabled, full) as holding nothing, and never throws', async () => {
    const refusing = mapStorage();
    refusing.getItem = () => {
      throw new DOMException('The operation is insecure.', 'SecurityError');
    };
    refusing.setItem = () => {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    };
    vi.stubGlobal('localStorage', refusing);
    const appKeys = localStorageAppKeys();
    expect(appKeys.get('my app')).toBeUndefined();
    expect(() => appKeys.set('my app', 'lt_x')).not.toThrow();
    // The app still starts, with a key of this load's own.
    const ring = new KeyRing({ appKeys });
    expect((await ring.verify((await ring.forApp('my app')).key)).ok).toBe(true);
  });
});
