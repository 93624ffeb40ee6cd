/** Bytes for the hand-written test files (PDFs, zip archives): compressed as their formats need, and joined. */

/** `data` compressed with `CompressionStream`: `deflate` for a PDF's `/FlateDecode`, `deflate-raw` for a zip entry. */
export async function compress(data: Uint8Array | string, format: 'deflate' | 'deflate-raw'): Promise<Uint8Array> {
  const bytes = typeof data === 'string' ? data : data.slice();
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream(format)) as ReadableStream<Uint8Array>;
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The parts one after another, in one array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}
