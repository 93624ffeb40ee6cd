/** A float32 vector as the openai SDK decodes `encoding_format: "base64"`: little-endian float32, standard base64. */
export function float32ToBase64(vector: Float32Array): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i]!, true);
  return bytesToBase64(bytes);
}

/** Bytes as standard base64 (speech's `speech.audio.delta` events, embeddings). */
export function bytesToBase64(bytes: Uint8Array): string {
  // String.fromCharCode over bounded slices: spreading a whole large array would overflow the argument limit.
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
