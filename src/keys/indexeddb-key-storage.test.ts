import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { deleteDB, openDB } from 'idb';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { indexedDbKeyStorage } from './indexeddb-key-storage.ts';
import { KeyRing } from './key-ring.ts';

/**
 * The IndexedDB key store on fake-indexeddb (an in-memory IndexedDB that fires the same `close` and `versionchange`
 * events as browsers), through KeyRing: `verify` is what the service worker asks on every request.
 */

/** Every connection opened, in order: the store's own is found here, as the browser would hold it. */
let connections: IDBDatabase[];

beforeEach(() => {
  connections = [];
  const factory = new IDBFactory();
  const open = factory.open.bind(factory);
  factory.open = (...args: Parameters<IDBFactory['open']>) => {
    const request = open(...args);
    request.addEventListener('success', () => connections.push(request.result));
    return request;
  };
  globalThis.indexedDB = factory;
});

async function ringWithKey() {
  const ring = new KeyRing({ storage: indexedDbKeyStorage('keys-test') });
  const { key } = await ring.issue('app');
  expect((await ring.verify(key)).ok).toBe(true);
  return { ring, key };
}

describe('indexedDbKeyStorage', () => {
  it('opens again after the browser closes its connection (site data cleared, a disk error)', async () => {
    const { ring, key } = await ringWithKey();
    expect(connections).toHaveLength(1);
    // Fires `close`, as Chromium does when storage is cleared under it. (fake-indexeddb's typing asks for the class.)
    forceCloseDatabase(connections[0]! as unknown as typeof IDBDatabase);
    expect(await ring.verify(key)).toMatchObject({ ok: true });
    expect((await ring.issue('after')).info.name).toBe('after');
    expect(connections).toHaveLength(2);
  });

  it('reads again on a fresh connection when its connection closed without telling it', async () => {
    const { ring, key } = await ringWithKey();
    connections[0]!.close(); // no event: the next read meets a closed connection (InvalidStateError)
    expect(await ring.list()).toHaveLength(1); // (a read: verify answers the key from memory)
    expect(await ring.verify(key)).toMatchObject({ ok: true });
    expect(connections).toHaveLength(2);
  });

  it('gives way to another context that deletes or upgrades the database, then opens it afresh', async () => {
    const { ring, key } = await ringWithKey();
    let blocked = false;
    // A page clearing its keys: without the store giving way, this waits for as long as the service worker lives.
    await deleteDB('keys-test', { blocked: () => (blocked = true) });
    expect(blocked).toBe(false);
    expect(await ring.verify(key)).toEqual({ ok: false, reason: 'unknown' }); // the keys went with the database
    const { key: fresh } = await ring.issue('fresh');
    expect((await ring.verify(fresh)).ok).toBe(true);

    // A newer version opened elsewhere: this store's connection closes for it rather than blocking it.
    const newer = await openDB('keys-test', 2, { blocked: () => (blocked = true) });
    expect(blocked).toBe(false);
    newer.close();
  });

  it('records a use in the database, and a use recorded by one context never undoes a revocation by another', async () => {
    let time = 1_700_000_000_000;
    const now = () => time;
    // The service worker and a page: two rings, two connections, one database.
    const worker = new KeyRing({ storage: indexedDbKeyStorage('keys-test'), now });
    const page = new KeyRing({ storage: indexedDbKeyStorage('keys-test'), now });
    const { key, info } = await page.issue('app');
    time += 90_000;
    expect(await worker.verify(key)).toMatchObject({ ok: true, info: { lastUsedAt: info.createdAt + 90 } });
    expect((await page.list())[0]!.lastUsedAt).toBe(info.createdAt + 90);

    // A minute later the worker records another use while the page revokes the key: both land, in either order.
    time += 60_000;
    const [check, revoked] = await Promise.all([worker.verify(key), page.revoke(info.id)]);
    expect(revoked).toBe(true);
    expect(check.ok).toBe(true); // read before the revocation
    const [record] = await page.list();
    expect(record!.revokedAt).toBe(info.createdAt + 150);
    expect(await worker.verify(key)).toEqual({ ok: false, reason: 'revoked' });
    expect(await page.revoke('key_nope')).toBe(false);
  });

  it('tries again after a failed open instead of keeping the failure', async () => {
    // A database of a newer version: opening version 1 fails (VersionError) for as long as it exists.
    (
      await openDB('keys-test', 2, { upgrade: (db) => void db.createObjectStore('keys', { keyPath: 'info.id' }) })
    ).close();
    const ring = new KeyRing({ storage: indexedDbKeyStorage('keys-test') });
    await expect(ring.list()).rejects.toMatchObject({ name: 'VersionError' });
    await deleteDB('keys-test');
    expect(await ring.list()).toEqual([]);
  });

  it('refuses at once a key revoked in another context, which only a channel message tells', async () => {
    const worker = new KeyRing({ storage: indexedDbKeyStorage('keys-test') });
    // Another tab: fresh copies of the modules, so nothing in this context's memory is shared with it.
    vi.resetModules();
    const tab = await import('./index.ts');
    const page = new tab.KeyRing({ storage: tab.indexedDbKeyStorage('keys-test') });
    const a = await page.issue('a');
    const b = await page.issue('b');
    expect((await worker.verify(a.key)).ok).toBe(true);
    expect((await worker.verify(b.key)).ok).toBe(true); // both remembered now

    await page.revoke(a.info.id);
    expect(await worker.verify(a.key)).toEqual({ ok: false, reason: 'revoked' });
    expect((await worker.verify(b.key)).ok).toBe(true);
  });
});
