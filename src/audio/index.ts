/**
 * Audio for speech to text: every format's length, rate and channels measured from its headers and frames before
 * anything is decoded (`measureAudio`), WAV read anywhere, any browser-decodable format read in a page, and resampling
 * to the model's rate (long audio is cut by the model's own decoding: Whisper's windows). And for text to speech: the
 * streaming encoders of every `response_format` (`createAudioEncoder`). A leaf: it imports no other part of Lantern.
 */
export { AudioDecodeError, AudioLimitError, audioRefusal } from './audio-decode-error.ts';
export {
  DECODED_SAMPLES_PER_SECOND,
  MAX_CHANNELS,
  MAX_SAMPLE_RATE,
  MIN_SAMPLE_RATE,
  type AudioMeasure,
} from './audio-limits.ts';
export { decodeWav, isWav, measureWav, type DecodedAudio } from './decode-wav.ts';
export { measureAudio } from './measure-audio.ts';
export { encodeWav } from './encode-wav.ts';
export { resample } from './resample.ts';
export { decodeAudioInPage } from './decode-audio-in-page.ts';
export {
  createAudioEncoder,
  encoderAvailable,
  assertEncoderAvailable,
  UnsupportedFormatError,
  type AudioStreamEncoder,
  type EncoderOptions,
  type LoadOptional,
} from './encode/audio-stream-encoder.ts';
export { SPEECH_FORMATS, SPEECH_CONTENT_TYPES, isSpeechFormat, type SpeechFormat } from './encode/speech-formats.ts';
export { probeEncoders, type EncoderProbe } from './encode/probe-encoders.ts';
export type { EncoderPath } from './encode/encoder-paths.ts';
