/**
 * The length of a WebM / Matroska file's audio from its blocks: the tracks are read first (codec, CodecPrivate, rate,
 * channels), then every SimpleBlock and Block of an audio track, unlacing the frames of each (Xiph, EBML or fixed
 * lacing), each frame counted at what its codec decodes it to. The segment's Duration is a claim a decoder does not
 * obey, and MediaRecorder leaves it out anyway (its segments and clusters have unknown sizes), so it is not read.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkTracks, type AudioMeasure } from './audio-limits.ts';
import {
  aacCodec,
  aacCodecOf,
  flacCodec,
  mpegCodec,
  opusCodec,
  pcmCodec,
  vorbisCodec,
  type PacketCodec,
} from './packet-codecs.ts';

/** Element IDs read (Matroska's specification, RFC 9559), with their length markers. */
const ID = {
  EBML: 0x1a45dfa3,
  DocType: 0x4282,
  Segment: 0x18538067,
  Cluster: 0x1f43b675,
  BlockGroup: 0xa0,
  Block: 0xa1,
  SimpleBlock: 0xa3,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  TrackNumber: 0xd7,
  TrackType: 0x83,
  CodecID: 0x86,
  CodecPrivate: 0x63a2,
  Audio: 0xe1,
  SamplingFrequency: 0xb5,
  Channels: 0x9f,
  BitDepth: 0x6264,
  ContentEncodings: 0x6d80,
};
/** Elements whose children are read in place: unknown sizes (live recordings) are allowed only on these. */
const MASTERS = new Set([ID.EBML, ID.Segment, ID.Cluster, ID.BlockGroup, ID.Tracks, ID.TrackEntry, ID.Audio]);
const AUDIO_TRACK = 2;
/** The TrackEntry children read. */
const TRACK_FIELDS = new Set([
  ID.TrackNumber,
  ID.TrackType,
  ID.CodecID,
  ID.CodecPrivate,
  ID.SamplingFrequency,
  ID.Channels,
  ID.BitDepth,
  ID.ContentEncodings,
]);

interface TrackEntry {
  number?: number;
  type?: number;
  codecId?: string;
  codecPrivate?: Uint8Array;
  sampleRate?: number;
  channels?: number;
  bitDepth?: number;
  encoded?: boolean;
}

/** Whether the bytes start with an EBML header (WebM, Matroska). */
export const isMatroska = (bytes: Uint8Array) =>
  bytes.length >= 4 && bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3;

/**
 * Measures a WebM or Matroska file's longest audio track (a decoder plays one of them).
 *
 * @example
 * measureMatroska(bytes); // { format: 'WebM Opus', sampleRate: 48000, channels: 1, seconds: 2.27 }
 */
export function measureMatroska(bytes: Uint8Array): AudioMeasure {
  const entries: TrackEntry[] = [];
  let docType = '';
  walk(bytes, (id, start, end) => {
    if (id === ID.DocType && end >= 0)
      docType = String.fromCharCode(...bytes.subarray(start, Math.min(end, start + 16)));
    if (id === ID.TrackEntry) {
      entries.push({});
      checkTracks('WebM', entries.length);
    }
    const entry = entries.at(-1);
    if (!entry || end < 0 || !TRACK_FIELDS.has(id)) return;
    const body = bytes.subarray(start, end);
    if (id === ID.TrackNumber) entry.number = uint(body);
    else if (id === ID.TrackType) entry.type = uint(body);
    else if (id === ID.CodecID) entry.codecId = String.fromCharCode(...body.subarray(0, 64)).replace(/\0+$/, '');
    else if (id === ID.CodecPrivate) entry.codecPrivate = body;
    else if (id === ID.SamplingFrequency) entry.sampleRate = float(body);
    else if (id === ID.Channels) entry.channels = uint(body);
    else if (id === ID.BitDepth) entry.bitDepth = uint(body);
    else entry.encoded = true; // ContentEncodings
  });
  const tracks = new Map<number, { codec: PacketCodec; samples: number }>();
  for (const entry of entries) {
    if (entry.type === AUDIO_TRACK && entry.number !== undefined) {
      tracks.set(entry.number, { codec: codecOf(entry), samples: 0 });
    }
  }
  if (tracks.size === 0) throw new AudioDecodeError('The WebM file holds no audio track; send one with sound.');
  walk(bytes, (id, start, end) => {
    if ((id === ID.SimpleBlock || id === ID.Block) && end >= 0) countBlock(bytes, start, end, tracks);
  });
  let longest: AudioMeasure | undefined;
  for (const { codec, samples } of tracks.values()) {
    const seconds = samples / codec.sampleRate;
    if (!longest || seconds > longest.seconds) {
      const format = `${docType.startsWith('webm') ? 'WebM' : 'Matroska'} ${codec.name}`;
      longest = { format, sampleRate: codec.sampleRate, channels: codec.channels, seconds };
    }
  }
  return longest!;
}

/**
 * Calls `visit(id, start, end)` for every element it reaches, reading the children of MASTERS in place and skipping
 * every other element by its size (`end` is -1 for an unknown size, which only masters may have). Where the bytes stop
 * making elements, it searches on for the next Cluster, as demuxers do.
 */
function walk(bytes: Uint8Array, visit: (id: number, start: number, end: number) => void): void {
  for (let at = 0; at < bytes.length;) {
    const id = readId(bytes, at);
    const size = id && readSize(bytes, at + id.length);
    if (!id || !size) {
      at = nextCluster(bytes, at + 1);
      continue;
    }
    const start = at + id.length + size.length;
    const end = size.value < 0 ? -1 : Math.min(start + size.value, bytes.length);
    visit(id.value, start, end);
    if (MASTERS.has(id.value)) at = start;
    else if (end >= 0) at = end;
    else at = nextCluster(bytes, start);
  }
}

