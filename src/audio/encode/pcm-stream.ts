/**
 * `pcm` and `wav`: containers, not codecs. Both write the samples as 16-bit little-endian PCM through the package's WAV
 * writer (`encodeWav`), so every format that carries s16 samples rounds them the same way.
 */
import { encodeWav } from '../encode-wav.ts';
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';

/** Bytes of the header `encodeWav` writes before the samples: RIFF, `fmt ` (16 bytes), `data`. */
const WAV_HEADER_BYTES = 44;

/** Size fields a streaming writer leaves unknown: as long as the stream goes (ffmpeg, browsers and decodeWav read on). */
const UNKNOWN_SIZE = 0xffffffff;

/** Samples in [-1, 1] (clipped beyond) as 16-bit little-endian PCM, rounded as `encodeWav` rounds them. */
export function floatToPcm16(samples: Float32Array): Uint8Array {
  return encodeWav(samples, 1).subarray(WAV_HEADER_BYTES);
}

/**
 * The header of a WAV stream of unknown length: mono, 16-bit, `sampleRate`, with the RIFF and data sizes at
 * 0xFFFFFFFF, as streaming servers (ffmpeg's `-f wav` to a pipe, OpenAI's own `wav`) write them.
 */
export function streamingWavHeader(sampleRate: number): Uint8Array {
  const header = encodeWav(new Float32Array(0), sampleRate).slice(0, WAV_HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(4, UNKNOWN_SIZE, true);
  view.setUint32(40, UNKNOWN_SIZE, true);
  return header;
}

/** Raw s16le (`pcm`), or the same after a streaming WAV header (`wav`): each push's samples come straight back. */
export function createPcmStream(sampleRate: number, header: boolean): AudioStreamEncoder {
  let pending: Uint8Array[] = header ? [streamingWavHeader(sampleRate)] : [];
  let open = true;
  const assertOpen = () => {
    if (!open) throw new Error(`The ${header ? 'wav' : 'pcm'} encoder is already finished.`);
  };
  return {
    async push(samples) {
      assertOpen();
      const out = pending;
      pending = [];
      if (samples.length > 0) out.push(floatToPcm16(samples));
      return out;
    },
    async finish() {
      assertOpen();
      open = false;
      // A stream that got no samples still answers a valid (empty) WAV file.
      const out = pending;
      pending = [];
      return out;
    },
    close() {
      open = false;
    },
  };
}
