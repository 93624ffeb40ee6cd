import { describe, expect, it, vi } from 'vitest';
import { formatBytes, longOggOpus, wavFile } from '../../test/support/audio-files.ts';
import { encodeWav } from '../audio/index.ts';
import { decodeAudioFile } from './audio-input.ts';

const file = (bytes: Uint8Array, name: string) => ({ bytes, name, type: '' });

describe('decodeAudioFile measures the file before a sample is decoded (issue 41)', () => {
  it('a WAV saying 800 Hz, or 4 GHz: refused naming file, with no limit on length given', async () => {
    for (const sampleRate of [800, 3_999_999_999]) {
      const wav = wavFile({ sampleRate, dataBytes: 1_000_000 });
      await expect(decodeAudioFile(file(wav, 'lying.wav'), 16_000, undefined)).rejects.toMatchObject({
        kind: 'invalid_request',
        param: 'file',
        message: expect.stringContaining(`says its sample rate is ${sampleRate} Hz`),
      });
    }
  });

  it('the page is not asked to decode hours of Ogg Opus, nor bytes in no format measured here', async () => {
    const page = vi.fn(async () => new Float32Array(16));
    await expect(decodeAudioFile(file(longOggOpus(7200), 'hours.ogg'), 16_000, page, 3600)).rejects.toMatchObject({
      param: 'file',
      message: 'The audio (Ogg Opus) is 7200.0 s long; the limit is 3600 s. Split it and send the parts.',
    });
    await expect(decodeAudioFile(file(new Uint8Array(64).fill(7), 'x.aiff'), 16_000, page, 3600)).rejects.toMatchObject(
      { param: 'file', message: expect.stringContaining('is in no format read here') },
    );
    expect(page).not.toHaveBeenCalled();
  });

  it('a file that cannot be read says so, as a limit does not: the same words the API uses', async () => {
    const m4a = formatBytes('codec.m4a').slice();
    const entry = m4a.findIndex((_, i) => String.fromCharCode(...m4a.subarray(i, i + 4)) === 'mp4a');
    m4a.set([0x61, 0x63, 0x2d, 0x33], entry); // 'ac-3'
    await expect(decodeAudioFile(file(m4a, 'x.m4a'), 16_000, vi.fn(), 3600)).rejects.toMatchObject({
      param: 'file',
      message: expect.stringMatching(/^`x.m4a` could not be decoded as audio: The MP4 file's audio is coded as 'ac-3'/),
    });
  });

  it('audio within the limits goes to the page with the limit, for it to measure again', async () => {
    const page = vi.fn(async () => new Float32Array(16));
    const webm = formatBytes('codec.webm');
    await decodeAudioFile(file(webm, 'codec.webm'), 16_000, page, 3600);
    expect(page).toHaveBeenCalledWith(webm, 16_000, 3600);
  });

  it('a WAV within the limits is decoded here; one over the length is not', async () => {
    const wav = encodeWav(new Float32Array(8000).fill(0.5), 8000);
    expect((await decodeAudioFile(file(wav, 'a.wav'), 16_000, undefined, 3600)).length).toBe(16_000);
    await expect(decodeAudioFile(file(wav, 'a.wav'), 16_000, undefined, 0.5)).rejects.toMatchObject({
      param: 'file',
      message: 'The audio (WAV) is 1.0 s long; the limit is 0.5 s. Split it and send the parts.',
    });
  });
});
