/**
 * `aac`: AAC-LC in ADTS frames (`audio/aac`), as OpenAI answers it. The platform's WebCodecs encoder (`mp4a.40.2`)
 * where the realm accepts mono at the rate (platform-dependent: macOS/Windows browsers, WebKit with GStreamer's
 * encoders); else FFmpeg's encoder from the optional `@mediabunny/aac-encoder` (LGPL, installed by the app), which
 * encodes in a worker of its own (`worker-src blob:` in browsers). mediabunny's ADTS muxer writes each frame as it
 * comes.
 */
import { AdtsOutputFormat } from 'mediabunny';
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';
import { BITRATES, formatsWithoutOptional, webCodecsEncodesAac } from './encoder-paths.ts';
import { startMediabunnyStream } from './mediabunny-stream.ts';
import { loadOptionalEncoder, type EncoderOptions } from './optional-encoders.ts';

interface MediabunnyAacEncoder {
  registerAacEncoder(): void;
}

const isAacEncoderPackage = (module: unknown): module is MediabunnyAacEncoder =>
  typeof (module as Partial<MediabunnyAacEncoder> | null)?.registerAacEncoder === 'function';

export async function createAacStream(sampleRate: number, options?: EncoderOptions): Promise<AudioStreamEncoder> {
  // As for Opus, a registered custom encoder would take precedence over WebCodecs: register FFmpeg's only where
  // WebCodecs has no AAC encoder for this configuration.
  if (!(await webCodecsEncodesAac(sampleRate))) {
    const module = await loadOptionalEncoder(
      '@mediabunny/aac-encoder',
      options,
      await formatsWithoutOptional(sampleRate),
    );
    if (!isAacEncoderPackage(module)) {
      throw new TypeError('The module loaded as @mediabunny/aac-encoder has no registerAacEncoder.');
    }
    module.registerAacEncoder();
  }
  return startMediabunnyStream({
    format: new AdtsOutputFormat(),
    codec: 'aac',
    sampleRate,
    bitrate: BITRATES.aac,
    sampleFormat: 'f32',
  });
}
