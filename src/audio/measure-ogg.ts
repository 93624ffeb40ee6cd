/**
 * The length of an Ogg file (Opus, Vorbis or FLAC) from its packets: every page's lacing values are read, each packet's
 * first bytes are gathered (across pages where it continues), and each is counted at what its codec decodes it to.
 * Granule positions are a claim that decoders do not obey (a last page saying "one second" does not stop the packets
 * before it from decoding to hours), so they are not read.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkTracks, type AudioMeasure } from './audio-limits.ts';
import { flacCodec, opusCodec, vorbisCodec, type PacketCodec } from './packet-codecs.ts';

/**
 * The first bytes of each packet gathered (across pages, where it continues): enough to tell a stream's codec from its
 * first packet (Ogg FLAC's, with STREAMINFO, is the longest at 51), and more than a codec reads to count one (16).
 */
const ID_PACKET_BYTES = 64;

/** Streams that are not audio, in files that also carry audio (`.ogv`): skipped. */
const NOT_AUDIO = ['\x80theora', 'fishead\0', '\x80kate', 'BBCD\0', 'OVP80'];

interface Stream {
  /** Undefined until the first packet is read; null for a stream that is not audio. */
  codec: PacketCodec | null | undefined;
  head: Uint8Array;
  headLength: number;
  /** Bytes of the packet being gathered; -1 between packets. */
  length: number;
  samples: number;
}

/** Whether the bytes start with an Ogg page's capture pattern. */
export const isOgg = (bytes: Uint8Array) =>
  bytes.length >= 4 && bytes[0] === 0x4f && bytes[1] === 0x67 && bytes[2] === 0x67 && bytes[3] === 0x53;

/**
 * Measures an Ogg file: the length of each audio stream, summed (a chained file plays one after the other). A stream
 * of a codec not read here (Speex) is refused.
 *
 * @example
 * measureOgg(bytes); // { format: 'Ogg Opus', sampleRate: 48000, channels: 1, seconds: 2.27 }
 */
export function measureOgg(bytes: Uint8Array): AudioMeasure {
  const streams = new Map<number, Stream>();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at + 27 <= bytes.length) {
    if (view.getUint32(at) !== 0x4f676753) {
      // Lost: decoders search on for the next capture pattern.
      at = nextPage(bytes, at + 1);
      continue;
    }
    const flags = bytes[at + 5]!;
    const serial = view.getUint32(at + 14, true);
    const segments = bytes[at + 26]!;
    let body = at + 27 + segments;
    if (body > bytes.length) break;
    let stream = streams.get(serial);
    if (!stream && flags & 2) {
      stream = { codec: undefined, head: new Uint8Array(ID_PACKET_BYTES), headLength: 0, length: -1, samples: 0 };
      streams.set(serial, stream);
      checkTracks('Ogg', streams.size);
    }
    // A page that does not continue a packet ends the one left unfinished, which a decoder drops; one that continues
    // a packet nobody started has its first segments dropped as well.
    let skipping = false;
    if (stream) {
      if (!(flags & 1)) stream.length = -1;
      else if (stream.length < 0) skipping = true;
    }
    for (let i = 0; i < segments; i++) {
      const lace = bytes[at + 27 + i]!;
      if (stream && !skipping) {
        if (stream.length < 0) {
          stream.length = 0;
          stream.headLength = 0;
        }
        // Byte by byte: at most ID_PACKET_BYTES a packet, and no view allocated for each of millions of packets.
        const take = Math.min(lace, stream.head.length - stream.headLength, bytes.length - body);
        for (let k = 0; k < take; k++) stream.head[stream.headLength++] = bytes[body + k]!;
        stream.length += lace;
      }
      body += lace;
      if (lace < 255) {
        if (stream && !skipping) packet(stream);
        skipping = false;
      }
    }
    at = body;
  }
  return total(streams.values());
}

function nextPage(bytes: Uint8Array, from: number): number {
  for (let at = bytes.indexOf(0x4f, from); at >= 0; at = bytes.indexOf(0x4f, at + 1)) {
    if (bytes[at + 1] === 0x67 && bytes[at + 2] === 0x67 && bytes[at + 3] === 0x53) return at;
  }
  return bytes.length;
}

function packet(stream: Stream): void {
  if (stream.codec === undefined) stream.codec = identify(stream.head.subarray(0, stream.headLength));
  // The head holds the packet's first ID_PACKET_BYTES, all a codec reads of it.
  else if (stream.codec) stream.samples += stream.codec.samples(stream.head, 0, stream.length);
  stream.length = -1;
}

/** A stream's codec from its first packet (RFC 7845 §5.1; Vorbis I §4.2.2; the Ogg FLAC mapping). */
function identify(head: Uint8Array): PacketCodec | null {
  const magic = String.fromCharCode(...head.subarray(0, 8));
  if (magic === 'OpusHead') {
    const codec = opusCodec(head);
    // The second packet, OpusTags, holds no audio.
    return { ...codec, samples: skipFirst(codec.samples) };
  }
  if (magic.startsWith('\x01vorbis')) return vorbisCodec(head);
  if (magic.startsWith('\x7fFLAC')) return flacCodec(head, 17);
  if (NOT_AUDIO.some((m) => magic.startsWith(m))) return null;
  const name = magic.startsWith('Speex') ? 'Speex' : `an unknown codec (${JSON.stringify(magic.replace(/\0/g, ''))})`;
  throw new AudioDecodeError(
    `The Ogg file holds ${name}, which is not read here; send Ogg Opus or Vorbis, mp3 or wav.`,
  );
}

function skipFirst(samples: PacketCodec['samples']): PacketCodec['samples'] {
  let first = true;
  return (bytes, at, length) => {
    if (!first) return samples(bytes, at, length);
    first = false;
    return 0;
  };
}

function total(streams: Iterable<Stream>): AudioMeasure {
  let measure: AudioMeasure | undefined;
  for (const { codec, samples } of streams) {
    if (!codec) continue;
    const seconds = samples / codec.sampleRate;
    measure = measure
      ? {
          ...measure,
          sampleRate: Math.max(measure.sampleRate, codec.sampleRate),
          channels: Math.max(measure.channels, codec.channels),
          seconds: measure.seconds + seconds,
        }
      : { format: `Ogg ${codec.name}`, sampleRate: codec.sampleRate, channels: codec.channels, seconds };
  }
  if (!measure) throw new AudioDecodeError('The Ogg file holds no audio stream; send Ogg Opus or Vorbis, mp3 or wav.');
  return measure;
}
