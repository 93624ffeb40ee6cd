import 'fake-indexeddb/auto';
import { forceCloseDatabase, IDBFactory } from 'fake-indexeddb';
import { deleteDB } from 'idb';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { directoryDocumentStorage } from './directory-document-storage.ts';
import type { DocumentStorage, RecordKey } from './document-storage.ts';
import { indexedDbDocumentStorage } from './indexeddb-document-storage.ts';
import { memoryDocumentStorage } from './memory-document-storage.ts';

/**
 * The document storage's contract, on the three backends: memory, IndexedDB on fake-indexeddb (an in-memory IndexedDB
 * that fires the browser's `close` and `versionchange` events, a fresh database for each test), and a directory in a
 * fresh temporary folder. Then what only one backend has: the directory's persistence and crash leftovers, and the
 * IndexedDB connection's surviving the browser.
 */

/** Every IndexedDB connection opened, in order: the storage's own is found here, as the browser would hold it. */
let connections: IDBDatabase[];
/** A parent folder for each test, holding the storage's directory alone: anything else in it escaped. */
let parent: string;
let directory: string;
let databaseName: string;
let databases = 0;

beforeEach(async () => {
  connections = [];
  const factory = new IDBFactory();
  const open = factory.open.bind(factory);
  factory.open = (...args: Parameters<IDBFactory['open']>) => {
    const request = open(...args);
    request.addEventListener('success', () => connections.push(request.result));
    return request;
  };
  globalThis.indexedDB = factory;
  databaseName = `documents-test-${++databases}`;
  parent = await mkdtemp(join(tmpdir(), 'lantern-documents-'));
  directory = join(parent, 'documents');
});

afterEach(async () => {
  await rm(parent, { recursive: true, force: true });
});

const backends: Record<string, () => DocumentStorage> = {
  memory: () => memoryDocumentStorage(),
  indexedDB: () => indexedDbDocumentStorage(databaseName),
  directory: () => directoryDocumentStorage(directory),
};

/** Puts `{ key }` under each key, in the order given. */
async function putKeys(storage: DocumentStorage, keys: RecordKey[]): Promise<void> {
  for (const key of keys) await storage.put('chunks', key, { key });
}

/** The keys of what `list` answers, for values put by `putKeys`. */
const listed = async (storage: DocumentStorage, prefix: RecordKey) =>
  (await storage.list<{ key: string[] }>('chunks', prefix)).map((value) => value.key);

/** Keys no file system or URL takes as they are: each must be a key like any other, in every backend. */
const AWKWARD = [
  '../x',
  '..',
  '.',
  '',
  '/',
  '\\',
  '%',
  '%2F',
  'a/b',
  'CON',
  'nul',
  'File-ABC',
  'file-abc',
  'é',
  'e\u0301', // 'é' decomposed: macOS normalizes names, and these two must stay two keys
  '日本語',
  '😀',
  '\ud800', // a lone surrogate
  '\ufffd',
  ' trailing space ',
  'dot.',
  '.hidden',
  'x'.repeat(300),
  'ü'.repeat(200),
  'v8.v8',
  '~',
  '_',
  '^a',
];

/** The element-wise order by UTF-16 units, written out. */
const sortedKeys = (keys: RecordKey[]) =>
  [...keys].sort((a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return a.length - b.length;
  });

