/**
 * Byte chunks joined into one array, and a stream read into one within a limit: what request bodies, fetched images,
 * inflated zip entries, downloads and audio all do. A leaf that imports nothing, so that every layer may use it.
 */

/** The chunks one after another, in a new array of its own (offset 0, a buffer no one else holds). */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  let length = 0;
  for (const chunk of chunks) length += chunk.byteLength;
  const joined = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.byteLength;
  }
  return joined;
}

/**
 * Reads a stream to its end, or stops as soon as it passes `maxBytes` and answers undefined: what arrives is never held
 * past the limit, whatever the sender declared. The stream is cancelled wherever reading stops early: past the limit,
 * a read that failed, or `onBytes` throwing (the error goes on to the caller).
 *
 * @param onBytes - told the bytes read so far, after each chunk within the limit.
 */
export async function readAtMost(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  maxBytes: number,
  onBytes?: (size: number) => void,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        return undefined;
      }
      onBytes?.(size);
      chunks.push(read.value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  return concatBytes(chunks);
}
