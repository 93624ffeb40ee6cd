/**
 * One entry for every format read: which it is (by its first bytes), what it decodes to (from its headers and a walk of
 * its frames or packets, without decoding a sample), and whether that is within the limits. Called before anything is
 * decoded: by the API on the uploaded file, by the engine before it decodes, and by the page before `decodeAudioData`.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { checkMeasure, type AudioMeasure } from './audio-limits.ts';
import { isWav, measureWav } from './decode-wav.ts';
import { isFlacAt, measureFlac } from './measure-flac.ts';
import { isMatroska, measureMatroska } from './measure-matroska.ts';
import { isMp4, measureMp4 } from './measure-mp4.ts';
import { afterId3, measureMpegAudio } from './measure-mpeg.ts';
import { isOgg, measureOgg } from './measure-ogg.ts';

/**
 * Measures an audio file and checks it against the limits (MIN_SAMPLE_RATE to MAX_SAMPLE_RATE, at most MAX_CHANNELS,
 * at most `maxSeconds` long and DECODED_SAMPLES_PER_SECOND × `maxSeconds` samples decoded), throwing AudioDecodeError
 * (a 400 naming `file`) past any. The formats: WAV, MP3 (and MP2, MP1), ADTS AAC, FLAC, Ogg (Opus, Vorbis, FLAC),
 * WebM / Matroska (Opus, Vorbis, FLAC, AAC, MP3, PCM) and MP4 / M4A / MOV (AAC, MP3, Opus, FLAC, ALAC). Undefined for
 * any other: the caller decides whether another decoder may read it. The work is one pass over the bytes.
 *
 * @example
 * measureAudio(bytes, 3600); // { format: 'Ogg Opus', sampleRate: 48000, channels: 1, seconds: 2.27 }
 */
export function measureAudio(bytes: Uint8Array, maxSeconds = Infinity): AudioMeasure | undefined {
  let measure: AudioMeasure | undefined;
  try {
    measure = measureFormat(bytes);
  } catch (error) {
    // A header that runs past the end of the bytes (DataView's RangeError): a file cut short where it describes itself.
    if (error instanceof RangeError) {
      throw new AudioDecodeError('The audio file is cut short or damaged in its headers; send it whole.', {
        cause: error,
      });
    }
    throw error;
  }
  if (measure) checkMeasure(measure, maxSeconds);
  return measure;
}

function measureFormat(bytes: Uint8Array): AudioMeasure | undefined {
  if (isWav(bytes)) return measureWav(bytes);
  if (isOgg(bytes)) return measureOgg(bytes);
  if (isMatroska(bytes)) return measureMatroska(bytes);
  if (isMp4(bytes)) return measureMp4(bytes);
  const start = afterId3(bytes);
  if (isFlacAt(bytes, start)) return measureFlac(bytes, start);
  return measureMpegAudio(bytes);
}
