/**
 * The audio the Realtime wire carries: base64 text of PCM16 LE mono at 24 kHz, or G.711 µ-law / A-law at 8 kHz (one
 * byte a sample). The session works in PCM16 at 24 kHz throughout; these convert at its edges, and write the WAV the
 * transcription route reads.
 */
import { encodeWav } from '../audio/encode-wav.ts';
import { resample } from '../audio/resample.ts';
import type { AudioFormat } from './session-config.ts';

/** The session's own rate: OpenAI's PCM16 rate. */
export const SESSION_RATE = 24_000;
const G711_RATE = 8_000;

export function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let binary = '';
  const step = 0x8000; // String.fromCharCode's argument list stays well within engines' limits
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}

/** PCM16 little-endian bytes as samples (an odd trailing byte is dropped). */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const samples = new Int16Array(bytes.length >> 1);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true);
  return samples;
}

export function pcm16ToBytes(samples: Int16Array): Uint8Array {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
  return bytes;
}

export function pcm16ToFloat(samples: Int16Array): Float32Array {
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / 0x8000;
  return out;
}

export function floatToPcm16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const s = Math.max(-1, Math.min(1, samples[i]!));
    out[i] = Math.round(s < 0 ? s * 0x8000 : s * 0x7fff);
  }
  return out;
}

/** G.711 µ-law byte → linear PCM16 (ITU-T G.711). */
export function muLawDecode(byte: number): number {
  const u = ~byte & 0xff;
  const t = (((u & 0x0f) << 3) + 0x84) << ((u & 0x70) >> 4);
  return u & 0x80 ? 0x84 - t : t - 0x84;
}

/** Linear PCM16 → G.711 µ-law byte. */
export function muLawEncode(sample: number): number {
  const BIAS = 0x84;
  let s = Math.max(-32635, Math.min(32635, sample));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** G.711 A-law byte → linear PCM16. */
export function aLawDecode(byte: number): number {
  const a = byte ^ 0x55;
  const exponent = (a & 0x70) >> 4;
  let t = (a & 0x0f) << 4;
  t += exponent === 0 ? 8 : 0x108;
  if (exponent > 1) t <<= exponent - 1;
  return a & 0x80 ? t : -t;
}

/** Linear PCM16 → G.711 A-law byte. */
export function aLawEncode(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, sample));
  const sign = s >= 0 ? 0x80 : 0;
  if (s < 0) s = -s - 1;
  s >>= 3; // A-law codes 13 bits
  let exponent = 0;
  for (let v = s >> 5; v > 0 && exponent < 7; v >>= 1) exponent++;
  const mantissa = exponent === 0 ? (s >> 1) & 0x0f : (s >> exponent) & 0x0f;
  return (sign | (exponent << 4) | mantissa) ^ 0x55;
}

/** One `input_audio_buffer.append`'s bytes in `format` as PCM16 at 24 kHz. */
export function decodeInputAudio(bytes: Uint8Array, format: AudioFormat): Int16Array {
  if (format.type === 'audio/pcm') return pcm16FromBytes(bytes);
  const decode = format.type === 'audio/pcmu' ? muLawDecode : aLawDecode;
  const narrow = new Float32Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) narrow[i] = decode(bytes[i]!) / 0x8000;
  return floatToPcm16(resample(narrow, G711_RATE, SESSION_RATE));
}

/** PCM16 at 24 kHz as the bytes of `format` (what a `response.output_audio.delta` carries). */
export function encodeOutputAudio(samples: Int16Array, format: AudioFormat): Uint8Array {
  if (format.type === 'audio/pcm') return pcm16ToBytes(samples);
  const narrow = floatToPcm16(resample(pcm16ToFloat(samples), SESSION_RATE, G711_RATE));
  const encode = format.type === 'audio/pcmu' ? muLawEncode : aLawEncode;
  const bytes = new Uint8Array(narrow.length);
  for (let i = 0; i < narrow.length; i++) bytes[i] = encode(narrow[i]!);
  return bytes;
}

/** Bytes of `format` per millisecond of audio, to size output chunks and measure buffers. */
export function samplesToMs(samples: number, rate = SESSION_RATE): number {
  return (samples * 1000) / rate;
}

/** PCM16 at 24 kHz as a WAV file for `POST /v1/audio/transcriptions`. */
export function pcm16ToWav(samples: Int16Array): Uint8Array {
  return encodeWav(pcm16ToFloat(samples), SESSION_RATE);
}
