/**
 * The length of an MP4 / M4A / MOV file's audio from its sample tables: every sample of each audio track is found
 * (stsz, stsc and stco for a whole file; moof and trun for a fragmented one, as Safari's MediaRecorder writes) and
 * counted at what its codec decodes it to. The durations in mvhd, mdhd and stts are claims a decoder does not obey,
 * and are not read. A sample table can name the same bytes many times over (a constant size, one chunk offset), so
 * the samples must fit in the file's bytes, as real ones do: that bounds the walk, too.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkTracks, type AudioMeasure } from './audio-limits.ts';
import { aacCodec, aacCodecOf, alacCodec, flacCodec, mpegCodec, opusCodec, type PacketCodec } from './packet-codecs.ts';

interface Box {
  type: string;
  /** Where the box's header starts. */
  at: number;
  /** Where its body starts and ends. */
  start: number;
  end: number;
}

interface Track {
  id: number;
  codec: PacketCodec;
  stbl: Box;
  /** Edits that play media (an edit list can play the same samples more than once). */
  edits: number;
  samples: number;
}

/** Box types that may open an MP4 file (ISO/IEC 14496-12; QuickTime files may start with any of these). */
const FIRST_BOXES = new Set(['ftyp', 'moov', 'mdat', 'free', 'skip', 'wide', 'pnot']);

/** Whether the bytes start as an MP4 / QuickTime file does: a box of a type such files open with. */
export const isMp4 = (bytes: Uint8Array) => bytes.length >= 8 && FIRST_BOXES.has(fourcc(bytes, 4));

/**
 * Measures an MP4 file's longest audio track (a decoder plays one of them).
 *
 * @example
 * measureMp4(bytes); // { format: 'MP4 AAC', sampleRate: 44100, channels: 2, seconds: 31.2 }
 */
export function measureMp4(bytes: Uint8Array): AudioMeasure {
  const file = new Mp4(bytes);
  const moov = file.first(0, bytes.length, 'moov');
  if (!moov) {
    throw new AudioDecodeError(
      'The MP4 file has no moov box (it was cut short, or is still being written); send it whole.',
    );
  }
  const tracks = new Map<number, Track>();
  const defaultSizes = new Map<number, number>();
  for (const box of file.boxes(moov.start, moov.end)) {
    if (box.type === 'trak') {
      const track = file.track(box);
      if (track) tracks.set(track.id, track);
      checkTracks('MP4', tracks.size);
    } else if (box.type === 'mvex') {
      for (const trex of file.boxes(box.start, box.end)) {
        if (trex.type === 'trex') defaultSizes.set(file.u32(trex.start + 4), file.u32(trex.start + 16));
      }
    }
  }
  if (tracks.size === 0) throw new AudioDecodeError('The MP4 file holds no audio track; send one with sound.');
  for (const track of tracks.values()) file.tableSamples(track);
  for (const box of file.boxes(0, bytes.length)) {
    if (box.type === 'moof') file.fragmentSamples(box, tracks, defaultSizes);
  }
  let longest: AudioMeasure | undefined;
  for (const { codec, samples, edits } of tracks.values()) {
    const seconds = (samples / codec.sampleRate) * Math.max(1, edits);
    if (!longest || seconds > longest.seconds) {
      longest = { format: `MP4 ${codec.name}`, sampleRate: codec.sampleRate, channels: codec.channels, seconds };
    }
  }
  return longest!;
}

const fourcc = (bytes: Uint8Array, at: number) =>
  String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);

/** A file's boxes and tables, and the count of bytes its samples take, which may not pass the file's. */
class Mp4 {
  readonly #view: DataView;
  /** Bytes the samples counted so far take (a sample outside the file, or of no bytes, counts one). */
  #spent = 0;

  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  u32(at: number): number {
    return at + 4 <= this.bytes.length ? this.#view.getUint32(at) : 0;
  }

  u64(at: number): number {
    return this.u32(at) * 2 ** 32 + this.u32(at + 4);
  }

  *boxes(from: number, to: number): Generator<Box> {
    for (let at = from; at + 8 <= to;) {
      let size = this.u32(at);
      let header = 8;
      if (size === 1) {
        size = this.u64(at + 8);
        header = 16;
      } else if (size === 0) size = to - at;
      if (size < header) return;
      yield { type: fourcc(this.bytes, at + 4), at, start: at + header, end: Math.min(at + size, to) };
      at += size;
    }
  }

  /** The first box of `type` between `from` and `to`. */
  first(from: number, to: number, type?: string): Box | undefined {
    for (const box of this.boxes(from, to)) if (type === undefined || box.type === type) return box;
    return undefined;
  }

  child(box: Box | undefined, ...path: string[]): Box | undefined {
    for (const type of path) box = box && this.first(box.start, box.end, type);
    return box;
  }

