/**
 * A RIFF/WAVE reader: the chunk walk that finds `fmt ` and `data`, and the sample decoders for every encoding WAV files
 * use in practice (integer PCM 8/16/24/32, IEEE float 32/64, G.711 A-law and µ-law, each also inside
 * WAVE_FORMAT_EXTENSIBLE). It runs anywhere (service worker, Node), unlike the browser's decoder, which only a window has.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkShape, type AudioMeasure } from './audio-limits.ts';

export interface DecodedAudio {
  /** Mono samples in [-1, 1]: the average of the file's channels. */
  samples: Float32Array;
  sampleRate: number;
  /** How many channels the file had before they were averaged. */
  channels: number;
  durationSeconds: number;
}

/** Where a WAV file keeps its samples and how they are written: what the header says, checked. */
interface WavLayout {
  encoding: 'pcm' | 'float' | 'alaw' | 'mulaw';
  channels: number;
  sampleRate: number;
  /** Bytes of one sample of one channel (the container size: 24-bit-in-32 counts 4). */
  bytesPerSample: number;
  /** Bytes of one frame: one sample of every channel. */
  frameBytes: number;
  dataOffset: number;
  /** Bytes of whole frames present: less than the header says when the file was cut short. */
  dataBytes: number;
}

const WAVE_FORMAT_PCM = 0x0001;
const WAVE_FORMAT_IEEE_FLOAT = 0x0003;
const WAVE_FORMAT_ALAW = 0x0006;
const WAVE_FORMAT_MULAW = 0x0007;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

const SEND_INSTEAD = 'send 16-bit PCM wav, or mp3, ogg, webm or m4a';

const ascii = (bytes: Uint8Array, at: number) =>
  String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);

/** Whether the bytes start as a WAV file does (`RIFF`, a size, `WAVE`): cheap, and says nothing of the rest. */
export function isWav(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && ascii(bytes, 0) === 'RIFF' && ascii(bytes, 8) === 'WAVE';
}

/**
 * Decodes a WAV file to mono samples at its own rate, averaging its channels. A data chunk cut short (a recording
 * stopped mid-write, a size left at 0 or 0xFFFFFFFF by a streaming writer) is read as far as it goes, as browsers do;
 * a header that is not WAV, or that names an encoding or size this reader does not know, throws AudioDecodeError.
 *
 * @example
 * const { samples, sampleRate } = decodeWav(new Uint8Array(await file.arrayBuffer()));
 * @see https://www.mmsp.ece.mcgill.ca/Documents/AudioFormats/WAVE/WAVE.html
 */
export function decodeWav(bytes: Uint8Array): DecodedAudio {
  const layout = readWavLayout(bytes);
  const frames = layout.dataBytes / layout.frameBytes;
  const samples = new Float32Array(frames);
  const view = new DataView(bytes.buffer, bytes.byteOffset + layout.dataOffset, layout.dataBytes);
  const read = sampleReader(layout, view, bytes.subarray(layout.dataOffset));
  const { channels, bytesPerSample, frameBytes } = layout;
  if (channels === 1) {
    for (let i = 0; i < frames; i++) samples[i] = read(i * frameBytes);
  } else {
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < channels; c++) sum += read(i * frameBytes + c * bytesPerSample);
      samples[i] = sum / channels;
    }
  }
  return { samples, sampleRate: layout.sampleRate, channels, durationSeconds: frames / layout.sampleRate };
}

/**
 * A WAV file's length and shape from its header alone: the frames its data chunk holds (as far as the file goes) at
 * the rate it names. Nothing is decoded or allocated; a rate or channel count no audio has throws AudioDecodeError.
 *
 * @example
 * checkMeasure(measureWav(bytes), 3600); // before decodeWav(bytes)
 */
export function measureWav(bytes: Uint8Array): AudioMeasure {
  const { sampleRate, channels, dataBytes, frameBytes } = readWavLayout(bytes);
  return { format: 'WAV', sampleRate, channels, seconds: dataBytes / frameBytes / sampleRate };
}

/** Walks the chunks for `fmt ` and `data`, skipping every other (LIST, fact, cue, bext…) and each odd size's pad byte. */
function readWavLayout(bytes: Uint8Array): WavLayout {
  if (!isWav(bytes)) {
    throw new AudioDecodeError(`The file is not a WAV file (no RIFF/WAVE header); ${SEND_INSTEAD}.`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let format: Omit<WavLayout, 'dataOffset' | 'dataBytes'> | undefined;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = ascii(bytes, offset);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + Math.max(size, 16) > bytes.length || size < 16) {
        throw new AudioDecodeError(
          `The WAV file's format chunk is cut short or too small (${size} bytes); ${SEND_INSTEAD}.`,
        );
      }
      format = readFormat(view, body, size);
    } else if (id === 'data') {
      if (!format) {
        throw new AudioDecodeError(`The WAV file's data comes before its format chunk; ${SEND_INSTEAD}.`);
      }
      // A size past the end (a cut-short file, or 0xFFFFFFFF from a writer that never came back to fill it in) and a
      // size of 0 with bytes after it (the same, from writers that start at 0) both mean: the rest of the file.
      const present = bytes.length - body;
      const declared = size === 0 ? present : Math.min(size, present);
      const dataBytes = declared - (declared % format.frameBytes);
      return { ...format, dataOffset: body, dataBytes };
    }
    offset = body + size + (size % 2);
  }
  throw new AudioDecodeError(
    format ? `The WAV file has no data chunk; ${SEND_INSTEAD}.` : `The WAV file has no format chunk; ${SEND_INSTEAD}.`,
  );
}

