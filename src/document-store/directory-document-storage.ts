import { createHash, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import {
  checkKey,
  compareKeys,
  hasPrefix,
  type DocumentStorage,
  type DocumentTable,
  type RecordKey,
} from './document-storage.ts';

/*
 * Node only (node:fs): imported by Node entry points, never by index.ts, so that no browser bundle reaches it.
 *
 * Layout: `<directory>/<table>/<part>/…/<last part>.v8`, each key part a directory but the last, which names the
 * record's file; `<directory>/.tmp/` holds writes in progress. Every name is made by `partName`, which never makes a
 * name starting with '.' or holding one: the suffix and `.tmp` cannot be mistaken for a key, and no key names a path
 * outside its table.
 */

/** A record file's suffix: what it holds is `node:v8`'s serialization (a structured clone) of a {@link StoredRecord}. */
const RECORD = '.v8';
/** The folder of writes in progress, beside the tables: on the same file system, so a rename into place is atomic. */
const SCRATCH = '.tmp';
/**
 * The longest name a key part is spelled out in; a longer one is named by its hash. 120 leaves room for the suffix
 * below every file system's 255-byte name limit, and for a few levels of keys below Windows' 260-character paths.
 */
const MAX_PART_NAME = 120;
/**
 * How old a write in progress must be to count as a crash's leftover, and go. No write takes an hour (a file's bytes
 * are 512 MB at most); a younger one may be another process's, on the same directory, still writing.
 */
const STALE_SCRATCH_MS = 60 * 60 * 1000;
/** Files read or deleted at once by `list` and `deleteAll`: a table of thousands of chunks stays within open files. */
const FILES_AT_ONCE = 32;
/** Renames tried into a folder that another call's pruning may remove in between (each try makes it again). */
const RENAME_TRIES = 3;

/** What a record's file holds: its key too, since a long key part's name (a hash) cannot be read back. */
interface StoredRecord {
  key: string[];
  value: unknown;
}

/**
 * Records in a directory on disk, one file per record: what a Node server keeps across restarts. Two storages on one
 * directory (two processes, or one reopened) see each other's writes.
 *
 * A put writes its record to a scratch file, flushes it to the disk, then renames it into place: a crash (of the
 * process or the machine) at any moment leaves the old record or the new one, never part of one, and at worst a
 * scratch file, which nothing reads and a later storage on the directory deletes once it is an hour old. A full disk
 * rejects the put with Node's `ENOSPC` error, the record as it was.
 *
 * Deleting prunes the folders it empties, so that a vector store deleted leaves nothing behind; a put that meets its
 * folder pruned under it makes it again.
 *
 * @example
 * const storage = directoryDocumentStorage(join(homedir(), '.lantern', 'documents'));
 * await storage.put('files', ['key_1', 'file-abc'], { id: 'file-abc' }); // <dir>/files/_key_1/_file-abc.v8
 * @see partName for how key parts are spelled as names.
 */
export function directoryDocumentStorage(directory: string): DocumentStorage {
  const root = resolve(directory);
  const scratch = join(root, SCRATCH);
  let prepared: Promise<void> | undefined;
  const prepare = () =>
    (prepared ??= mkdir(scratch, { recursive: true }).then(
      () => sweep(scratch),
      (error: unknown) => {
        prepared = undefined;
        throw error;
      },
    ));
  const tableDir = (table: DocumentTable) => join(root, table);
  const prefixDir = (table: DocumentTable, prefix: RecordKey) => join(tableDir(table), ...prefix.map(partName));
  const recordFile = (table: DocumentTable, key: RecordKey) =>
    join(prefixDir(table, key.slice(0, -1)), partName(key.at(-1)!) + RECORD);
  /** The files of every record whose key starts with `prefix`, the prefix's own first (which may not exist). */
  const recordFiles = async (table: DocumentTable, prefix: RecordKey) => {
    const files = prefix.length > 0 ? [recordFile(table, prefix)] : [];
    await collectRecordFiles(prefixDir(table, prefix), files);
    return files;
  };

  return {
    async get<T>(table: DocumentTable, key: RecordKey) {
      checkKey(table, key, 1);
      const record = await readRecord(recordFile(table, key));
      // A long part is named by its hash: the key kept beside the value settles it.
      return record && compareKeys(record.key, key) === 0 ? (record.value as T) : undefined;
    },
    async put(table, key, value) {
      checkKey(table, key, 1);
      const bytes = serialize({ key: [...key], value } satisfies StoredRecord);
      await prepare();
      const written = join(scratch, randomUUID());
      try {
        await writeFlushed(written, bytes);
        await moveInto(written, recordFile(table, key));
      } catch (error) {
        await rm(written, { force: true });
        throw error;
      }
    },
    async delete(table, key) {
      checkKey(table, key, 1);
      const file = recordFile(table, key);
      if (!(await removeFile(file))) return false;
      await pruneUp(dirname(file), tableDir(table));
      return true;
    },
    async list<T>(table: DocumentTable, prefix: RecordKey) {
      checkKey(table, prefix, 0);
      const records = await eachAtMost(await recordFiles(table, prefix), FILES_AT_ONCE, readRecord);
      return records
        .filter((record): record is StoredRecord => record !== undefined && hasPrefix(record.key, prefix))
        .sort((a, b) => compareKeys(a.key, b.key))
        .map((record) => record.value as T);
    },
    async deleteAll(table, prefix) {
      checkKey(table, prefix, 0);
      const removed = await eachAtMost(await recordFiles(table, prefix), FILES_AT_ONCE, removeFile);
      const dir = prefixDir(table, prefix);
      await pruneTree(dir);
      if (prefix.length > 0) await pruneUp(dirname(dir), tableDir(table));
      return removed.filter(Boolean).length;
    },
  };
}

/**
 * A key part as a file or folder name: the same on every file system, and never a path of its own. Lowercase ASCII
 * letters, digits, '-' and '_' stand for themselves; an uppercase letter is '^' and the letter in lowercase, since
 * macOS and Windows do not tell 'File-A' from 'file-a' by default; every other UTF-16 unit is '%' and two hex digits,
 * or '%u' and four (units, not code points: a lone surrogate stays itself). So the name is ASCII, which no Unicode
 * normalization (macOS') changes, holds no '/', '\\' or '.', and, after the leading '_', is never '', '..', or a
 * Windows device name (CON, NUL). A name longer than {@link MAX_PART_NAME} is '~' and its SHA-256, in hex.
 */
function partName(part: string): string {
  let name = '_';
  for (let i = 0; i < part.length; i++) {
    const unit = part.charCodeAt(i);
    if ((unit >= 0x61 && unit <= 0x7a) || (unit >= 0x30 && unit <= 0x39) || unit === 0x2d || unit === 0x5f) {
      name += part[i];
    } else if (unit >= 0x41 && unit <= 0x5a) {
      name += '^' + String.fromCharCode(unit + 0x20);
    } else if (unit < 0x100) {
      name += '%' + unit.toString(16).toUpperCase().padStart(2, '0');
    } else {
      name += '%u' + unit.toString(16).toUpperCase().padStart(4, '0');
    }
  }
  return name.length <= MAX_PART_NAME ? name : '~' + createHash('sha256').update(name).digest('hex');
}

/** Whether a name is one `partName` makes: anything else in a table's folders (scratch, `.DS_Store`) is not a key's. */
const PART_NAME = /^(?:_(?:[a-z0-9_-]|\^[a-z]|%[0-9A-F]{2}|%u[0-9A-F]{4})*|~[0-9a-f]{64})$/;

/** Adds the record files under `dir`, at any depth, to `files`; a folder gone (deleted meanwhile) has none. */
async function collectRecordFiles(dir: string, files: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(absentAs([]));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && PART_NAME.test(entry.name)) await collectRecordFiles(path, files);
    else if (entry.isFile() && entry.name.endsWith(RECORD) && PART_NAME.test(entry.name.slice(0, -RECORD.length))) {
      files.push(path);
    }
  }
}

