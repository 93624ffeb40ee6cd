import { AudioDecodeError, decodeWav, isWav, resample } from '../audio/index.ts';
import { EngineError, type AudioFile } from '../engine/index.ts';

/**
 * Decodes audio that is not WAV to mono samples at `sampleRate`: in a browser, the page's decoder (the engine worker
 * asks its host page; a worker has no `AudioContext`). Rejects when the bytes are not audio it can decode.
 */
export type DecodeAudio = (bytes: Uint8Array, sampleRate: number) => Promise<Float32Array>;

/**
 * A request's audio file as mono samples at the model's rate. WAV is read here, in any realm; anything else goes to
 * `decodeElsewhere` (the browser's decoder), and where there is none (Node), it is refused naming `file`, as is audio
 * that does not decode or holds no samples.
 */
export async function decodeAudioFile(
  file: AudioFile,
  sampleRate: number,
  decodeElsewhere: DecodeAudio | undefined,
): Promise<Float32Array> {
  const refuse = (why: string) => new EngineError('invalid_request', why, { param: 'file' });
  const named = file.name ? `\`${file.name}\`` : 'The file';
  if (file.bytes.byteLength === 0) throw refuse(`${named} is empty: send the audio to transcribe.`);
  let samples: Float32Array;
  try {
    if (isWav(file.bytes)) {
      const wav = decodeWav(file.bytes);
      samples = resample(wav.samples, wav.sampleRate, sampleRate);
    } else if (decodeElsewhere) {
      samples = await decodeElsewhere(file.bytes, sampleRate);
    } else {
      throw refuse(
        `${named}${file.type ? ` (${file.type})` : ''} is not WAV audio, the one format decoded here (Node). ` +
          'Convert it to WAV, or send it to Lantern in a browser, which decodes mp3, ogg, webm, flac and m4a too.',
      );
    }
  } catch (error) {
    if (error instanceof EngineError) throw error;
    if (error instanceof AudioDecodeError || error instanceof Error) {
      throw refuse(`${named} could not be decoded as audio: ${error.message}`);
    }
    throw error;
  }
  if (samples.length === 0) throw refuse(`${named} holds no audio samples.`);
  return samples;
}
