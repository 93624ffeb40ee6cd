/**
 * Decoding any audio the browser can (mp3, ogg/opus, webm, m4a/aac, flac, wav) with Web Audio. Only a window has
 * `OfflineAudioContext`: neither a service worker nor a Web Worker does, so this runs in the page that hosts Lantern.
 */
import { AudioDecodeError } from './audio-decode-error.ts';
import { measureAudio } from './measure-audio.ts';

const SEND_INSTEAD = 'send wav, mp3, ogg, webm or m4a';

/**
 * Decodes an encoded audio file to mono samples at `sampleRate`: the browser decodes and resamples it (to the context's
 * rate, as `decodeAudioData` always does), and the channels are averaged here. `bytes` is copied first, since
 * `decodeAudioData` detaches the buffer it is given. A file the browser cannot decode throws AudioDecodeError.
 *
 * `decodeAudioData` decodes the whole file, every channel at its own rate, before anything can be checked, and cannot
 * be stopped; so the file is measured first (`measureAudio`: its headers and frames, no samples), and one in a format
 * not measured here, past `maxSeconds`, or at an absurd rate or channel count, is refused without being decoded.
 *
 * @example
 * const samples = await decodeAudioInPage(await file.arrayBuffer(), 16_000, 3600);
 * @see https://developer.mozilla.org/en-US/docs/Web/API/BaseAudioContext/decodeAudioData
 */
export async function decodeAudioInPage(
  bytes: ArrayBuffer,
  sampleRate: number,
  maxSeconds = Infinity,
): Promise<Float32Array> {
  if (typeof OfflineAudioContext === 'undefined') {
    throw new AudioDecodeError(
      `The audio could not be decoded: this context has no Web Audio (OfflineAudioContext); send 16-bit PCM wav.`,
    );
  }
  if (!measureAudio(new Uint8Array(bytes), maxSeconds)) {
    throw new AudioDecodeError(
      `The audio is in no format read here (wav, mp3, aac, flac, ogg, webm, mp4 or m4a), so its length cannot be ` +
        `known before decoding it; ${SEND_INSTEAD}.`,
    );
  }
  // The context only sets the rate to decode at: it renders nothing, and one frame is the least length it accepts.
  const context = new OfflineAudioContext(1, 1, sampleRate);
  let decoded: AudioBuffer;
  try {
    decoded = await decodeWith(context, bytes.slice(0));
  } catch (error) {
    const reason = error instanceof Error && error.message ? error.message : 'the browser does not read this format';
    throw new AudioDecodeError(`The audio could not be decoded: ${reason}; ${SEND_INSTEAD}.`, { cause: error });
  }
  return downmix(decoded);
}

/**
 * `decodeAudioData` in both its forms: current browsers return a promise, and Safari before 14.1 only called back
 * (returning undefined, and failing with a null error). Settling twice is harmless, so both are listened to.
 */
function decodeWith(context: BaseAudioContext, bytes: ArrayBuffer): Promise<AudioBuffer> {
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => reject(error ?? new Error('the browser does not read this format'));
    const promise = context.decodeAudioData(bytes, resolve, fail) as Promise<AudioBuffer> | undefined;
    promise?.then(resolve, fail);
  });
}

function downmix(buffer: AudioBuffer): Float32Array {
  const channels = buffer.numberOfChannels;
  // The buffer is this function's alone and dropped after: its one channel is handed out as it is, not copied (an hour at
  // 16 kHz is 230 MB).
  if (channels === 1) return buffer.getChannelData(0);
  const mono = new Float32Array(buffer.length);
  for (let c = 0; c < channels; c++) {
    const channel = buffer.getChannelData(c);
    for (let i = 0; i < mono.length; i++) mono[i]! += channel[i]!;
  }
  for (let i = 0; i < mono.length; i++) mono[i]! /= channels;
  return mono;
}