/** A record file's contents, or undefined when it is gone (never written, or deleted meanwhile). */
async function readRecord(file: string): Promise<StoredRecord | undefined> {
  const bytes = await readFile(file).catch(absentAs(undefined));
  if (!bytes) return undefined;
  const record = deserialize(bytes) as StoredRecord;
  return { key: record.key, value: ownBuffers(record.value) };
}

/**
 * Gives each typed array of a deserialized value a buffer of its own, of its own length. `node:v8` makes a typed array
 * a view into the file's bytes, or, when those are misaligned for it (a Float32Array's, mostly), into a slab of
 * Buffer's shared pool, where other data lies: its `.buffer` would hand that out. IndexedDB's structured clone makes
 * each typed array its own buffer, as this does; a Buffer comes back as the Uint8Array it would from IndexedDB.
 */
function ownBuffers(value: unknown): unknown {
  if (ArrayBuffer.isView(value)) {
    const bytes = value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
    if (value instanceof DataView) return new DataView(bytes);
    const View = Buffer.isBuffer(value) ? Uint8Array : (value.constructor as new (buffer: ArrayBuffer) => unknown);
    return new View(bytes);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = ownBuffers(value[i]);
  } else if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const object = value as Record<string, unknown>;
    for (const name of Object.keys(object)) object[name] = ownBuffers(object[name]);
  }
  return value;
}

