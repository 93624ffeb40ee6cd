/**
 * What one packet of each compressed codec decodes to, read from the packet's own first bytes (Opus' TOC byte, an
 * MPEG audio or FLAC frame header) or bounded by the codec's largest (a Vorbis long block, an AAC frame), and the
 * decoder's output rate and channels from the codec's setup (OpusHead, Vorbis' identification header, FLAC's
 * STREAMINFO, AAC's AudioSpecificConfig). The containers (Ogg, Matroska, MP4) hand their packets here, so a file's
 * length is summed from what a decoder will actually write, never taken from a header's total.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkShape } from './audio-limits.ts';

/** One track's codec: the decoder's output, and what each packet decodes to. */
export interface PacketCodec {
  /** `Opus`, `Vorbis`, `FLAC`, `AAC`, `MP3`, `ALAC`, `PCM`. */
  name: string;
  /** The rate the decoder writes at, Hz. */
  sampleRate: number;
  channels: number;
  /**
   * Sample frames (at `sampleRate`) the packet of `length` bytes at `at` in `bytes` decodes to, from at most its
   * first 16 bytes (FLAC's longest frame header), read in place (a file holds millions of packets). A packet the codec
   * cannot read is counted at the most one can decode to (a decoder may conceal it); a header or setup packet at 0.
   */
  samples(bytes: Uint8Array, at: number, length: number): number;
}

const ascii = (bytes: Uint8Array, at: number, length: number) =>
  String.fromCharCode(...bytes.subarray(at, at + length));