function readFormat(view: DataView, at: number, size: number): Omit<WavLayout, 'dataOffset' | 'dataBytes'> {
  let tag = view.getUint16(at, true);
  const channels = view.getUint16(at + 2, true);
  const sampleRate = view.getUint32(at + 4, true);
  const blockAlign = view.getUint16(at + 12, true);
  const bits = view.getUint16(at + 14, true);
  if (tag === WAVE_FORMAT_EXTENSIBLE) {
    if (size < 40) {
      throw new AudioDecodeError(
        `The WAV file's extensible format chunk is too small (${size} bytes); ${SEND_INSTEAD}.`,
      );
    }
    // The real format is the first two bytes of the SubFormat GUID (…-0000-0010-8000-00AA00389B71).
    tag = view.getUint16(at + 24, true);
  }
  if (channels === 0 || sampleRate === 0) {
    throw new AudioDecodeError(
      `The WAV header says ${channels} channels at ${sampleRate} Hz, which is not audio; ${SEND_INSTEAD}.`,
    );
  }
  // Before anything is sized by them: the length is the data's bytes over this rate, and the resampler's filter widens
  // with it (issue 41: a header saying 800 Hz made 25 MB of 8-bit samples 2.5 GB at 16 kHz).
  checkShape('WAV', sampleRate, channels);
  const encoding = encodingOf(tag, bits);
  // The container is what blockAlign says when it agrees with the bit depth (20-bit audio sits in 3 or 4 bytes);
  // otherwise what the bit depth implies, since some writers get blockAlign wrong.
  const minBytes = Math.ceil(bits / 8);
  const bytesPerSample =
    blockAlign % channels === 0 && blockAlign / channels >= minBytes ? blockAlign / channels : minBytes;
  if (encoding === 'pcm' ? bytesPerSample > 4 : bytesPerSample !== minBytes) {
    throw new AudioDecodeError(
      `The WAV file's samples are ${bits}-bit in ${bytesPerSample}-byte containers, which this reader does not know; ` +
        `${SEND_INSTEAD}.`,
    );
  }
  return { encoding, channels, sampleRate, bytesPerSample, frameBytes: bytesPerSample * channels };
}

function encodingOf(tag: number, bits: number): WavLayout['encoding'] {
  if (tag === WAVE_FORMAT_PCM && bits >= 1 && bits <= 32) return 'pcm';
  if (tag === WAVE_FORMAT_IEEE_FLOAT && (bits === 32 || bits === 64)) return 'float';
  if (tag === WAVE_FORMAT_ALAW && bits === 8) return 'alaw';
  if (tag === WAVE_FORMAT_MULAW && bits === 8) return 'mulaw';
  const name =
    {
      [WAVE_FORMAT_PCM]: 'PCM',
      [WAVE_FORMAT_IEEE_FLOAT]: 'float',
      0x0002: 'Microsoft ADPCM',
      0x0011: 'IMA ADPCM',
      0x0031: 'GSM 6.10',
      0x0055: 'MP3',
    }[tag] ?? `format 0x${tag.toString(16).padStart(4, '0')}`;
  throw new AudioDecodeError(
    `The WAV file holds ${bits}-bit ${name} audio, which cannot be decoded here; ${SEND_INSTEAD}.`,
  );
}

/** A function from a sample's byte offset in the data chunk to its value in [-1, 1]. */
function sampleReader(layout: WavLayout, view: DataView, data: Uint8Array): (at: number) => number {
  const size = layout.bytesPerSample;
  switch (layout.encoding) {
    case 'float':
      return size === 4 ? (at) => view.getFloat32(at, true) : (at) => view.getFloat64(at, true);
    case 'alaw':
      return (at) => ALAW[data[at]!]!;
    case 'mulaw':
      return (at) => MULAW[data[at]!]!;
    case 'pcm':
      switch (size) {
        case 1: // 8-bit WAV is unsigned, centred on 128.
          return (at) => (data[at]! - 128) / 128;
        case 2:
          return (at) => view.getInt16(at, true) / 0x8000;
        case 3:
          return (at) => (((data[at + 2]! << 24) | (data[at + 1]! << 16) | (data[at]! << 8)) >> 8) / 0x800000;
        default:
          return (at) => view.getInt32(at, true) / 0x80000000;
      }
  }
}

/** G.711 A-law and µ-law, expanded once into 256-entry tables (ITU-T G.711's decoders, scaled to [-1, 1]). */
const ALAW = Float32Array.from({ length: 256 }, (_, byte) => {
  const a = byte ^ 0x55;
  const exponent = (a >> 4) & 7;
  const mantissa = a & 0x0f;
  const magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  return ((a & 0x80 ? 1 : -1) * magnitude) / 0x8000;
});
const MULAW = Float32Array.from({ length: 256 }, (_, byte) => {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 7;
  const magnitude = ((((u & 0x0f) << 3) + 0x84) << exponent) - 0x84;
  return ((u & 0x80 ? -1 : 1) * magnitude) / 0x8000;
});
