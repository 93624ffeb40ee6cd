/**
 * What this realm would encode each speech format with, for a browser test to log and assert (and for diagnostics):
 * run it inside the engine worker (or any dedicated worker), where WebCodecs is exposed as it is to the encoders.
 */
import { encoderPath, webCodecsEncodes, WEBCODECS_CODECS, type EncoderPath } from './encoder-paths.ts';
import type { EncoderOptions } from './optional-encoders.ts';
import { SPEECH_FORMATS, type SpeechFormat } from './speech-formats.ts';

export interface EncoderProbe {
  /** The path each format takes here (see EncoderPath). */
  paths: Record<SpeechFormat, EncoderPath>;
  /**
   * `AudioEncoder.isConfigSupported` for each codec a browser might encode, mono at the rate; `null` where the realm
   * has no `AudioEncoder` (Node, service workers).
   */
  webCodecs: Record<keyof typeof WEBCODECS_CODECS, boolean> | null;
  sampleRate: number;
}

/**
 * Probes the realm's encoders: which path each format would take at `sampleRate` (24 kHz unless told), and WebCodecs'
 * answers. Imports the optional packages (through `options.loadOptional`) to see whether they are there.
 *
 * @example
 * const probe = await probeEncoders(); // { paths: { opus: 'webcodecs', mp3: 'optional-missing', … }, webCodecs: {…} }
 */
export async function probeEncoders(options?: EncoderOptions & { sampleRate?: number }): Promise<EncoderProbe> {
  const sampleRate = options?.sampleRate ?? 24_000;
  const entries = await Promise.all(
    SPEECH_FORMATS.map(async (format) => [format, await encoderPath(format, sampleRate, options)] as const),
  );
  let webCodecs: EncoderProbe['webCodecs'] = null;
  if (typeof AudioEncoder !== 'undefined') {
    const codecs = Object.entries(WEBCODECS_CODECS) as [keyof typeof WEBCODECS_CODECS, string][];
    webCodecs = Object.fromEntries(
      await Promise.all(codecs.map(async ([name, codec]) => [name, await webCodecsEncodes(codec, sampleRate)])),
    ) as Record<keyof typeof WEBCODECS_CODECS, boolean>;
  }
  return { paths: Object.fromEntries(entries) as Record<SpeechFormat, EncoderPath>, webCodecs, sampleRate };
}