const u32le = (b: Uint8Array, at: number) =>
  (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
const u32be = (b: Uint8Array, at: number) =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

function cutShort(format: string): never {
  throw new AudioDecodeError(`The audio's ${format} setup is cut short or damaged; send wav, mp3, ogg, webm or m4a.`);
}

// Opus (RFC 6716 §3.1; Ogg RFC 7845, Matroska and MP4 carry the same packets) -------------------------------------

/** Opus always decodes at 48 kHz; a packet holds at most 120 ms. */
const OPUS_RATE = 48_000;
const OPUS_MAX_SAMPLES = 5760;

/**
 * An Opus track from its OpusHead (`OpusHead`, version, channels, ...: the Ogg ID header and Matroska's CodecPrivate)
 * or, for MP4's `dOps`, the same fields without the magic (`at` 0 there, 8 here).
 */
export function opusCodec(head: Uint8Array, at = 8): PacketCodec {
  if (head.length < at + 11) cutShort('Opus');
  const channels = head[at + 1]!;
  checkShape('Opus', OPUS_RATE, channels);
  return { name: 'Opus', sampleRate: OPUS_RATE, channels, samples: opusPacketSamples };
}

/** Frame sizes of the TOC byte's 32 configurations, in 48 kHz samples: SILK 10–60 ms, hybrid 10–20, CELT 2.5–20. */
const OPUS_FRAME = [
  ...[480, 960, 1920, 2880, 480, 960, 1920, 2880, 480, 960, 1920, 2880], // SILK: narrow, medium, wide band
  ...[480, 960, 480, 960], // hybrid: super-wide, full band
  ...[120, 240, 480, 960, 120, 240, 480, 960, 120, 240, 480, 960, 120, 240, 480, 960], // CELT: four bands
];

/** One Opus packet's samples from its TOC byte and, for code 3, its frame count byte (RFC 6716 §3.1–3.2.5). */
export function opusPacketSamples(bytes: Uint8Array, at: number, length: number): number {
  // An empty packet is a lost one: the decoder conceals it, up to its largest.
  if (length === 0) return OPUS_MAX_SAMPLES;
  const toc = bytes[at]!;
  const frame = OPUS_FRAME[toc >> 3]!;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : length > 1 ? bytes[at + 1]! & 0x3f : 0;
  const samples = frames * frame;
  return frames === 0 || samples > OPUS_MAX_SAMPLES ? OPUS_MAX_SAMPLES : samples;
}

// Vorbis (Vorbis I specification §4.2.2) ---------------------------------------------------------------------------

/**
 * A Vorbis track from its identification header (`\x01vorbis`, version, channels, rate, bitrates, block sizes). Each
 * audio packet is counted at half its long block, the most one can add (a packet adds a quarter of the previous block
 * and a quarter of its own); which block a packet uses is in the setup header's modes, which only a full parse reads.
 */
export function vorbisCodec(id: Uint8Array): PacketCodec {
  if (id.length < 30 || id[0] !== 1 || ascii(id, 1, 6) !== 'vorbis') cutShort('Vorbis');
  const channels = id[11]!;
  const sampleRate = u32le(id, 12);
  checkShape('Vorbis', sampleRate, channels);
  const long = 1 << (id[28]! >> 4);
  const short = 1 << (id[28]! & 0x0f);
  if (!(short >= 64 && short <= long && long <= 8192)) cutShort('Vorbis');
  // Header packets have an odd first byte (types 1, 3, 5); audio packets an even one.
  return {
    name: 'Vorbis',
    sampleRate,
    channels,
    samples: (bytes, at, length) => (length > 0 && bytes[at]! & 1 ? 0 : long / 2),
  };
}

// FLAC (RFC 9639) --------------------------------------------------------------------------------------------------

/** The most samples a FLAC frame holds (a 16-bit block size, plus one). */
const FLAC_MAX_BLOCK = 65_536;

/** STREAMINFO's fields a decoder holds every frame to (RFC 9639 §8.2), from its 34 bytes at `at`. */
export function flacStreamInfo(bytes: Uint8Array, at: number): { sampleRate: number; channels: number; bits: number } {
  if (bytes.length < at + 34) cutShort('FLAC');
  const sampleRate = (bytes[at + 10]! << 12) | (bytes[at + 11]! << 4) | (bytes[at + 12]! >> 4);
  const channels = ((bytes[at + 12]! >> 1) & 7) + 1;
  const bits = (((bytes[at + 12]! & 1) << 4) | (bytes[at + 13]! >> 4)) + 1;
  checkShape('FLAC', sampleRate, channels);
  return { sampleRate, channels, bits };
}

/**
 * A FLAC track (Ogg FLAC, MP4's dfLa, Matroska) from STREAMINFO at `at`: each frame's block size, at the stream's
 * rate, which is the rate the decoder writes whatever a frame's header says.
 */
export function flacCodec(bytes: Uint8Array, at: number): PacketCodec {
  const { sampleRate, channels } = flacStreamInfo(bytes, at);
  return {
    name: 'FLAC',
    sampleRate,
    channels,
    // Packets that are not frames (Ogg FLAC's metadata blocks) hold no samples.
    samples: (bytes, at, length) =>
      length === 0 || bytes[at] !== 0xff ? 0 : (flacFrameHeader(bytes, at, at + length)?.samples ?? FLAC_MAX_BLOCK),
  };
}

/**
 * A FLAC frame header at `at` (sync, block size, rate, channels, sample size, coded number, CRC-8), checked as a
 * decoder checks it, reading no further than `end`; undefined where there is none. `bits` is 0 where the header defers
 * to STREAMINFO.
 */
export function flacFrameHeader(
  b: Uint8Array,
  at: number,
  end = b.length,
): { samples: number; channels: number; bits: number; length: number } | undefined {
  if (at + 6 > end || b[at] !== 0xff || (b[at + 1]! & 0xfe) !== 0xf8) return undefined;
  const sizeCode = b[at + 2]! >> 4;
  const rateCode = b[at + 2]! & 0x0f;
  const channelCode = b[at + 3]! >> 4;
  const depthCode = (b[at + 3]! >> 1) & 7;
  if (sizeCode === 0 || rateCode === 15 || channelCode > 10 || depthCode === 3 || b[at + 3]! & 1) return undefined;
  // The frame or sample number, UTF-8 coded: 1 to 7 bytes.
  let p = at + 4;
  const lead = b[p]!;
  const extra = lead < 0x80 ? 0 : lead >= 0xc0 && lead < 0xfe ? Math.clz32(~(lead << 24)) - 1 : -1;
  if (extra < 0) return undefined;
  for (let i = 1; i <= extra; i++) if (p + i >= end || (b[p + i]! & 0xc0) !== 0x80) return undefined;
  p += 1 + extra;
  let samples: number;
  if (sizeCode === 1) samples = 192;
  else if (sizeCode <= 5) samples = 576 << (sizeCode - 2);
  else if (sizeCode === 6) samples = (b[p++] ?? 0) + 1;
  else if (sizeCode === 7) samples = ((b[p++] ?? 0) << 8) + (b[p++] ?? 0) + 1;
  else samples = 256 << (sizeCode - 8);
  // A rate of its own (12–14) takes one or two bytes more; the decoder writes at the stream's rate all the same.
  p += rateCode === 12 ? 1 : rateCode >= 13 ? 2 : 0;
  if (p >= end || crc8(b, at, p) !== b[p]) return undefined;
  const channels = channelCode < 8 ? channelCode + 1 : 2;
  const bits = [0, 8, 12, 0, 16, 20, 24, 32][depthCode]!;
  return { samples, channels, bits, length: p + 1 - at };
}

const CRC8 = Uint8Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 0x80 ? ((c << 1) ^ 0x07) & 0xff : (c << 1) & 0xff;
  return c;
});

function crc8(b: Uint8Array, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = CRC8[crc ^ b[i]!]!;
  return crc;
}

