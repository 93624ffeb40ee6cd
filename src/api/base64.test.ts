import { describe, expect, it } from 'vitest';
import { float32ToBase64 } from './base64.ts';

describe('float32ToBase64', () => {
  it('writes little-endian float32 in standard base64, as the openai SDK decodes it', () => {
    const vector = Float32Array.from([1, -2.5, 0.1, 3.4e38, -0, Number.MIN_VALUE]);
    const bytes = Buffer.from(float32ToBase64(vector), 'base64');
    const decoded = Array.from({ length: vector.length }, (_, i) => bytes.readFloatLE(i * 4));
    expect(decoded).toEqual(Array.from(vector));
    expect(float32ToBase64(Float32Array.from([1]))).toBe('AACAPw==');
  });

  it('encodes vectors longer than one String.fromCharCode call can take', () => {
    const vector = Float32Array.from({ length: 100_000 }, (_, i) => i / 7);
    const bytes = Buffer.from(float32ToBase64(vector), 'base64');
    expect(new Float32Array(Uint8Array.from(bytes).buffer)).toEqual(vector);
  });
});