  /** An audio track (`soun`) with its codec; undefined for other tracks. */
  track(trak: Box): Track | undefined {
    const hdlr = this.child(trak, 'mdia', 'hdlr');
    if (!hdlr || fourcc(this.bytes, hdlr.start + 8) !== 'soun') return undefined;
    const stbl = this.child(trak, 'mdia', 'minf', 'stbl');
    const stsd = this.child(stbl, 'stsd');
    if (!stbl || !stsd) return undefined;
    const tkhd = this.child(trak, 'tkhd');
    const id = tkhd ? this.u32(tkhd.start + (this.bytes[tkhd.start] === 1 ? 20 : 12)) : 0;
    const entry = this.first(stsd.start + 8, stsd.end);
    if (!entry) return undefined;
    return { id, codec: this.codec(entry), stbl, edits: this.edits(trak), samples: 0 };
  }

  /** The codec of a sample entry (ISO/IEC 14496-12 AudioSampleEntry, QuickTime's versions 1 and 2). */
  codec(entry: Box): PacketCodec {
    const at = entry.start;
    const version = this.#view.getUint16(at + 8);
    const channels = this.#view.getUint16(at + 16);
    const rate = version === 2 ? this.#view.getFloat64(at + 32) : this.u32(at + 24) / 65536;
    const children = { ...entry, start: at + 28 + (version === 1 ? 16 : version === 2 ? 36 : 0) };
    switch (entry.type) {
      case 'mp4a': {
        const esds = this.child(children, 'esds') ?? this.child(children, 'wave', 'esds');
        const config = esds && this.decoderConfig(esds);
        if (!config) break;
        if (config.type === 0x69 || config.type === 0x6b) return mpegCodec(rate, channels);
        if ([0x40, 0x66, 0x67, 0x68].includes(config.type)) {
          return config.specific ? aacCodec(config.specific) : aacCodecOf(rate, channels);
        }
        throw new AudioDecodeError(
          `The MP4 file's audio is MPEG-4 object type 0x${config.type.toString(16)}, which is not read here; send AAC.`,
        );
      }
      case '.mp3':
        return mpegCodec(rate, channels);
      case 'Opus': {
        const dOps = this.child(children, 'dOps');
        if (dOps) return opusCodec(this.bytes.subarray(dOps.start, dOps.end), 0);
        break;
      }
      case 'fLaC': {
        const dfLa = this.child(children, 'dfLa');
        if (dfLa) return flacCodec(this.bytes.subarray(0, dfLa.end), dfLa.start + 8);
        break;
      }
      case 'alac': {
        const alac = this.child(children, 'alac');
        if (alac) return alacCodec(this.bytes.subarray(0, alac.end), alac.start + 4);
        break;
      }
      default:
        throw new AudioDecodeError(
          `The MP4 file's audio is coded as '${entry.type}', which is not read here; send AAC (m4a), mp3, ogg or wav.`,
        );
    }
    throw new AudioDecodeError(`The MP4 file's '${entry.type}' audio has no decoder configuration; send it whole.`);
  }

  /** The object type and DecoderSpecificInfo of an esds box's ES_Descriptor (ISO/IEC 14496-1 §7.2.6). */
  decoderConfig(esds: Box): { type: number; specific?: Uint8Array } | undefined {
    const es = this.descriptor(esds.start + 4, esds.end);
    if (!es || es.tag !== 3) return undefined;
    const flags = this.bytes[es.start + 2]!;
    let at = es.start + 3 + (flags & 0x80 ? 2 : 0);
    if (flags & 0x40) at += 1 + this.bytes[at]!;
    if (flags & 0x20) at += 2;
    for (let d = this.descriptor(at, es.end); d; d = this.descriptor(d.end, es.end)) {
      if (d.tag !== 4) continue;
      const type = this.bytes[d.start]!;
      for (let s = this.descriptor(d.start + 13, d.end); s; s = this.descriptor(s.end, d.end)) {
        if (s.tag === 5) return { type, specific: this.bytes.subarray(s.start, s.end) };
      }
      return { type };
    }
    return undefined;
  }

  /** A descriptor's tag and body: its length is up to four bytes of seven bits. */
  descriptor(at: number, end: number): { tag: number; start: number; end: number } | undefined {
    if (at + 2 > end) return undefined;
    const tag = this.bytes[at]!;
    let length = 0;
    let p = at + 1;
    for (let i = 0; i < 4 && p < end; i++) {
      const byte = this.bytes[p++]!;
      length = length * 128 + (byte & 0x7f);
      if (!(byte & 0x80)) break;
    }
    return { tag, start: p, end: Math.min(p + length, end) };
  }

  /** Edits of an edit list that play media (media time other than -1). */
  edits(trak: Box): number {
    const elst = this.child(trak, 'edts', 'elst');
    if (!elst) return 0;
    const wide = this.bytes[elst.start] === 1;
    const count = this.u32(elst.start + 4);
    const size = wide ? 20 : 12;
    let playing = 0;
    for (let i = 0, at = elst.start + 8; i < count && at + size <= elst.end; i++, at += size) {
      const time = wide ? this.#view.getBigInt64(at + 8) : BigInt(this.#view.getInt32(at + 4));
      if (time !== -1n) playing++;
    }
    return playing;
  }

