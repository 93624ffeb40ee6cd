/**
 * Streaming encoders for `POST /v1/audio/speech`: mono samples in, the format's bytes out as soon as the encoder has
 * them, so the first sentence's audio reaches the listener while the rest is still being synthesised. Each format's
 * encoder (and mediabunny, for the three it muxes) is imported on first use, so realms that never speak load none.
 */
import { encoderPath, formatsWithoutOptional } from './encoder-paths.ts';
import { missingEncoder, type EncoderOptions } from './optional-encoders.ts';
import type { SpeechFormat } from './speech-formats.ts';
import { UnsupportedFormatError } from './unsupported-format-error.ts';

export { UnsupportedFormatError } from './unsupported-format-error.ts';
export type { EncoderOptions, LoadOptional } from './optional-encoders.ts';

export interface AudioStreamEncoder {
  /** Encodes the next mono samples in [-1, 1] at the encoder's rate; returns the bytes ready so far (may be none). */
  push(samples: Float32Array): Promise<Uint8Array[]>;
  /** Flushes and returns the last bytes; the encoder cannot be used after. */
  finish(): Promise<Uint8Array[]>;
  /** Frees native/wasm resources early (abort); safe after finish. */
  close(): void;
}

/**
 * A streaming encoder of mono audio at `sampleRate` (24 000 for speech, OpenAI's rate) into `format`. Rejects with
 * UnsupportedFormatError where the format needs an optional package that `options.loadOptional` cannot import.
 *
 * @example
 * const encoder = await createAudioEncoder('opus', 24_000);
 * for await (const sentence of sentences) for (const bytes of await encoder.push(sentence)) send(bytes);
 * for (const bytes of await encoder.finish()) send(bytes);
 */
export async function createAudioEncoder(
  format: SpeechFormat,
  sampleRate: number,
  options?: EncoderOptions,
): Promise<AudioStreamEncoder> {
  if (!Number.isInteger(sampleRate) || sampleRate <= 0) {
    throw new RangeError(`The sample rate must be a positive whole number of hertz, not ${sampleRate}.`);
  }
  switch (format) {
    case 'pcm':
    case 'wav':
      return (await import('./pcm-stream.ts')).createPcmStream(sampleRate, format === 'wav');
    case 'flac':
      return (await import('./flac-stream.ts')).createFlacStream(sampleRate);
    case 'opus':
      return (await import('./opus-stream.ts')).createOpusStream(sampleRate);
    case 'aac':
      return (await import('./aac-stream.ts')).createAacStream(sampleRate, options);
    case 'mp3':
      return (await import('./mp3-stream.ts')).createMp3Stream(sampleRate, options);
  }
}

/**
 * Whether `format` can be encoded in this realm: true, or why not (what to install, which formats work without it).
 * Cheap enough to ask before any model loads: it imports the optional package a format needs, and no encoder.
 *
 * @example
 * const available = await encoderAvailable(body.response_format);
 * if (available !== true) return badRequest(available, 'response_format');
 */
export async function encoderAvailable(
  format: SpeechFormat,
  options?: EncoderOptions & { sampleRate?: number },
): Promise<true | string> {
  const sampleRate = options?.sampleRate ?? 24_000;
  const path = await encoderPath(format, sampleRate, options);
  if (path !== 'optional-missing') return true;
  const name = format === 'mp3' ? 'wasm-media-encoders' : '@mediabunny/aac-encoder';
  return missingEncoder(name, await formatsWithoutOptional(sampleRate)).message;
}

/** The refusal `createAudioEncoder` would give, as an error, for a route that prefers to throw. */
export async function assertEncoderAvailable(
  format: SpeechFormat,
  options?: EncoderOptions & { sampleRate?: number },
): Promise<void> {
  const available = await encoderAvailable(format, options);
  if (available !== true) throw new UnsupportedFormatError(format, available);
}
