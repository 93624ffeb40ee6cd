/**
 * Which encoder each format takes in this realm, decided without loading any encoder: WebCodecs where the realm has it
 * and accepts the configuration (browsers' dedicated workers; never Node, never a service worker), else a WebAssembly
 * build that Lantern bundles, else an LGPL one loaded by name (LAME, Lantern's dependency; FFmpeg's AAC, the app's).
 */
import { loadOptionalEncoder, type EncoderOptions } from './optional-encoders.ts';
import type { SpeechFormat } from './speech-formats.ts';
import { UnsupportedFormatError } from './unsupported-format-error.ts';

/**
 * - `container`: Lantern writes the samples itself (`pcm`, `wav`: no codec);
 * - `webcodecs`: the platform's `AudioEncoder`;
 * - `wasm`: a WebAssembly encoder among Lantern's dependencies (libFLAC, libopus);
 * - `optional-wasm`: a WebAssembly encoder under the LGPL, loaded by name, never bundled with Lantern's code (LAME,
 *   FFmpeg's AAC);
 * - `optional-missing`: that package could not be loaded here, so the format is refused.
 */
export type EncoderPath = 'container' | 'webcodecs' | 'wasm' | 'optional-wasm' | 'optional-missing';

/** Bits per second of the lossy formats: clear speech at 24 kHz mono, near what OpenAI's files carry. */
export const BITRATES = { opus: 48_000, aac: 64_000, mp3: 64_000 } as const;

/** The WebCodecs codec string of each format a browser might encode (mediabunny builds the same). */
export const WEBCODECS_CODECS = { opus: 'opus', aac: 'mp4a.40.2', flac: 'flac', mp3: 'mp3' } as const;

/** Whether this realm's WebCodecs `AudioEncoder` accepts mono `codec` at `sampleRate` (false where there is none). */
export async function webCodecsEncodes(codec: string, sampleRate: number, bitrate?: number): Promise<boolean> {
  if (typeof AudioEncoder === 'undefined') return false;
  try {
    const support = await AudioEncoder.isConfigSupported({
      codec,
      sampleRate,
      numberOfChannels: 1,
      ...(bitrate === undefined ? {} : { bitrate }),
    });
    return support.supported === true;
  } catch {
    // Some engines throw (TypeError, NotSupportedError) for a codec they do not know instead of answering false.
    return false;
  }
}

export const webCodecsEncodesOpus = (sampleRate: number) =>
  webCodecsEncodes(WEBCODECS_CODECS.opus, sampleRate, BITRATES.opus);
export const webCodecsEncodesAac = (sampleRate: number) =>
  webCodecsEncodes(WEBCODECS_CODECS.aac, sampleRate, BITRATES.aac);

/** The formats this realm encodes without any optional package, for the message that asks for one. */
export async function formatsWithoutOptional(sampleRate: number): Promise<SpeechFormat[]> {
  const formats: SpeechFormat[] = ['opus', 'flac', 'wav', 'pcm'];
  if (await webCodecsEncodesAac(sampleRate)) formats.unshift('aac');
  return formats;
}

/** Loads an optional package, answering `optional-wasm`, or `optional-missing` where it cannot be imported. */
async function optionalPath(
  name: 'wasm-media-encoders' | '@mediabunny/aac-encoder',
  sampleRate: number,
  options: EncoderOptions | undefined,
): Promise<EncoderPath> {
  try {
    await loadOptionalEncoder(name, options, await formatsWithoutOptional(sampleRate));
    return 'optional-wasm';
  } catch (error) {
    if (error instanceof UnsupportedFormatError) return 'optional-missing';
    throw error;
  }
}

/** The path `format` takes in this realm at `sampleRate`. Imports an optional package where the format needs one. */
export async function encoderPath(
  format: SpeechFormat,
  sampleRate: number,
  options?: EncoderOptions,
): Promise<EncoderPath> {
  switch (format) {
    case 'pcm':
    case 'wav':
      return 'container';
    case 'flac':
      return 'wasm';
    case 'opus':
      return (await webCodecsEncodesOpus(sampleRate)) ? 'webcodecs' : 'wasm';
    case 'aac':
      return (await webCodecsEncodesAac(sampleRate))
        ? 'webcodecs'
        : optionalPath('@mediabunny/aac-encoder', sampleRate, options);
    case 'mp3':
      return optionalPath('wasm-media-encoders', sampleRate, options);
  }
}
