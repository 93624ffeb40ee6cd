/**
 * Audio files built for the tests of issue 41: WAV headers that lie, and compressed files made long by repeating the
 * real frames or packets of the fixtures in test/fixtures/speech/formats (see its README), as an attacker would.
 */
import { readFileSync } from 'node:fs';
import { concatBytes } from '../../src/bytes/byte-chunks.ts';

export const FORMATS_DIR = 'test/fixtures/speech/formats/';
export const formatBytes = (file: string): Uint8Array => Uint8Array.from(readFileSync(`${FORMATS_DIR}${file}`));

/**
 * A WAV file of `dataBytes` of PCM (silence) under a header saying `sampleRate`, `channels` and `bits`, as written:
 * nothing checks that the header is sensible.
 */
export function wavFile({
  sampleRate,
  channels = 1,
  bits = 8,
  dataBytes,
}: {
  sampleRate: number;
  channels?: number;
  bits?: number;
  dataBytes: number;
}): Uint8Array {
  const bytes = new Uint8Array(44 + dataBytes);
  const view = new DataView(bytes.buffer);
  const text = (at: number, value: string) => [...value].forEach((c, i) => (bytes[at + i] = c.charCodeAt(0)));
  const frame = channels * Math.ceil(bits / 8);
  text(0, 'RIFF');
  view.setUint32(4, 36 + dataBytes, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, channels, true);
  view.setUint32(24, sampleRate >>> 0, true);
  view.setUint32(28, (sampleRate * frame) >>> 0, true);
  view.setUint16(32, frame & 0xffff, true);
  view.setUint16(34, bits, true);
  text(36, 'data');
  view.setUint32(40, dataBytes, true);
  if (bits === 8) bytes.fill(128, 44); // 8-bit PCM is unsigned: 128 is silence
  return bytes;
}

/** `part` repeated until the whole is at least `bytes` long, after `prefix`. */
export function repeated(prefix: Uint8Array, part: Uint8Array, bytes: number): Uint8Array {
  const count = Math.ceil((bytes - prefix.length) / part.length);
  const out = new Uint8Array(prefix.length + count * part.length);
  out.set(prefix);
  for (let i = 0; i < count; i++) out.set(part, prefix.length + i * part.length);
  return out;
}

/**
 * An MP3 stream of low-rate.mp3's frames (8 kHz, 8 kbit/s: 72 ms of audio in 72 bytes, the most audio MP3 packs in a
 * byte) repeated to `bytes`: a file that decodes to `bytes` milliseconds.
 */
export function longMp3(bytes: number): Uint8Array {
  const file = formatBytes('low-rate.mp3');
  // The first 72-byte frame followed by another (the encoder's Info frame, longer, comes before them).
  let first = file.indexOf(0xff);
  while (!(file[first + 72] === 0xff && file[first + 144] === 0xff && file[first + 1] === file[first + 73])) {
    first = file.indexOf(0xff, first + 1);
  }
  return repeated(new Uint8Array(0), file.subarray(first, first + 72 * 16), bytes);
}

/** Ogg's CRC-32 (polynomial 0x04C11DB7, unreflected, initial 0), over a page with its CRC field zero. */
const OGG_CRC = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n << 24;
  for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
  return c >>> 0;
});

/**
 * An Ogg stream of `packets` (each under 255 bytes), 255 to a page, every page's granule position `granule` (a lie
 * the test can choose) and a valid CRC, so that a decoder would read it.
 */
export function oggStream(packets: Uint8Array[], granule: bigint, serial = 1): Uint8Array {
  const pages: Uint8Array[] = [];
  for (let first = 0, sequence = 0; first < packets.length; first += 255, sequence++) {
    const some = packets.slice(first, first + 255);
    const body = some.reduce((n, p) => n + p.length, 0);
    const page = new Uint8Array(27 + some.length + body);
    const view = new DataView(page.buffer);
    page.set([0x4f, 0x67, 0x67, 0x53]);
    page[5] = (first === 0 ? 2 : 0) | (first + 255 >= packets.length ? 4 : 0);
    view.setBigUint64(6, granule, true);
    view.setUint32(14, serial, true);
    view.setUint32(18, sequence, true);
    page[26] = some.length;
    let at = 27 + some.length;
    some.forEach((packet, i) => {
      page[27 + i] = packet.length;
      page.set(packet, at);
      at += packet.length;
    });
    let crc = 0;
    for (const byte of page) crc = ((crc << 8) ^ OGG_CRC[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
    view.setUint32(22, crc, true);
    pages.push(page);
  }
  return concatBytes(pages);
}

/** An OpusHead (RFC 7845 §5.1) for `channels` (mapping family 0 for one or two, 255 for more). */
export function opusHead(channels: number): Uint8Array {
  const family = channels > 2 ? 255 : 0;
  const head = new Uint8Array(family ? 21 + channels : 19);
  head.set([...'OpusHead'].map((c) => c.charCodeAt(0)));
  const view = new DataView(head.buffer);
  head[8] = 1;
  head[9] = channels;
  view.setUint16(10, 312, true);
  view.setUint32(12, 48_000, true);
  head[18] = family;
  if (family) {
    head[19] = channels;
    head[20] = 0;
    for (let c = 0; c < channels; c++) head[21 + c] = c;
  }
  return head;
}

/**
 * Ogg Opus that decodes to `seconds` though it is small: 2-byte packets of six 20 ms CELT frames (TOC code 3, frame
 * count 6, every frame empty, which a decoder conceals), 120 ms in 3 bytes with its lacing value (38 s a kilobyte);
 * every granule position says 0.
 */
export function longOggOpus(seconds: number): Uint8Array {
  const tags = Uint8Array.from([...'OpusTags'].map((c) => c.charCodeAt(0)).concat([0, 0, 0, 0, 0, 0, 0, 0]));
  const packet = Uint8Array.of((31 << 3) | 3, 6);
  const audio = Array.from({ length: Math.ceil(seconds / 0.12) }, () => packet);
  return oggStream([opusHead(1), tags, ...audio], 0n);
}

const crc = (bytes: Uint8Array, poly: number, width: 8 | 16) => {
  const top = 1 << (width - 1);
  const mask = (1 << width) - 1;
  let value = 0;
  for (const byte of bytes) {
    value ^= byte << (width - 8);
    for (let k = 0; k < 8; k++) value = value & top ? ((value << 1) ^ poly) & mask : (value << 1) & mask;
  }
  return value;
};

/**
 * A FLAC frame of 65,536 samples of silence in 13 bytes (RFC 9639: a header with a 16-bit block size and CRC-8, one
 * CONSTANT subframe of 16 bits, the frame's CRC-16), for a mono 16-bit stream: the most audio FLAC packs in a byte.
 */
export function silentFlacFrame(): Uint8Array {
  const header = Uint8Array.of(0xff, 0xf8, 0x70, 0x00, 0x00, 0xff, 0xff);
  const frame = Uint8Array.of(...header, crc(header, 0x07, 8), 0x00, 0x00, 0x00);
  const check = crc(frame, 0x8005, 16);
  return Uint8Array.of(...frame, check >> 8, check & 0xff);
}

/** codec.flac's `fLaC` marker and metadata blocks (STREAMINFO: 16 kHz, mono, 16-bit, 36,000 samples in all). */
export function flacMetadata(): Uint8Array {
  const file = formatBytes('codec.flac');
  let at = 4;
  for (let last = false; !last; at += 4 + ((file[at + 1]! << 16) | (file[at + 2]! << 8) | file[at + 3]!)) {
    last = (file[at]! & 0x80) !== 0;
  }
  return file.subarray(0, at);
}
