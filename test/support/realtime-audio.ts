import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { decodeWav, resample } from '../../src/audio/index.ts';

/** The Realtime API's audio: PCM16 little-endian mono at 24 kHz (`audio/pcm`). */
export const REALTIME_RATE = 24_000;

const FIXTURES = fileURLToPath(new URL('../fixtures/speech/', import.meta.url));
const MANIFEST: { file: string; text: string }[] = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, 'utf8'));

/** One of test/fixtures/speech's held-out clips (espeak-ng speech) as the Realtime API's audio, with what it says. */
export function realtimeClip(file: string): { pcm: Int16Array; text: string; seconds: number } {
  const decoded = decodeWav(new Uint8Array(readFileSync(`${FIXTURES}${file}`)));
  const pcm = toPcm16(resample(decoded.samples, decoded.sampleRate, REALTIME_RATE));
  return { pcm, text: MANIFEST.find((clip) => clip.file === file)!.text, seconds: pcm.length / REALTIME_RATE };
}

/** `seconds` of silence at 24 kHz: what makes server VAD see the end of speech. */
export const silence = (seconds: number) => new Int16Array(Math.round(seconds * REALTIME_RATE));

/** Samples in [-1, 1] as PCM16. */
export function toPcm16(samples: Float32Array): Int16Array {
  const pcm = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) pcm[i] = Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 0x7fff);
  return pcm;
}

/** PCM16 as the base64 of `input_audio_buffer.append`'s `audio` (little-endian, as Node and every browser hold it). */
export const pcmBase64 = (pcm: Int16Array) =>
  Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');

/** A `response.output_audio.delta`'s base64 audio as PCM16. */
export function base64Pcm(audio: string): Int16Array {
  const bytes = Buffer.from(audio, 'base64');
  return new Int16Array(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength - (bytes.byteLength % 2)),
  );
}

/** The root mean square of PCM16 samples, in [0, 1]: how loud, 0 for silence. */
export function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const sample of pcm) sum += (sample / 0x8000) ** 2;
  return pcm.length ? Math.sqrt(sum / pcm.length) : 0;
}