  /** Counts the samples of a whole (not fragmented) track: chunk by chunk, as stsc lays them out over stco. */
  tableSamples(track: Track): void {
    const stsz = this.child(track.stbl, 'stsz') ?? this.child(track.stbl, 'stz2');
    const stsc = this.child(track.stbl, 'stsc');
    const stco = this.child(track.stbl, 'stco') ?? this.child(track.stbl, 'co64');
    if (!stsz || !stsc || !stco) return;
    const sizeOf = this.sizes(stsz);
    const wide = stco.type === 'co64';
    const chunks = Math.min(this.u32(stco.start + 4), Math.floor((stco.end - stco.start - 8) / (wide ? 8 : 4)));
    const runs = Math.min(this.u32(stsc.start + 4), Math.floor((stsc.end - stsc.start - 8) / 12));
    let sample = 0;
    for (let chunk = 1, run = 0; chunk <= chunks && sample < sizeOf.count; chunk++) {
      while (run + 1 < runs && this.u32(stsc.start + 8 + (run + 1) * 12) <= chunk) run++;
      const perChunk = runs > 0 ? this.u32(stsc.start + 8 + run * 12 + 4) : 0;
      let offset = wide ? this.u64(stco.start + 8 + (chunk - 1) * 8) : this.u32(stco.start + 8 + (chunk - 1) * 4);
      for (let i = 0; i < perChunk && sample < sizeOf.count; i++, sample++) {
        const size = sizeOf.at(sample);
        this.count(track, offset, size);
        offset += size;
      }
    }
  }

  /** stsz (a constant size, or one per sample) or stz2 (4, 8 or 16 bits a sample). */
  sizes(box: Box): { count: number; at: (sample: number) => number } {
    const count = this.u32(box.start + 8);
    if (box.type === 'stsz') {
      const constant = this.u32(box.start + 4);
      if (constant) return { count, at: () => constant };
      return { count: Math.min(count, (box.end - box.start - 12) / 4), at: (i) => this.u32(box.start + 12 + i * 4) };
    }
    const bits = this.bytes[box.start + 7]!;
    const table = box.start + 12;
    const fits = Math.floor(((box.end - table) * 8) / Math.max(bits, 1));
    const at =
      bits === 4
        ? (i: number) => (this.bytes[table + (i >> 1)]! >> (i & 1 ? 0 : 4)) & 0x0f
        : bits === 8
          ? (i: number) => this.bytes[table + i]!
          : (i: number) => this.#view.getUint16(table + i * 2);
    return { count: [4, 8, 16].includes(bits) ? Math.min(count, fits) : 0, at };
  }

  /** Counts the samples of a movie fragment's track runs (ISO/IEC 14496-12 §8.8.7–8.8.8). */
  fragmentSamples(moof: Box, tracks: Map<number, Track>, defaultSizes: Map<number, number>): void {
    for (const traf of this.boxes(moof.start, moof.end)) {
      if (traf.type !== 'traf') continue;
      const tfhd = this.child(traf, 'tfhd');
      const track = tfhd && tracks.get(this.u32(tfhd.start + 4));
      if (!tfhd || !track) continue;
      const flags = this.u32(tfhd.start) & 0xffffff;
      let at = tfhd.start + 8;
      const base = flags & 0x01 ? this.u64(at) : moof.at;
      at += (flags & 0x01 ? 8 : 0) + (flags & 0x02 ? 4 : 0) + (flags & 0x08 ? 4 : 0);
      const defaultSize = flags & 0x10 ? this.u32(at) : (defaultSizes.get(track.id) ?? 0);
      let offset = base;
      for (const trun of this.boxes(traf.start, traf.end)) {
        if (trun.type !== 'trun') continue;
        const runFlags = this.u32(trun.start) & 0xffffff;
        const count = this.u32(trun.start + 4);
        let p = trun.start + 8;
        if (runFlags & 0x01) offset = base + this.#view.getInt32(p);
        p += (runFlags & 0x01 ? 4 : 0) + (runFlags & 0x04 ? 4 : 0);
        const durations = runFlags & 0x100 ? 4 : 0;
        const entry = durations + [0x200, 0x400, 0x800].filter((f) => runFlags & f).length * 4;
        for (let i = 0; i < count; i++, p += entry) {
          if (entry > 0 && p + entry > trun.end) break;
          const size = runFlags & 0x200 ? this.u32(p + durations) : defaultSize;
          this.count(track, offset, size);
          offset += size;
        }
      }
    }
  }

  /** One sample: counted at what its codec decodes it to, if it lies in the file; its bytes spent either way. */
  count(track: Track, offset: number, size: number): void {
    const inFile = offset + size <= this.bytes.length;
    if (inFile) track.samples += track.codec.samples(this.bytes, offset, size);
    this.#spent += inFile ? Math.max(size, 1) : 1;
    if (this.#spent > this.bytes.length) {
      throw new AudioDecodeError(
        "The MP4 file's sample tables name more samples than its bytes hold (samples overlap); send it as an encoder " +
          'wrote it.',
      );
    }
  }
}