describe.each(Object.entries(backends))('%s document storage', (_name, make) => {
  it('puts, gets, replaces and deletes a record', async () => {
    const storage = make();
    expect(await storage.get('files', ['key_a', 'file-1'])).toBeUndefined();
    await storage.put('files', ['key_a', 'file-1'], { id: 'file-1', bytes: 3, purpose: 'assistants', meta: null });
    expect(await storage.get('files', ['key_a', 'file-1'])).toEqual({
      id: 'file-1',
      bytes: 3,
      purpose: 'assistants',
      meta: null,
    });
    await storage.put('files', ['key_a', 'file-1'], { id: 'file-1', bytes: 4 });
    expect(await storage.get('files', ['key_a', 'file-1'])).toEqual({ id: 'file-1', bytes: 4 });
    expect(await storage.list('files', [])).toEqual([{ id: 'file-1', bytes: 4 }]);
    expect(await storage.delete('files', ['key_a', 'file-1'])).toBe(true);
    expect(await storage.delete('files', ['key_a', 'file-1'])).toBe(false);
    expect(await storage.get('files', ['key_a', 'file-1'])).toBeUndefined();
    expect(await storage.list('files', [])).toEqual([]);
  });

  it('keeps strings, numbers, booleans and null as values of their own', async () => {
    const storage = make();
    const values = ['text', '', 0, -1.5, true, false, null, [1, 'two', [null]]];
    for (const [i, value] of values.entries()) await storage.put('indexes', ['key_a', String(i)], value);
    for (const [i, value] of values.entries())
      expect(await storage.get('indexes', ['key_a', String(i)])).toEqual(value);
    expect(await storage.list('indexes', ['key_a'])).toEqual(values);
  });

  it('keeps the tables apart', async () => {
    const storage = make();
    await storage.put('files', ['key_a', 'x'], 'a file');
    await storage.put('vector_stores', ['key_a', 'x'], 'a vector store');
    expect(await storage.get('files', ['key_a', 'x'])).toBe('a file');
    expect(await storage.get('vector_stores', ['key_a', 'x'])).toBe('a vector store');
    expect(await storage.get('file_bytes', ['key_a', 'x'])).toBeUndefined();
    expect(await storage.deleteAll('files', [])).toBe(1);
    expect(await storage.list('vector_stores', [])).toEqual(['a vector store']);
  });

  it('keeps copies: changing a value after put, or what get and list gave, changes nothing kept', async () => {
    const storage = make();
    const value = { id: 'vs_1', file_counts: { total: 1 }, ids: ['file-1'], bytes: new Uint8Array([1, 2, 3]) };
    await storage.put('vector_stores', ['key_a', 'vs_1'], value);
    value.file_counts.total = 99;
    value.ids.push('file-2');
    value.bytes[0] = 99;
    const got = (await storage.get<typeof value>('vector_stores', ['key_a', 'vs_1']))!;
    expect(got).toEqual({ id: 'vs_1', file_counts: { total: 1 }, ids: ['file-1'], bytes: new Uint8Array([1, 2, 3]) });
    got.file_counts.total = 7;
    got.bytes[1] = 7;
    const [listedValue] = await storage.list<typeof value>('vector_stores', ['key_a']);
    listedValue!.ids.length = 0;
    expect(await storage.get('vector_stores', ['key_a', 'vs_1'])).toEqual({
      id: 'vs_1',
      file_counts: { total: 1 },
      ids: ['file-1'],
      bytes: new Uint8Array([1, 2, 3]),
    });
  });

  it('keeps Uint8Array and Float32Array as themselves, alone, in arrays and in objects', async () => {
    const storage = make();
    const bytes = new Uint8Array([0, 1, 127, 128, 255]);
    const embedding = new Float32Array([0.25, -1.5, Math.PI, 1e-30, Infinity]);
    // A view into a larger buffer: its own bytes are what is kept.
    const view = new Float32Array(new ArrayBuffer(64), 12, 3).fill(2.5);
    await storage.put('file_bytes', ['key_a', 'file-1'], bytes);
    await storage.put('indexes', ['key_a', 'vs_1'], { vectors: [embedding, view], dimensions: 5 });
    await storage.put('chunks', ['key_a', 'vs_1', 'file-1', '0'], [embedding]);

    const gotBytes = await storage.get<Uint8Array>('file_bytes', ['key_a', 'file-1']);
    expect(gotBytes).toBeInstanceOf(Uint8Array);
    expect([...gotBytes!]).toEqual([0, 1, 127, 128, 255]);
    const index = (await storage.get<{ vectors: Float32Array[] }>('indexes', ['key_a', 'vs_1']))!;
    expect(index.vectors[0]).toBeInstanceOf(Float32Array);
    expect([...index.vectors[0]!]).toEqual([...embedding]);
    expect(index.vectors[1]).toBeInstanceOf(Float32Array);
    expect([...index.vectors[1]!]).toEqual([2.5, 2.5, 2.5]);
    // Its buffer holds its own floats: a Float32Array made over it reads them, whatever the backend.
    expect([...new Float32Array(index.vectors[0]!.buffer, index.vectors[0]!.byteOffset, 5)]).toEqual([...embedding]);
    const [chunk] = await storage.list<Float32Array[]>('chunks', ['key_a']);
    expect(chunk![0]).toBeInstanceOf(Float32Array);
    expect([...chunk![0]!]).toEqual([...embedding]);
  });

  it('keeps a 4 MB Uint8Array byte for byte', async () => {
    const storage = make();
    const bytes = new Uint8Array(4 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 11)) & 0xff;
    await storage.put('file_bytes', ['key_a', 'file-big'], bytes);
    const got = await storage.get<Uint8Array>('file_bytes', ['key_a', 'file-big']);
    expect(got).toBeInstanceOf(Uint8Array);
    expect(got!.byteLength).toBe(bytes.byteLength);
    expect(Buffer.from(got!.buffer, got!.byteOffset, got!.byteLength).equals(Buffer.from(bytes))).toBe(true);
  });

  it('lists by prefix element by element: ["a"] is not the start of ["ab"]', async () => {
    const storage = make();
    await putKeys(storage, [['ab', 'y'], ['a', 'x', '1'], ['a'], ['a', 'x'], ['b'], ['ab'], ['a', 'xy'], ['', 'a']]);
    expect(await listed(storage, ['a'])).toEqual([['a'], ['a', 'x'], ['a', 'x', '1'], ['a', 'xy']]);
    expect(await listed(storage, ['a', 'x'])).toEqual([
      ['a', 'x'],
      ['a', 'x', '1'],
    ]);
    expect(await listed(storage, ['ab'])).toEqual([['ab'], ['ab', 'y']]);
    expect(await listed(storage, [''])).toEqual([['', 'a']]);
    expect(await listed(storage, ['a', 'x', '1', 'deeper'])).toEqual([]);
    expect(await listed(storage, ['c'])).toEqual([]);
    expect(await listed(storage, [])).toEqual([
      ['', 'a'],
      ['a'],
      ['a', 'x'],
      ['a', 'x', '1'],
      ['a', 'xy'],
      ['ab'],
      ['ab', 'y'],
      ['b'],
    ]);
  });

  it('lists in key order: element-wise, by UTF-16 units, whatever order they were put in', async () => {
    const storage = make();
    const keys: RecordKey[] = [
      ['key_a', 'vs_1', 'file-2', '0010'],
      ['key_a', 'vs_1', 'file-10', '0002'],
      ['key_a', 'vs_1', 'file-2', '0002'],
      ['key_a', 'vs_1', 'file-2'],
      ['key_a', 'B'],
      ['key_a', 'a'],
      ['key_a', 'é'],
      ['key_a', '😀'], // a surrogate pair, before U+FFFD by units though after it by code points
      ['key_a', '\ufffd'],
      ['key_a', 'a\u0000'],
      ['key_a', ''],
    ];
    await putKeys(storage, keys);
    const expected = sortedKeys(keys);
    expect(expected.slice(0, 3)).toEqual([
      ['key_a', ''],
      ['key_a', 'B'],
      ['key_a', 'a'],
    ]);
    expect(await listed(storage, ['key_a'])).toEqual(expected);
    expect(await listed(storage, [])).toEqual(expected);
  });

  it('deletes everything under a prefix, element by element, and counts it', async () => {
    const storage = make();
    await putKeys(storage, [['a'], ['a', 'x'], ['a', 'x', '1'], ['ab', 'y'], ['b']]);
    await storage.put('files', ['a', 'x'], 'another table');
    expect(await storage.deleteAll('chunks', ['a', 'x'])).toBe(2);
    expect(await listed(storage, [])).toEqual([['a'], ['ab', 'y'], ['b']]);
    expect(await storage.deleteAll('chunks', ['a'])).toBe(1);
    expect(await listed(storage, [])).toEqual([['ab', 'y'], ['b']]);
    expect(await storage.deleteAll('chunks', ['nothing'])).toBe(0);
    expect(await storage.deleteAll('chunks', [])).toBe(2);
    expect(await listed(storage, [])).toEqual([]);
    expect(await storage.deleteAll('chunks', [])).toBe(0);
    expect(await storage.get('files', ['a', 'x'])).toBe('another table');
    // The table takes records again after everything in it went.
    await putKeys(storage, [['a', 'x']]);
    expect(await listed(storage, ['a'])).toEqual([['a', 'x']]);
  });

  it('takes keys of any strings as keys like any other', async () => {
    const storage = make();
    const keys: RecordKey[] = AWKWARD.flatMap((part) => [[part], ['key_a', part], [part, 'file-1', part]]);
    for (const [i, key] of keys.entries()) await storage.put('files', key, i);
    for (const [i, key] of keys.entries()) expect(await storage.get('files', key)).toBe(i);
    expect(await storage.list('files', [])).toEqual(sortedKeys(keys).map((key) => keys.indexOf(key)));
    for (const part of AWKWARD) {
      expect(await storage.list('files', [part, 'file-1'])).toEqual([
        keys.findIndex((key) => key[0] === part && key[1] === 'file-1'),
      ]);
    }
    expect(await storage.deleteAll('files', ['..'])).toBe(2);
    expect(await storage.get('files', ['..'])).toBeUndefined();
    expect(await storage.get('files', ['.'])).toBe(keys.findIndex((key) => key.length === 1 && key[0] === '.'));
    for (const key of keys.filter((key) => key[0] !== '..')) expect(await storage.delete('files', key)).toBe(true);
    expect(await storage.list('files', [])).toEqual([]);
  });

  it("keeps each owner's records apart: the same ids under two owners are two records", async () => {
    const storage = make();
    await storage.put('files', ['key_a', 'file-1'], 'a');
    await storage.put('files', ['key_b', 'file-1'], 'b');
    await storage.put('files', ['key_ab', 'file-1'], 'ab');
    expect(await storage.get('files', ['key_a', 'file-1'])).toBe('a');
    expect(await storage.list('files', ['key_a'])).toEqual(['a']);
    expect(await storage.list('files', ['key_b'])).toEqual(['b']);
    expect(await storage.delete('files', ['key_c', 'file-1'])).toBe(false);
    expect(await storage.deleteAll('files', ['key_a'])).toBe(1);
    expect(await storage.list('files', [])).toEqual(['ab', 'b']);
  });

  it('refuses an unknown table, an empty key and a key of other than strings, as every backend does', async () => {
    const storage = make();
    await expect(storage.put('nope' as 'files', ['key_a'], 1)).rejects.toThrow(TypeError);
    await expect(storage.put('files', [], 1)).rejects.toThrow(TypeError);
    await expect(storage.get('files', [])).rejects.toThrow(TypeError);
    await expect(storage.put('files', ['key_a', 1 as unknown as string], 1)).rejects.toThrow(TypeError);
    await expect(storage.list('../files' as 'files', [])).rejects.toThrow(TypeError);
    expect(await storage.list('files', [])).toEqual([]);
  });

  it('rejects a value that cannot be cloned, and keeps what was there', async () => {
    const storage = make();
    await storage.put('files', ['key_a', 'file-1'], 'before');
    await expect(storage.put('files', ['key_a', 'file-1'], { call: () => {} })).rejects.toThrow();
    expect(await storage.get('files', ['key_a', 'file-1'])).toBe('before');
  });
});

