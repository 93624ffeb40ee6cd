/**
 * The length of an MPEG audio stream (MP3, and MP2 and MP1 alike) or an ADTS AAC stream, by walking every frame header:
 * each says what it decodes to and how long it is, so the walk skips from one to the next and, where the next is not
 * where it should be, searches on for a frame as decoders do. A Xing or VBRI header's frame count is a claim, and a
 * decoder does not obey it; the frames themselves are what it decodes.
 */
import type { AudioMeasure } from './audio-limits.ts';
import { adtsFrame, mpegFrame, type StreamFrame } from './packet-codecs.ts';

/** How far into a file (after its ID3 tags) the first frame is looked for: decoders skip junk before it, as far. */
const SYNC_SEARCH_BYTES = 64 * 1024;
/** Frames in a row, each where the one before ends, that make a file MPEG audio rather than bytes that look like it. */
const FRAMES_TO_SYNC = 3;

/** Where the audio starts after any ID3v2 tags (10 bytes of header, a syncsafe size, an optional 10-byte footer). */
export function afterId3(bytes: Uint8Array): number {
  let at = 0;
  while (at + 10 <= bytes.length && bytes[at] === 0x49 && bytes[at + 1] === 0x44 && bytes[at + 2] === 0x33) {
    const size = (bytes[at + 6]! << 21) | (bytes[at + 7]! << 14) | (bytes[at + 8]! << 7) | bytes[at + 9]!;
    at += 10 + size + (bytes[at + 5]! & 0x10 ? 10 : 0);
  }
  return at;
}

/**
 * Measures an MPEG audio or ADTS stream; undefined where no run of frames starts within SYNC_SEARCH_BYTES of its start
 * (it is not one). All frames are counted at the lowest rate any of them has: a decoder writes every frame's samples at
 * one rate, and a stream that changes rate must not be counted short.
 *
 * @example
 * measureMpegAudio(bytes); // { format: 'MP3', sampleRate: 44100, channels: 2, seconds: 187.4 }
 */
export function measureMpegAudio(bytes: Uint8Array): AudioMeasure | undefined {
  const start = afterId3(bytes);
  let first: StreamFrame | undefined;
  let at = start;
  const limit = Math.min(bytes.length, start + SYNC_SEARCH_BYTES);
  for (; at < limit; at = next(bytes, at)) {
    first = frameAt(bytes, at);
    if (first && chained(bytes, at, first.kind)) break;
    first = undefined;
  }
  if (!first) return undefined;
  const { kind } = first;
  // Only the stream's own kind from here: junk between frames costs one parser's first checks a byte, not two.
  const parse = kind === 'AAC' ? adtsFrame : mpegFrame;
  let samples = 0;
  let sampleRate = first.sampleRate;
  let channels = first.channels;
  while (at < bytes.length) {
    const frame = parse(bytes, at);
    if (!frame || frame.kind !== kind) {
      at = next(bytes, at);
      continue;
    }
    samples += frame.samples;
    sampleRate = Math.min(sampleRate, frame.sampleRate);
    channels = Math.max(channels, frame.channels);
    at += frame.length;
  }
  return { format: kind, sampleRate, channels, seconds: samples / sampleRate };
}

const frameAt = (bytes: Uint8Array, at: number) => mpegFrame(bytes, at) ?? adtsFrame(bytes, at);

/** The next place a frame may start: the next 0xFF byte. */
function next(bytes: Uint8Array, at: number): number {
  const found = bytes.indexOf(0xff, at + 1);
  return found < 0 ? bytes.length : found;
}

/** Whether FRAMES_TO_SYNC frames of one kind follow each other from `at` (or run to the end of the file). */
function chained(bytes: Uint8Array, at: number, kind: StreamFrame['kind']): boolean {
  for (let n = 0; n < FRAMES_TO_SYNC; n++) {
    if (at >= bytes.length) return n > 0;
    const frame = frameAt(bytes, at);
    if (!frame || frame.kind !== kind) return false;
    at += frame.length;
  }
  return true;
}
