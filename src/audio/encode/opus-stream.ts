/**
 * `opus`: Ogg Opus, as OpenAI answers it. The platform's WebCodecs encoder where the realm has one for mono at the rate
 * (Chromium's and Firefox's dedicated workers), else libopus from `opusscript`; mediabunny's Ogg muxer either way, with
 * pages of at most 200 ms so that each sentence's audio leaves as it is encoded rather than when a page fills.
 */
import { OggOutputFormat } from 'mediabunny';
import type { AudioStreamEncoder } from './audio-stream-encoder.ts';
import { BITRATES, webCodecsEncodesOpus } from './encoder-paths.ts';
import { startMediabunnyStream } from './mediabunny-stream.ts';
import { opusHead, registerOpusScriptEncoder } from './opusscript-encoder.ts';

const MAXIMUM_PAGE_SECONDS = 0.2;
/** libopus' delay at 48 kHz for the audio application: the pre-skip to assume where WebCodecs gives no header. */
const LIBOPUS_PRE_SKIP = 312;

export async function createOpusStream(sampleRate: number): Promise<AudioStreamEncoder> {
  // A registered custom encoder takes precedence over WebCodecs in mediabunny, so libopus is registered only in a
  // realm whose WebCodecs cannot encode Opus (and is then the only Opus encoder there: the answer does not change).
  if (!(await webCodecsEncodesOpus(sampleRate))) registerOpusScriptEncoder();
  return startMediabunnyStream({
    format: new OggOutputFormat({ maximumPageDuration: MAXIMUM_PAGE_SECONDS }),
    codec: 'opus',
    sampleRate,
    bitrate: BITRATES.opus,
    sampleFormat: 'f32',
    onEncodedPacket(_packet, meta) {
      // Ogg needs the OpusHead as the decoder description; a WebCodecs encoder that gives none gets libopus' usual one.
      if (meta?.decoderConfig && !meta.decoderConfig.description) {
        meta.decoderConfig.description = opusHead(1, LIBOPUS_PRE_SKIP, sampleRate);
      }
    },
  });
}
