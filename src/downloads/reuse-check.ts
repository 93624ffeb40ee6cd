import type { DownloadTarget } from './resumable-download.ts';
import type { FileRecord, StoredFiles } from './stored-files.ts';

/**
 * Why a complete record cannot be reused for `target`, or undefined when it can. Every reuse is checked (every load and
 * prefetch of its model), without reading the file's bytes unless it runs as code:
 *
 * - it is the copy of the target's source (a mirror's file is not the hub's, nor another mirror's);
 * - its size is the one the model's list of files gives, and the SHA-256 Lantern computed over its bytes when it stored
 *   them is the one the list gives (the hub's listing, or a pin of the app's): a list that changed names another file;
 * - its bytes are still in the store as recorded (`StoredFiles.holds`: every part, or the copy Lantern put in the
 *   engine's cache and nothing else written there since);
 * - a file that runs as code (`executable`: web-llm's model library, a few MB) is hashed again and compared.
 *
 * The weights are not hashed again on reuse: SHA-256 in JavaScript (@noble/hashes, which the downloads use) ran at
 * 120–170 MB/s on the project's machine, and browsers have no streaming SHA-256 (WebCrypto's `digest` takes one
 * buffer), so re-hashing a 1 GB model would add 6–8 s to every load, and a 4 GB one about half a minute. They were
 * hashed as they were stored; what can change them afterwards is a script of the origin, which is trusted with
 * everything anyway (docs/security.md). A record from before Lantern kept its own hash is hashed once, on its first
 * reuse, when the list gives a hash to compare with, or when it is code (issue 41).
 */
export async function reuseProblem(
  store: StoredFiles,
  record: FileRecord,
  target: DownloadTarget,
): Promise<string | undefined> {
  if (record.source !== (target.source ?? target.url)) return 'came from another source';
  if (record.absent) return undefined;
  if (target.size !== undefined && record.received !== target.size) {
    return `has ${record.received} bytes where its list of files says ${target.size}`;
  }
  const expected = target.sha256?.toLowerCase();
  // A record from before `digest` existed was checked against its listing's hash, if it had one, when it completed.
  const digest = record.digest ?? record.sha256?.toLowerCase();
  if (expected !== undefined && digest !== undefined && digest !== expected) {
    return 'has another SHA-256 than its list of files gives';
  }
  if (!(await store.holds(record))) return 'is missing from the store, or was replaced there';
  if (target.executable || (expected !== undefined && digest === undefined)) {
    const actual = await store.hash(record);
    const reference = digest ?? expected;
    if (reference !== undefined && actual !== reference) return 'has other bytes than those Lantern stored';
    if (record.digest === undefined) await store.seal(record, actual);
  }
  return undefined;
}
