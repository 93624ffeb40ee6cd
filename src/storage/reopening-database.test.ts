import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import type { DBSchema, IDBPDatabase } from 'idb';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { reopeningDatabase } from './reopening-database.ts';

interface NotesDB extends DBSchema {
  notes: { key: string; value: { id: string; text: string } };
}

beforeEach(() => {
  globalThis.indexedDB = new IDBFactory();
});

function notes(onLost?: () => void) {
  return reopeningDatabase<NotesDB>(
    'notes-test',
    1,
    (database) => database.createObjectStore('notes', { keyPath: 'id' }),
    onLost,
  );
}

describe('reopeningDatabase', () => {
  it('runs a transaction again on a fresh connection when the browser aborts it by closing its connection', async () => {
    const onLost = vi.fn();
    const withDatabase = notes(onLost);
    await withDatabase((database) => database.put('notes', { id: 'a', text: 'kept' }));
    const used: IDBPDatabase<NotesDB>[] = [];
    const text = await withDatabase(async (database) => {
      used.push(database);
      const transaction = database.transaction('notes');
      const read = transaction.store.get('a');
      transaction.done.catch(() => {}); // (the read says how it ended)
      if (used.length === 1) {
        // What Chromium does when site data is cleared while a request reads: the connection is closed with the forced
        // flag, which aborts its transactions (AbortError) before the `close` event comes.
        transaction.abort();
        forceCloseDatabase(database as unknown as typeof IDBDatabase);
      }
      return (await read)?.text;
    });
    expect(text).toBe('kept');
    expect(used).toHaveLength(2);
    expect(used[1]).not.toBe(used[0]);
    expect(onLost).toHaveBeenCalled();
  });

  it('lets other failures through, untried: a constraint broken is the caller’s', async () => {
    const withDatabase = notes();
    await withDatabase((database) => database.add('notes', { id: 'a', text: 'first' }));
    let calls = 0;
    await expect(
      withDatabase((database) => {
        calls += 1;
        return database.add('notes', { id: 'a', text: 'again' });
      }),
    ).rejects.toMatchObject({ name: 'ConstraintError' });
    expect(calls).toBe(1);
  });
});