function nextCluster(bytes: Uint8Array, from: number): number {
  for (let at = bytes.indexOf(0x1f, from); at >= 0; at = bytes.indexOf(0x1f, at + 1)) {
    if (bytes[at + 1] === 0x43 && bytes[at + 2] === 0xb6 && bytes[at + 3] === 0x75) return at;
  }
  return bytes.length;
}

/** An element ID: one to four bytes, length marker kept. */
function readId(bytes: Uint8Array, at: number): { value: number; length: number } | undefined {
  const first = bytes[at] ?? 0;
  const length = Math.clz32(first) - 23;
  if (length < 1 || length > 4 || at + length > bytes.length) return undefined;
  let value = 0;
  for (let i = 0; i < length; i++) value = value * 256 + bytes[at + i]!;
  return { value, length };
}

/** A variable-size integer: one to eight bytes, marker dropped; all ones means "unknown" (-1). */
function readSize(bytes: Uint8Array, at: number): { value: number; length: number } | undefined {
  const first = bytes[at] ?? 0;
  const length = Math.clz32(first) - 23;
  if (length < 1 || length > 8 || at + length > bytes.length) return undefined;
  let value = first & (0xff >> length);
  let ones = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    value = value * 256 + bytes[at + i]!;
    ones &&= bytes[at + i] === 0xff;
  }
  return { value: ones ? -1 : value, length };
}

const uint = (body: Uint8Array) => body.subarray(0, 8).reduce((value, byte) => value * 256 + byte, 0);

function float(body: Uint8Array): number {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  return body.length === 4 ? view.getFloat32(0) : body.length === 8 ? view.getFloat64(0) : 0;
}

/** A track's codec from its CodecID and CodecPrivate (Matroska's codec mappings). */
function codecOf(entry: TrackEntry): PacketCodec {
  const { codecId = '', codecPrivate, sampleRate = 8000, channels = 1 } = entry;
  if (entry.encoded) {
    throw new AudioDecodeError(
      "The WebM file's audio track is compressed or encrypted (ContentEncodings), which is not read here.",
    );
  }
  const missing = () => new AudioDecodeError(`The WebM file's ${codecId} track has no CodecPrivate; send it whole.`);
  if (codecId === 'A_OPUS') {
    if (!codecPrivate) throw missing();
    return opusCodec(codecPrivate);
  }
  if (codecId === 'A_VORBIS') {
    // Three headers, Xiph-laced: a count, the sizes of the first two, then the identification header first.
    if (!codecPrivate || codecPrivate[0] !== 2) throw missing();
    let at = 1;
    while (codecPrivate[at] === 255) at++;
    at++;
    while (codecPrivate[at] === 255) at++;
    return vorbisCodec(codecPrivate.subarray(at + 1));
  }
  if (codecId === 'A_FLAC') {
    if (!codecPrivate) throw missing();
    return flacCodec(codecPrivate, 8);
  }
  if (codecId === 'A_AAC' || codecId.startsWith('A_AAC/')) {
    return codecPrivate?.length ? aacCodec(codecPrivate) : aacCodecOf(sampleRate, channels);
  }
  if (/^A_MPEG\/L[123]$/.test(codecId)) return mpegCodec(sampleRate, channels);
  if (codecId.startsWith('A_PCM/')) return pcmCodec(sampleRate, channels, entry.bitDepth ?? 0);
  throw new AudioDecodeError(
    `The WebM file's audio is coded as ${codecId || 'an unnamed codec'}, which is not read here; send Opus or Vorbis ` +
      'in WebM, mp3 or wav.',
  );
}

/** A block's frames (RFC 9559 §10.3: no lacing, Xiph, fixed-size or EBML lacing), each counted by its codec. */
function countBlock(
  bytes: Uint8Array,
  start: number,
  end: number,
  tracks: Map<number, { codec: PacketCodec; samples: number }>,
): void {
  const number = readSize(bytes, start);
  const track = number && tracks.get(number.value);
  if (!number || !track) return;
  let at = start + number.length + 2;
  const lacing = ((bytes[at++] ?? 0) >> 1) & 3;
  const sizes: number[] = [];
  if (lacing !== 0) {
    const count = (bytes[at++] ?? 0) + 1;
    if (lacing === 1) {
      for (let i = 0; i < count - 1; i++) {
        let size = 0;
        for (let byte = 255; byte === 255 && at < end; size += byte) byte = bytes[at++]!;
        sizes.push(size);
      }
    } else if (lacing === 3) {
      let size = readSize(bytes, at);
      if (!size) return;
      at += size.length;
      sizes.push(size.value);
      for (let i = 1; i < count - 1; i++) {
        const delta = readSize(bytes, at);
        if (!delta) return;
        at += delta.length;
        size = { value: sizes.at(-1)! + delta.value - (2 ** (7 * delta.length - 1) - 1), length: 0 };
        sizes.push(size.value);
      }
    } else {
      const each = Math.floor((end - at) / count);
      for (let i = 0; i < count - 1; i++) sizes.push(each);
    }
  }
  const laced = sizes.reduce((sum, size) => sum + size, 0);
  if (sizes.some((size) => size < 0) || at + laced > end) return; // a block a demuxer drops
  sizes.push(end - at - laced);
  for (const size of sizes) {
    track.samples += track.codec.samples(bytes, at, size);
    at += size;
  }
}