/** Every path under `dir`, relative to it, folders with a trailing separator. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)) + (entry.isDirectory() ? sep : ''))
    .sort();
}

describe('directoryDocumentStorage', () => {
  it('is seen by a second storage on the same directory, as after a restart', async () => {
    const first = directoryDocumentStorage(directory);
    await first.put('files', ['key_a', 'file-1'], { id: 'file-1' });
    await first.put('file_bytes', ['key_a', 'file-1'], new Uint8Array([1, 2, 3]));
    const second = directoryDocumentStorage(directory);
    expect(await second.get('files', ['key_a', 'file-1'])).toEqual({ id: 'file-1' });
    expect(await second.get('file_bytes', ['key_a', 'file-1'])).toEqual(new Uint8Array([1, 2, 3]));
    expect(await second.delete('files', ['key_a', 'file-1'])).toBe(true);
    expect(await first.get('files', ['key_a', 'file-1'])).toBeUndefined();
  });

  it('keeps every key inside its directory, one file per record, and leaves no scratch file behind', async () => {
    const storage = directoryDocumentStorage(directory);
    for (const part of AWKWARD) await storage.put('files', [part, part], part);
    await storage.put('chunks', ['key_a', 'vs_1', 'file-1', '0'], 'chunk');
    expect(await readdir(parent)).toEqual(['documents']);
    const paths = await tree(directory);
    expect(paths.filter((path) => path.startsWith(`.tmp${sep}`))).toEqual([`.tmp${sep}`]);
    expect(paths.filter((path) => path.endsWith('.v8'))).toHaveLength(AWKWARD.length + 1);
    expect(paths).toContain(join('chunks', '_key_a', '_vs_1', '_file-1', '_0.v8'));
    expect(paths).toContain(join('files', '_^file-^a^b^c', '_^file-^a^b^c.v8'));
    // Every name is ASCII, and none is '.', '..' or a Windows device name.
    for (const path of paths) {
      for (const name of path.split(sep).filter(Boolean)) {
        expect(name).toMatch(/^[\x21-\x7e]+$/);
        expect(name).toMatch(/^(?:\.tmp$|files$|chunks$|[_~])/);
      }
    }
  });

  it('ignores what a crash leaves (a scratch file) and whatever else is in its folders', async () => {
    const storage = directoryDocumentStorage(directory);
    await storage.put('files', ['key_a', 'file-1'], 'kept');
    await mkdir(join(directory, '.tmp'), { recursive: true });
    await writeFile(join(directory, '.tmp', 'torn'), 'half a rec');
    await writeFile(join(directory, 'files', '_key_a', '.DS_Store'), 'not a record');
    await writeFile(join(directory, 'files', '_key_a', '_file-2.v8.tmp'), 'not a record');
    await writeFile(join(directory, 'files', '_key_a', 'notes.v8'), 'not a record');
    expect(await storage.list('files', [])).toEqual(['kept']);
    expect(await storage.list('files', ['key_a'])).toEqual(['kept']);
    expect(await storage.deleteAll('files', ['key_a'])).toBe(1);
    expect(await storage.list('files', [])).toEqual([]);
  });

  it('deletes scratch files an hour old when it first writes, and leaves younger ones (another writer)', async () => {
    await mkdir(join(directory, '.tmp'), { recursive: true });
    const old = join(directory, '.tmp', 'crashed');
    const young = join(directory, '.tmp', 'writing');
    await writeFile(old, 'torn');
    await writeFile(young, 'in progress');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(old, twoHoursAgo, twoHoursAgo);
    await directoryDocumentStorage(directory).put('files', ['key_a', 'file-1'], 1);
    await expect(stat(old)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await stat(young)).isFile()).toBe(true);
  });

  it('removes the folders that deleting empties, and makes them again for the next put', async () => {
    const storage = directoryDocumentStorage(directory);
    await putKeys(storage, [
      ['key_a', 'vs_1', 'file-1', '0'],
      ['key_a', 'vs_1', 'file-1', '1'],
      ['key_a', 'vs_2', 'file-1', '0'],
    ]);
    expect(await storage.deleteAll('chunks', ['key_a', 'vs_1'])).toBe(2);
    expect((await tree(join(directory, 'chunks'))).filter((path) => path.includes('vs_1'))).toEqual([]);
    expect(await storage.delete('chunks', ['key_a', 'vs_2', 'file-1', '0'])).toBe(true);
    expect(await tree(join(directory, 'chunks'))).toEqual([]);
    await putKeys(storage, [['key_a', 'vs_1', 'file-1', '0']]);
    expect(await listed(storage, ['key_a'])).toEqual([['key_a', 'vs_1', 'file-1', '0']]);
  });

  it('takes puts, deletes and lists at once on one folder without losing a put', async () => {
    const storage = directoryDocumentStorage(directory);
    const keys: RecordKey[] = Array.from({ length: 40 }, (_, i) => ['key_a', 'vs_1', `file-${i % 4}`, String(i)]);
    await Promise.all([
      ...keys.map((key) => storage.put('chunks', key, { key })),
      ...keys.map((key) => storage.delete('chunks', [...key.slice(0, 3), 'absent'])),
      storage.list('chunks', ['key_a']),
    ]);
    expect(await listed(storage, ['key_a'])).toEqual(sortedKeys(keys));
  });
});

describe('indexedDbDocumentStorage', () => {
  it('is shared by every context of the origin: what one keeps, another finds', async () => {
    const serviceWorker = indexedDbDocumentStorage(databaseName);
    const page = indexedDbDocumentStorage(databaseName);
    await serviceWorker.put('files', ['key_a', 'file-1'], 'kept');
    expect(await page.get('files', ['key_a', 'file-1'])).toBe('kept');
  });

  it('opens again after the browser closes its connection (site data cleared)', async () => {
    const storage = indexedDbDocumentStorage(databaseName);
    await storage.put('files', ['key_a', 'file-1'], 'kept');
    forceCloseDatabase(connections[0]! as unknown as typeof IDBDatabase);
    expect(await storage.get('files', ['key_a', 'file-1'])).toBe('kept');
    await storage.put('files', ['key_a', 'file-2'], 'also');
    expect(connections).toHaveLength(2);
  });

  it('gives way to another context that deletes the database, then opens it afresh', async () => {
    const storage = indexedDbDocumentStorage(databaseName);
    await storage.put('files', ['key_a', 'file-1'], 'kept');
    let blocked = false;
    await deleteDB(databaseName, { blocked: () => (blocked = true) });
    expect(blocked).toBe(false);
    expect(await storage.list('files', [])).toEqual([]);
    await storage.put('files', ['key_a', 'file-1'], 'again');
    expect(await storage.get('files', ['key_a', 'file-1'])).toBe('again');
  });

  it("rejects a put over the origin's quota with the browser's error, and keeps what was there", async () => {
    const storage = indexedDbDocumentStorage(databaseName);
    await storage.put('file_bytes', ['key_a', 'file-1'], new Uint8Array(10));
    const restore = await refuseRecordsOver(1024);
    try {
      await expect(storage.put('file_bytes', ['key_a', 'file-1'], new Uint8Array(4096))).rejects.toMatchObject({
        name: 'QuotaExceededError',
      });
      await storage.put('file_bytes', ['key_a', 'file-2'], new Uint8Array(20));
    } finally {
      restore();
    }
    expect(await storage.get('file_bytes', ['key_a', 'file-1'])).toEqual(new Uint8Array(10));
    expect(await storage.list('file_bytes', ['key_a'])).toEqual([new Uint8Array(10), new Uint8Array(20)]);
  });
});

/**
 * A browser's quota, as fake-indexeddb has none: while it holds, storing a Uint8Array longer than `bytes` fails with
 * a `QuotaExceededError` inside the transaction, as the browser's does. It patches fake-indexeddb's internal object
 * store (the same way as test/support/origin-quota.ts, which counts the `responses` store's records only).
 */
async function refuseRecordsOver(bytes: number): Promise<() => void> {
  interface RawObjectStore {
    storeRecord(record: { value: unknown }, noOverwrite: boolean, rollbackLog?: unknown[]): unknown;
  }
  const raw = await new Promise<RawObjectStore>((resolve, reject) => {
    const open = new IDBFactory().open('probe');
    open.onupgradeneeded = () => {
      const store = open.result.createObjectStore('probe') as IDBObjectStore & { _rawObjectStore: RawObjectStore };
      resolve(Object.getPrototypeOf(store._rawObjectStore) as RawObjectStore);
    };
    open.onerror = () => reject(open.error ?? new Error('fake-indexeddb did not open'));
  });
  const storeRecord = raw.storeRecord;
  raw.storeRecord = function (this: RawObjectStore, record, noOverwrite, rollbackLog) {
    // Without a rollback log it is a rollback restoring what was there: never refused.
    if (rollbackLog && record.value instanceof Uint8Array && record.value.byteLength > bytes) {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    }
    return storeRecord.call(this, record, noOverwrite, rollbackLog);
  };
  return () => {
    raw.storeRecord = storeRecord;
  };
}