/** Writes a new file and flushes it to the disk: renamed into place only once it is whole there. */
async function writeFlushed(file: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(file, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Renames a written file to `to`, making its folder, again if another call prunes it in between. */
async function moveInto(from: string, to: string): Promise<void> {
  for (let tries = 1; ; tries++) {
    await mkdir(dirname(to), { recursive: true });
    try {
      return await rename(from, to);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' || tries >= RENAME_TRIES) throw error;
    }
  }
}

/** Deletes a file; resolves to whether it was there. */
async function removeFile(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Removes `dir` if it is empty; resolves to whether it is gone. Pruning is tidying, never worth failing a call for: a
 * folder that stays (not empty, a put just made it, a permission) only waits for the next delete.
 */
const removeIfEmpty = (dir: string): Promise<boolean> =>
  rmdir(dir).then(
    () => true,
    (error: unknown) => errorCode(error) === 'ENOENT',
  );

/** Removes the empty folders from `dir` up to `stop` (not `stop` itself), stopping at the first that is not empty. */
async function pruneUp(dir: string, stop: string): Promise<void> {
  for (; dir.length > stop.length && dir.startsWith(stop); dir = dirname(dir)) {
    if (!(await removeIfEmpty(dir))) return;
  }
}

/** Removes the empty folders under `dir`, and `dir` if it ends up empty: a deleteAll's subtree. */
async function pruneTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(absentAs([]));
  for (const entry of entries) {
    if (entry.isDirectory() && PART_NAME.test(entry.name)) await pruneTree(join(dir, entry.name));
  }
  await removeIfEmpty(dir);
}

/** Deletes the scratch files a crash left (an hour old or more). Tidying only: any failure leaves them for next time. */
async function sweep(scratch: string): Promise<void> {
  const names = await readdir(scratch).catch(() => []);
  await eachAtMost(names, FILES_AT_ONCE, async (name) => {
    const file = join(scratch, name);
    const { mtimeMs } = await stat(file).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs >= STALE_SCRATCH_MS) await rm(file, { force: true }).catch(() => {});
  });
}

/** `use` on every item, at most `limit` at once, the results in the items' order. */
async function eachAtMost<T, R>(items: readonly T[], limit: number, use: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await use(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A catch handler answering `value` for a path that is not there (ENOENT), or not a folder (ENOTDIR). */
const absentAs =
  <T>(value: T) =>
  (error: unknown): T => {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR') return value;
    throw error;
  };

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code;
