/**
 * Audio for speech to text: WAV read anywhere, any browser-decodable format read in a page, and resampling to the
 * model's rate (long audio is cut by the model's own decoding: Whisper's windows). A leaf: it imports no other part of
 * Lantern.
 */
export { AudioDecodeError } from './audio-decode-error.ts';
export { decodeWav, isWav, type DecodedAudio } from './decode-wav.ts';
export { encodeWav } from './encode-wav.ts';
export { resample } from './resample.ts';
export { decodeAudioInPage } from './decode-audio-in-page.ts';
