import { describe, expect, it } from 'vitest';
import { decodeWav } from '../decode-wav.ts';
import { encodeWav } from '../encode-wav.ts';
import { createPcmStream, floatToPcm16, streamingWavHeader } from './pcm-stream.ts';

describe('pcm and wav streams', () => {
  const samples = Float32Array.from({ length: 2400 }, (_, i) => Math.sin(i / 7) * 1.2); // clips beyond ±1

  it('writes the samples as encodeWav does, after the same header with sizes left unknown', () => {
    const whole = encodeWav(samples, 24_000);
    expect(floatToPcm16(samples)).toEqual(whole.subarray(44));
    const header = streamingWavHeader(24_000);
    const view = new DataView(header.buffer);
    expect([view.getUint32(4, true), view.getUint32(40, true)]).toEqual([0xffffffff, 0xffffffff]);
    expect(header.subarray(8, 40)).toEqual(whole.subarray(8, 40));
  });

  it('streams wav that decodeWav reads back whole, header with the first push', async () => {
    const stream = createPcmStream(24_000, true);
    const first = await stream.push(samples.subarray(0, 1000));
    expect(first).toHaveLength(2);
    const rest = [...(await stream.push(samples.subarray(1000))), ...(await stream.finish())];
    const bytes = new Uint8Array([...first, ...rest].flatMap((part) => [...part]));
    const decoded = decodeWav(bytes);
    expect(decoded.sampleRate).toBe(24_000);
    expect(decoded.samples.length).toBe(samples.length);
    expect(decoded).toEqual(decodeWav(encodeWav(samples, 24_000)));
  });

  it('answers just the header for a wav stream with no samples, and nothing for pcm', async () => {
    expect(await createPcmStream(24_000, true).finish()).toEqual([streamingWavHeader(24_000)]);
    expect(await createPcmStream(24_000, false).finish()).toEqual([]);
  });
});
