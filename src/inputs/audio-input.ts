import { AudioDecodeError, audioRefusal, decodeWav, isWav, measureAudio, resample } from '../audio/index.ts';
import { EngineError, type AudioFile } from '../engine-interface/index.ts';

/**
 * Decodes audio that is not WAV to mono samples at `sampleRate`: in a browser, the page's decoder (the engine worker
 * asks its host page; a worker has no `AudioContext`), which measures the file against `maxSeconds` again before it
 * decodes. Rejects when the bytes are not audio it can decode.
 */
export type DecodeAudio = (bytes: Uint8Array, sampleRate: number, maxSeconds?: number) => Promise<Float32Array>;

/**
 * A request's audio file as mono samples at the model's rate. The file is measured first (`measureAudio`: its length,
 * rate and channels from its headers and frames), and refused naming `file` past `maxSeconds` or the rate and channel
 * bounds, before any sample is decoded, resampled or allocated (issue 41). WAV is then read here, in any realm;
 * anything else goes to `decodeElsewhere` (the browser's decoder), and where there is none (Node), it is refused naming
 * `file`, as is audio that does not decode or holds no samples.
 */
export async function decodeAudioFile(
  file: AudioFile,
  sampleRate: number,
  decodeElsewhere: DecodeAudio | undefined,
  maxSeconds = Infinity,
): Promise<Float32Array> {
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: 'file' });
  const named = file.name ? `\`${file.name}\`` : 'The file';
  if (file.bytes.byteLength === 0) throw refuse(`${named} is empty: send the audio to transcribe.`);
  let measured: boolean;
  try {
    measured = measureAudio(file.bytes, maxSeconds) !== undefined;
  } catch (error) {
    if (error instanceof AudioDecodeError) throw refuse(audioRefusal(error, named));
    throw error;
  }
  let samples: Float32Array;
  try {
    if (isWav(file.bytes)) {
      const wav = decodeWav(file.bytes);
      samples = resample(wav.samples, wav.sampleRate, sampleRate);
    } else if (!decodeElsewhere) {
      throw refuse(
        `${named}${file.type ? ` (${file.type})` : ''} is not WAV audio, the one format decoded here (Node). ` +
          'Convert it to WAV, or send it to Lantern in a browser, which decodes mp3, ogg, webm, flac and m4a too.',
      );
    } else if (!measured) {
      throw refuse(
        `${named}${file.type ? ` (${file.type})` : ''} is in no format read here, so its length cannot be known ` +
          'before decoding it: send wav, mp3, aac, flac, ogg, webm, mp4 or m4a.',
      );
    } else {
      samples = await decodeElsewhere(file.bytes, sampleRate, maxSeconds);
    }
  } catch (error) {
    if (error instanceof EngineError) throw error;
    if (error instanceof AudioDecodeError) throw refuse(audioRefusal(error, named));
    if (error instanceof Error) throw refuse(`${named} could not be decoded as audio: ${error.message}`);
    throw error;
  }
  if (samples.length === 0) throw refuse(`${named} holds no audio samples.`);
  return samples;
}
