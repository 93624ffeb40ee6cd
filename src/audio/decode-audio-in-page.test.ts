import { afterEach, describe, expect, it, vi } from 'vitest';
import { AudioDecodeError } from './audio-decode-error.ts';
import { decodeAudioInPage } from './decode-audio-in-page.ts';

/** What a browser's decoder hands back: channels at the context's rate. */
const audioBuffer = (channels: number[][]) =>
  ({
    numberOfChannels: channels.length,
    length: channels[0]!.length,
    getChannelData: (c: number) => Float32Array.from(channels[c]!),
  }) as unknown as AudioBuffer;

type Decode = (
  bytes: ArrayBuffer,
  onDecoded: (buffer: AudioBuffer) => void,
  onError: (error: unknown) => void,
) => Promise<AudioBuffer> | undefined;

/** An OfflineAudioContext whose decodeAudioData is `decode`, recording what each context was made with. */
function fakeContext(decode: Decode) {
  const made: unknown[][] = [];
  vi.stubGlobal(
    'OfflineAudioContext',
    class {
      constructor(...args: unknown[]) {
        made.push(args);
      }
      decodeAudioData = decode;
    },
  );
  return made;
}

afterEach(() => vi.unstubAllGlobals());

describe('decodeAudioInPage', () => {
  it('decodes at the rate asked for, in a context of one channel and one frame, averaging channels', async () => {
    const made = fakeContext(() =>
      Promise.resolve(
        audioBuffer([
          [0.5, 0.5],
          [0.5, -0.5],
        ]),
      ),
    );
    expect([...(await decodeAudioInPage(new ArrayBuffer(8), 16_000))]).toEqual([0.5, 0]);
    expect(made).toEqual([[1, 1, 16_000]]);
  });

  it('decodes a copy, so the caller’s buffer is not detached', async () => {
    const given: ArrayBuffer[] = [];
    fakeContext((bytes) => {
      given.push(bytes);
      structuredClone(bytes, { transfer: [bytes] }); // detaches it, as decodeAudioData does
      return Promise.resolve(audioBuffer([[0.25]]));
    });
    const bytes = new Uint8Array([1, 2, 3]).buffer;
    expect([...(await decodeAudioInPage(bytes, 16_000))]).toEqual([0.25]);
    expect(given[0]).not.toBe(bytes);
    expect(bytes.byteLength).toBe(3);
  });

  it('works with the callback form, which older Safari has without a promise', async () => {
    fakeContext((_, onDecoded) => {
      setTimeout(() => onDecoded(audioBuffer([[0.75, -0.75]])));
      return undefined;
    });
    expect([...(await decodeAudioInPage(new ArrayBuffer(4), 16_000))]).toEqual([0.75, -0.75]);
  });

  it('turns a decode failure into AudioDecodeError saying what to send', async () => {
    fakeContext((_, __, onError) => {
      const error = new DOMException('Unable to decode audio data', 'EncodingError');
      onError(error);
      return Promise.reject(error);
    });
    const failure = decodeAudioInPage(new ArrayBuffer(4), 16_000);
    await expect(failure).rejects.toBeInstanceOf(AudioDecodeError);
    await expect(failure).rejects.toThrow(
      'The audio could not be decoded: Unable to decode audio data; send wav, mp3, ogg, webm or m4a.',
    );
  });

  it('says what failed when Safari calls back with no error', async () => {
    fakeContext((_, __, onError) => {
      onError(null);
      return undefined;
    });
    await expect(decodeAudioInPage(new ArrayBuffer(4), 16_000)).rejects.toThrow(
      /could not be decoded: the browser does not read this format; send wav/,
    );
  });

  it('says so where there is no Web Audio (a worker)', async () => {
    vi.stubGlobal('OfflineAudioContext', undefined);
    await expect(decodeAudioInPage(new ArrayBuffer(4), 16_000)).rejects.toThrow(/no Web Audio/);
  });
});
