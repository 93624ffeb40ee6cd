import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatBytes, longOggOpus, oggStream, opusHead } from '../../test/support/audio-files.ts';
import { AudioDecodeError } from './audio-decode-error.ts';
import { decodeAudioInPage } from './decode-audio-in-page.ts';

/** A real file (Ogg Opus, 2.25 s), as the page is handed it: the decoder is faked, the measuring before it is not. */
const ogg = () => Uint8Array.from(readFileSync('test/fixtures/speech/codec.ogg')).buffer;

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
    expect([...(await decodeAudioInPage(ogg(), 16_000))]).toEqual([0.5, 0]);
    expect(made).toEqual([[1, 1, 16_000]]);
  });

  it('decodes a copy, so the caller’s buffer is not detached', async () => {
    const given: ArrayBuffer[] = [];
    fakeContext((bytes) => {
      given.push(bytes);
      structuredClone(bytes, { transfer: [bytes] }); // detaches it, as decodeAudioData does
      return Promise.resolve(audioBuffer([[0.25]]));
    });
    const bytes = ogg();
    expect([...(await decodeAudioInPage(bytes, 16_000))]).toEqual([0.25]);
    expect(given[0]).not.toBe(bytes);
    expect(bytes.byteLength).toBe(8684);
  });

  it('works with the callback form, which older Safari has without a promise', async () => {
    fakeContext((_, onDecoded) => {
      setTimeout(() => onDecoded(audioBuffer([[0.75, -0.75]])));
      return undefined;
    });
    expect([...(await decodeAudioInPage(ogg(), 16_000))]).toEqual([0.75, -0.75]);
  });

  it('turns a decode failure into AudioDecodeError saying what to send', async () => {
    fakeContext((_, __, onError) => {
      const error = new DOMException('Unable to decode audio data', 'EncodingError');
      onError(error);
      return Promise.reject(error);
    });
    const failure = decodeAudioInPage(ogg(), 16_000);
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
    await expect(decodeAudioInPage(ogg(), 16_000)).rejects.toThrow(
      /could not be decoded: the browser does not read this format; send wav/,
    );
  });

  it('says so where there is no Web Audio (a worker)', async () => {
    vi.stubGlobal('OfflineAudioContext', undefined);
    await expect(decodeAudioInPage(ogg(), 16_000)).rejects.toThrow(/no Web Audio/);
  });

  it('measures every format read before the browser decodes it, and decodes those within the limit', async () => {
    const decoded: number[] = [];
    fakeContext((bytes) => {
      decoded.push(bytes.byteLength);
      return Promise.resolve(audioBuffer([[0]]));
    });
    const files = ['codec.flac', 'codec.m4a', 'codec.webm', 'codec-vorbis.ogg', 'low-rate.mp3', 'short.aac'];
    for (const file of files) await decodeAudioInPage(formatBytes(file).slice().buffer, 16_000, 3600);
    expect(decoded).toHaveLength(files.length);
  });
});

// decodeAudioData decodes a whole file, every channel at its own rate, and cannot be stopped: issue 41.
describe('decodeAudioInPage refuses before decodeAudioData is called', () => {
  /** A browser whose decoder counts its calls: each refusal below must leave it at 0. */
  function countingDecoder() {
    const calls = { count: 0 };
    fakeContext(() => {
      calls.count++;
      return Promise.resolve(audioBuffer([[0]]));
    });
    return calls;
  }

  it('Ogg Opus of 100 hours in 9 MB, its granule positions saying 0: refused for its length', async () => {
    const calls = countingDecoder();
    const ogg = longOggOpus(360_000);
    await expect(decodeAudioInPage(ogg.buffer as ArrayBuffer, 16_000, 3600)).rejects.toThrow(
      'The audio (Ogg Opus) is 360000.0 s long; the limit is 3600 s.',
    );
    expect(calls.count).toBe(0);
  });

  it('255 channels, a WebM over the limit, and bytes in no format measured here', async () => {
    const calls = countingDecoder();
    const wide = oggStream([opusHead(255)], 0n);
    await expect(decodeAudioInPage(wide.buffer as ArrayBuffer, 16_000, 3600)).rejects.toThrow(/255 channels/);
    await expect(decodeAudioInPage(formatBytes('codec.webm').slice().buffer, 16_000, 2)).rejects.toThrow(
      'The audio (WebM Opus) is 2.3 s long; the limit is 2 s.',
    );
    const noise = new Uint8Array(4096).map((_, i) => (i * 37) % 251);
    await expect(decodeAudioInPage(noise.buffer, 16_000, 3600)).rejects.toThrow(
      /in no format read here .* so its length cannot be known before decoding it/,
    );
    expect(calls.count).toBe(0);
  });
});
