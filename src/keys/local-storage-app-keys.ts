import type { AppKeyStorage } from './key-ring.ts';

/** Where `localStorageAppKeys` keeps the key of the app named `name`. */
export const APP_KEY_PREFIX = 'lantern:app-key:';

/**
 * Apps' plaintext keys in the page's localStorage, for `KeyRing.forApp`: each app finds its key again on its next
 * start. This adds nothing to what a script of the origin can do (it can issue itself a key, or read this one), and a
 * page of another origin cannot read it (see docs/security.md). A storage that refuses (disabled, full) is read as
 * holding no key, and a key it could not keep is issued afresh on the next start: never an app that cannot start.
 */
export function localStorageAppKeys(): AppKeyStorage {
  return {
    get(name) {
      try {
        return localStorage.getItem(APP_KEY_PREFIX + name) ?? undefined;
      } catch {
        return undefined;
      }
    },
    set(name, key) {
      try {
        localStorage.setItem(APP_KEY_PREFIX + name, key);
      } catch {
        // Kept nowhere: the next start issues another key, which revokeUnusedSince finds later as stale.
      }
    },
  };
}
