/** Bytes for the hand-written test files (PDFs, zip archives): compressed as their formats need. */

/** `data` compressed with `CompressionStream`: `deflate` for a PDF's `/FlateDecode`, `deflate-raw` for a zip entry. */
export async function compress(data: Uint8Array | string, format: 'deflate' | 'deflate-raw'): Promise<Uint8Array> {
  const bytes = typeof data === 'string' ? data : data.slice();
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream(format)) as ReadableStream<Uint8Array>;
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
