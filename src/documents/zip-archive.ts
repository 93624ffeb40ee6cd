import { readAtMost } from '../bytes/byte-chunks.ts';

/**
 * The entries of a zip archive (what a .docx or .pptx is), read without a library: the central directory at its end
 * lists them, and each is stored or deflated, which `DecompressionStream('deflate-raw')` inflates (a web standard, in
 * Node as in the service worker). Only what Office documents use: no ZIP64, no encryption, no other compression.
 */

/** One file of an archive, as its central directory lists it. */
export interface ZipEntry {
  name: string;
  /** 0: stored; 8: deflated */
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

/** The most entries an archive may list: a 2,000-slide presentation has fewer than 10,000 parts. */
export const MAX_ZIP_ENTRIES = 10_000;

/** Thrown for an archive that cannot be read: the message says why. */
export class ZipError extends Error {
  override readonly name: string = 'ZipError';
}

/** Thrown for an entry that inflates past the bytes its reader allows. */
export class ZipEntryTooLargeError extends ZipError {
  override readonly name = 'ZipEntryTooLargeError';

  constructor(readonly entry: string) {
    super(`its ${entry} inflates past the bytes it may.`);
  }
}

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_DIRECTORY_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;

/**
 * The entries of an archive by name, from its central directory.
 *
 * @throws {@link ZipError} for bytes that are not a zip archive, a ZIP64 one, or one of more than
 * {@link MAX_ZIP_ENTRIES} entries (counted from the directory's own total, before any entry is read).
 */
export function zipEntries(bytes: Uint8Array): Map<string, ZipEntry> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The end record is the last 22 bytes, unless a comment of up to 65,535 bytes follows it.
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (view.getUint32(at, true) === END_OF_CENTRAL_DIRECTORY) {
      end = at;
      break;
    }
  }
  if (end < 0) throw new ZipError('it is not a zip archive (no central directory).');
  const count = view.getUint16(end + 10, true);
  const directorySize = view.getUint32(end + 12, true);
  const directoryOffset = view.getUint32(end + 16, true);
  if (count === 0xffff || directoryOffset === 0xffffffff) throw new ZipError('it is a ZIP64 archive.');
  if (count > MAX_ZIP_ENTRIES) {
    throw new ZipError(`it lists ${count} entries, more than the ${MAX_ZIP_ENTRIES} an archive may.`);
  }
  if (directoryOffset + directorySize > end) throw new ZipError('its central directory is out of bounds.');

  const decoder = new TextDecoder();
  const entries = new Map<string, ZipEntry>();
  let at = directoryOffset;
  for (let index = 0; index < count; index++) {
    if (at + 46 > end || view.getUint32(at, true) !== CENTRAL_DIRECTORY_HEADER) {
      throw new ZipError('its central directory is broken.');
    }
    const flags = view.getUint16(at + 8, true);
    const nameLength = view.getUint16(at + 28, true);
    const entry: ZipEntry = {
      name: decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      method: view.getUint16(at + 10, true),
      compressedSize: view.getUint32(at + 20, true),
      localHeaderOffset: view.getUint32(at + 42, true),
    };
    if (flags & 1) throw new ZipError(`its ${entry.name} is encrypted.`);
    entries.set(entry.name, entry);
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return entries;
}

/**
 * An entry's bytes, inflated a piece at a time and counted as they come: the sizes an archive declares are not
 * believed, and inflating stops as soon as the entry passes `maxBytes` (a zip bomb inflates a thousandfold).
 *
 * @throws {@link ZipEntryTooLargeError} for an entry past `maxBytes`; {@link ZipError} for one broken, or compressed otherwise than by deflate.
 */
export async function readZipEntry(bytes: Uint8Array, entry: ZipEntry, maxBytes: number): Promise<Uint8Array> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const header = entry.localHeaderOffset;
  if (header + 30 > bytes.length || view.getUint32(header, true) !== LOCAL_FILE_HEADER) {
    throw new ZipError(`its ${entry.name} is out of bounds.`);
  }
  const start = header + 30 + view.getUint16(header + 26, true) + view.getUint16(header + 28, true);
  if (start + entry.compressedSize > bytes.length) throw new ZipError(`its ${entry.name} is out of bounds.`);
  const data = bytes.subarray(start, start + entry.compressedSize);
  const tooLarge = () => new ZipEntryTooLargeError(entry.name);
  if (entry.method === 0) {
    if (data.length > maxBytes) throw tooLarge();
    return data;
  }
  if (entry.method !== 8) throw new ZipError(`its ${entry.name} is compressed by method ${entry.method}, not deflate.`);

  const reader = new Blob([data.slice()]).stream().pipeThrough(new DecompressionStream('deflate-raw')).getReader();
  const inflated = await readAtMost(reader, maxBytes).catch((error: unknown) => {
    throw new ZipError(`its ${entry.name} does not inflate (${(error as Error).message}).`, { cause: error });
  });
  if (!inflated) throw tooLarge();
  return inflated;
}
