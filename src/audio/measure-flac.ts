/**
 * The length of a native FLAC file from its frames. A frame's header gives its block size but not its length (that
 * takes decoding its subframes), so every frame header in the file is counted: each sync code whose header is valid,
 * passes its CRC-8 and has the stream's channels and sample size, which a decoder demands of every frame it decodes.
 * STREAMINFO's total is a claim (0 means "unknown", and a decoder does not stop at it), so it is not read.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import type { AudioMeasure } from './audio-limits.ts';
import { flacFrameHeader, flacStreamInfo } from './packet-codecs.ts';

/** Whether the bytes at `at` are FLAC's `fLaC` marker. */
export const isFlacAt = (bytes: Uint8Array, at: number) =>
  bytes[at] === 0x66 && bytes[at + 1] === 0x4c && bytes[at + 2] === 0x61 && bytes[at + 3] === 0x43;

/**
 * Measures a native FLAC file whose `fLaC` marker is at `start` (after any ID3v2 tag).
 *
 * @example
 * measureFlac(bytes, 0); // { format: 'FLAC', sampleRate: 44100, channels: 2, seconds: 12.5 }
 */
export function measureFlac(bytes: Uint8Array, start: number): AudioMeasure {
  // Metadata blocks: a last-block flag and type, a 24-bit length; STREAMINFO comes first.
  let at = start + 4;
  let info: ReturnType<typeof flacStreamInfo> | undefined;
  for (let last = false; !last;) {
    if (at + 4 > bytes.length) throw new AudioDecodeError('The FLAC file is cut short in its metadata; send it whole.');
    last = (bytes[at]! & 0x80) !== 0;
    const type = bytes[at]! & 0x7f;
    const length = (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    if (type === 0) info = flacStreamInfo(bytes, at + 4);
    at += 4 + length;
  }
  if (!info) throw new AudioDecodeError('The FLAC file has no STREAMINFO block; send it as a FLAC encoder wrote it.');
  let samples = 0;
  for (at = bytes.indexOf(0xff, at); at >= 0; at = bytes.indexOf(0xff, at + 1)) {
    const frame = flacFrameHeader(bytes, at);
    if (!frame) continue;
    if (frame.channels !== info.channels || (frame.bits !== 0 && frame.bits !== info.bits)) continue;
    samples += frame.samples;
  }
  const { sampleRate, channels } = info;
  return { format: 'FLAC', sampleRate, channels, seconds: samples / sampleRate };
}