// MPEG audio (ISO/IEC 11172-3, 13818-3; MPEG 2.5) and ADTS AAC (ISO/IEC 13818-7) ----------------------------------

const MPEG_RATES = [
  [11_025, 12_000, 8_000], // MPEG 2.5
  [],
  [22_050, 24_000, 16_000], // MPEG 2
  [44_100, 48_000, 32_000], // MPEG 1
];
/** kbit/s by [MPEG 1 ? 0 : 1][layer I, II, III][index]. */
const MPEG_BITRATES = [
  [
    [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  ],
  [
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  ],
];

/** A frame of an MPEG audio or ADTS stream: its length in bytes and what it decodes to. */
export interface StreamFrame {
  kind: 'MP1' | 'MP2' | 'MP3' | 'AAC';
  length: number;
  samples: number;
  sampleRate: number;
  channels: number;
}

/**
 * The MPEG audio frame header (layer I, II or III) at `at`, no further than `end`; undefined where there is none, or
 * where its bit rate is "free" (no length: such streams are refused by the walk as no frames).
 */
export function mpegFrame(b: Uint8Array, at: number, end = b.length): StreamFrame | undefined {
  if (at + 4 > end || b[at] !== 0xff || (b[at + 1]! & 0xe0) !== 0xe0) return undefined;
  const version = (b[at + 1]! >> 3) & 3;
  const layer = 4 - ((b[at + 1]! >> 1) & 3); // 1, 2, 3; 4 is reserved (ADTS writes it)
  const bitrateIndex = b[at + 2]! >> 4;
  const rateIndex = (b[at + 2]! >> 2) & 3;
  if (version === 1 || layer === 4 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return undefined;
  const sampleRate = MPEG_RATES[version]![rateIndex]!;
  const bitrate = MPEG_BITRATES[version === 3 ? 0 : 1]![layer - 1]![bitrateIndex]! * 1000;
  const padding = (b[at + 2]! >> 1) & 1;
  const samples = layer === 1 ? 384 : layer === 3 && version !== 3 ? 576 : 1152;
  const length =
    layer === 1
      ? (Math.floor((12 * bitrate) / sampleRate) + padding) * 4
      : Math.floor(((samples / 8) * bitrate) / sampleRate) + padding;
  const kind = (['MP1', 'MP2', 'MP3'] as const)[layer - 1]!;
  return { kind, length, samples, sampleRate, channels: b[at + 3]! >> 6 === 3 ? 1 : 2 };
}

/** AAC's sampling frequency table (ISO/IEC 14496-3 §1.6.3.4); 7,350 Hz is under MIN_SAMPLE_RATE and refused. */
const AAC_RATES = [
  96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350,
];
/** Channels of AAC's channel configurations 1–14 (0 means a program config element, which is not read). */
const AAC_CHANNELS = [0, 1, 2, 3, 4, 5, 6, 8, 0, 0, 0, 7, 8, 24, 8];

/** An ADTS frame header at `at`: one to four AAC frames of 1,024 samples. */
export function adtsFrame(b: Uint8Array, at: number): StreamFrame | undefined {
  if (at + 7 > b.length || b[at] !== 0xff || (b[at + 1]! & 0xf6) !== 0xf0) return undefined;
  const rateIndex = (b[at + 2]! >> 2) & 0x0f;
  const config = ((b[at + 2]! & 1) << 2) | (b[at + 3]! >> 6);
  const length = ((b[at + 3]! & 3) << 11) | (b[at + 4]! << 3) | (b[at + 5]! >> 5);
  if (rateIndex >= AAC_RATES.length || length < 7) return undefined;
  const { sampleRate, channels } = aacOutput(AAC_RATES[rateIndex]!, config);
  // Samples at the output rate: SBR doubles both the rate and the samples of a frame.
  const samples = 1024 * ((b[at + 6]! & 3) + 1) * (sampleRate / AAC_RATES[rateIndex]!);
  return { kind: 'AAC', length, samples, sampleRate, channels };
}

/**
 * What an AAC decoder writes for a core rate and channel configuration: SBR (HE-AAC, signalled or not) may double a
 * rate of 24 kHz or less, and PS may make mono stereo, so both are counted at the most they can be.
 */
function aacOutput(coreRate: number, config: number): { sampleRate: number; channels: number } {
  const channels = AAC_CHANNELS[config] ?? 0;
  if (channels === 0) {
    throw new AudioDecodeError(
      `The AAC audio's channel configuration (${config}) is not read here; send it as stereo or mono.`,
    );
  }
  checkShape('AAC', coreRate, channels);
  return { sampleRate: coreRate <= 24_000 ? coreRate * 2 : coreRate, channels: Math.max(channels, 2) };
}

/** Object types of the AAC family whose frames hold at most 1,024 core samples (ISO/IEC 14496-3 Table 1.1). */
const AAC_OBJECT_TYPES = new Set([1, 2, 3, 4, 5, 6, 7, 17, 19, 20, 22, 23, 29, 39]);
/** Object types 32–34: MPEG-1/2 layers I–III carried as MPEG-4 audio. */
const MPEG_OBJECT_TYPES = new Set([32, 33, 34]);

/** An AAC track from its AudioSpecificConfig (MP4's esds, Matroska's CodecPrivate): 1,024 core samples a packet. */
export function aacCodec(asc: Uint8Array): PacketCodec {
  const bits = new BitReader(asc);
  const objectType = () => {
    const type = bits.read(5);
    return type === 31 ? 32 + bits.read(6) : type;
  };
  const rate = () => {
    const index = bits.read(4);
    return index === 15 ? bits.read(24) : (AAC_RATES[index] ?? 0);
  };
  let type = objectType();
  const coreRate = rate();
  const config = bits.read(4);
  if (bits.overrun) cutShort('AAC');
  if (type === 5 || type === 29) {
    rate(); // the SBR rate: at most double the core's, which aacOutput counts
    type = objectType();
  }
  if (MPEG_OBJECT_TYPES.has(type)) return mpegCodec(coreRate, 2);
  if (!AAC_OBJECT_TYPES.has(type)) {
    throw new AudioDecodeError(`MPEG-4 audio of object type ${type} is not read here; send AAC, mp3, ogg or wav.`);
  }
  const { sampleRate, channels } = aacOutput(coreRate, config);
  const samples = 1024 * (sampleRate / coreRate);
  return { name: 'AAC', sampleRate, channels, samples: () => samples };
}

/** An AAC track known only by its rate and channels (Matroska's `A_AAC/...` without CodecPrivate). */
export function aacCodecOf(coreRate: number, channels: number): PacketCodec {
  checkShape('AAC', coreRate, channels);
  const sampleRate = coreRate <= 24_000 ? coreRate * 2 : coreRate;
  const samples = 1024 * (sampleRate / coreRate);
  return { name: 'AAC', sampleRate, channels: Math.max(channels, 2), samples: () => samples };
}

/** The longest an MPEG audio frame lasts: 1,152 samples at 16 kHz, or 576 at 8 kHz (72 ms). */
const MPEG_MAX_FRAME_SECONDS = 0.072;

/**
 * An MPEG audio track in a container (MP4's `.mp3` or esds type 0x69/0x6B, Matroska's A_MPEG/L3), at the rate the
 * track declares: each frame's samples from its header, stretched where the frame's own rate is lower.
 */
export function mpegCodec(sampleRate: number, channels: number): PacketCodec {
  checkShape('MP3', sampleRate, channels);
  return {
    name: 'MP3',
    sampleRate,
    channels: 2,
    samples: (bytes, at, length) => {
      const frame = mpegFrame(bytes, at, at + length);
      if (!frame) return Math.ceil(MPEG_MAX_FRAME_SECONDS * sampleRate);
      return Math.ceil((frame.samples * sampleRate) / Math.min(sampleRate, frame.sampleRate));
    },
  };
}

/** An ALAC track from its magic cookie (frame length, ..., channels, ..., rate): at most a frame length a packet. */
export function alacCodec(cookie: Uint8Array, at: number): PacketCodec {
  if (cookie.length < at + 24) cutShort('ALAC');
  const frameLength = u32be(cookie, at);
  const channels = cookie[at + 9]!;
  const sampleRate = u32be(cookie, at + 20);
  checkShape('ALAC', sampleRate, channels);
  return { name: 'ALAC', sampleRate, channels, samples: () => frameLength };
}

/** Integer or float PCM in a container (Matroska's A_PCM/...): a packet's bytes over a frame's. */
export function pcmCodec(sampleRate: number, channels: number, bitDepth: number): PacketCodec {
  checkShape('PCM', sampleRate, channels);
  if (![8, 16, 24, 32, 64].includes(bitDepth)) {
    throw new AudioDecodeError(`PCM of ${bitDepth} bits is not read here; send 16-bit PCM wav.`);
  }
  const frameBytes = (channels * bitDepth) / 8;
  return { name: 'PCM', sampleRate, channels, samples: (_, __, length) => Math.floor(length / frameBytes) };
}

/** Reads big-endian bit fields, as MPEG-4's descriptors write them; past the end it reads zeros and says so. */
class BitReader {
  #at = 0;
  overrun = false;
  constructor(private readonly bytes: Uint8Array) {}
  read(count: number): number {
    let value = 0;
    for (let i = 0; i < count; i++, this.#at++) {
      const byte = this.bytes[this.#at >> 3];
      if (byte === undefined) this.overrun = true;
      value = value * 2 + (((byte ?? 0) >> (7 - (this.#at & 7))) & 1);
    }
    return value;
  }
}
