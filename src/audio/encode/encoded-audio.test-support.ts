/**
 * Test helpers for the encoders: a signal whose content can be checked after a lossy codec (a sequence of pure tones),
 * and Debian's ffmpeg/ffprobe as the standard decoder that every format must satisfy.
 */
import { spawnSync } from 'node:child_process';

export const RATE = 24_000;
/** Each tone's length: long enough that a 100 ms window fits inside it after any codec's delay (mp3, AAC: ~50 ms). */
export const TONE_SECONDS = 0.25;
export const TONES = [440, 880, 1320, 660, 1760, 550, 990, 330];

/** 2 s of tones, one after another, at half scale (a lossy codec's overshoot stays below clipping). */
export function toneSequence(): Float32Array {
  const perTone = RATE * TONE_SECONDS;
  const samples = new Float32Array(perTone * TONES.length);
  TONES.forEach((frequency, index) => {
    for (let i = 0; i < perTone; i++) {
      samples[index * perTone + i] = 0.5 * Math.sin((2 * Math.PI * frequency * i) / RATE);
    }
  });
  return samples;
}

/** Splits `samples` into pushes of uneven sizes, as sentences come: a short first one, then longer ones. */
export function unevenPieces(samples: Float32Array): Float32Array[] {
  const sizes = [1000, 4800, 7000, 12_000];
  const pieces: Float32Array[] = [];
  for (let at = 0, i = 0; at < samples.length; i++) {
    const size = sizes[i % sizes.length]!;
    pieces.push(samples.subarray(at, at + size));
    at += size;
  }
  return pieces;
}

export const hasFfmpeg = ['ffmpeg', 'ffprobe'].every(
  (tool) => spawnSync(tool, ['-version'], { stdio: 'ignore' }).status === 0,
);

export interface Probed {
  codec: string;
  sampleRate: number;
  channels: number;
}

/** What ffprobe reads from the bytes: the first stream's codec, rate and channels. */
export function ffprobe(bytes: Uint8Array, inputFormat?: string): Probed {
  const args = ['-v', 'error', ...(inputFormat ? ['-f', inputFormat, '-ar', String(RATE), '-ac', '1'] : [])];
  const run = spawnSync('ffprobe', [...args, '-show_streams', '-of', 'json', '-i', 'pipe:0'], { input: bytes });
  if (run.status !== 0) throw new Error(`ffprobe failed: ${String(run.stderr)}`);
  const stream = (JSON.parse(String(run.stdout)) as { streams: Record<string, unknown>[] }).streams[0]!;
  return {
    codec: String(stream.codec_name),
    sampleRate: Number(stream.sample_rate),
    channels: Number(stream.channels),
  };
}

/** The bytes decoded by ffmpeg to mono s16 at 24 kHz (Opus decodes at 48 kHz: ffmpeg resamples it). */
export function ffmpegDecode(bytes: Uint8Array, inputFormat?: string): { samples: Int16Array; stderr: string } {
  const args = inputFormat ? ['-f', inputFormat, '-ar', String(RATE), '-ac', '1'] : [];
  const run = spawnSync(
    'ffmpeg',
    ['-v', 'error', ...args, '-i', 'pipe:0', '-f', 's16le', '-ac', '1', '-ar', String(RATE), 'pipe:1'],
    { input: bytes, maxBuffer: 64 << 20 },
  );
  if (run.status !== 0) throw new Error(`ffmpeg failed: ${String(run.stderr)}`);
  const out = run.stdout;
  return {
    samples: new Int16Array(out.buffer.slice(out.byteOffset, out.byteOffset + (out.byteLength & ~1))),
    stderr: String(run.stderr),
  };
}

/** The power of `frequency` in `samples` (Goertzel). */
function power(samples: Int16Array, frequency: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / RATE);
  let previous = 0;
  let beforePrevious = 0;
  for (const sample of samples) {
    const current = sample + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
}

/** For each tone, which of TONES dominates the 100 ms window at its middle in the decoded audio. */
export function dominantTones(samples: Int16Array): number[] {
  const perTone = RATE * TONE_SECONDS;
  const window = RATE * 0.1;
  return TONES.map((_, index) => {
    const start = index * perTone + (perTone - window) / 2;
    const slice = samples.subarray(start, start + window);
    let best = TONES[0]!;
    for (const frequency of TONES) if (power(slice, frequency) > power(slice, best)) best = frequency;
    return best;
  });
}

/** The input rate an Ogg Opus stream's OpusHead records (RFC 7845 §5.1), which ffprobe does not show. */
export function opusInputRate(bytes: Uint8Array): number {
  const text = new TextDecoder('latin1').decode(bytes.subarray(0, 200));
  const at = text.indexOf('OpusHead');
  if (at < 0) throw new Error('no OpusHead');
  return new DataView(bytes.buffer, bytes.byteOffset + at).getUint32(12, true);
}
