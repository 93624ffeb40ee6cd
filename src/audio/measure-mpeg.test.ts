import { describe, expect, it } from 'vitest';
import { formatBytes, longMp3 } from '../../test/support/audio-files.ts';
import { measureAudio } from './measure-audio.ts';
import { measureMpegAudio } from './measure-mpeg.ts';

describe('MPEG audio and ADTS: every frame walked', () => {
  it('25 MB of real 8 kbit/s frames is 6.9 hours, counted frame by frame and refused past the limit', () => {
    const mp3 = longMp3(25_000_000);
    const measure = measureMpegAudio(mp3)!;
    expect(measure).toEqual({
      format: 'MP3',
      sampleRate: 8000,
      channels: 1,
      seconds: ((mp3.length / 72) * 576) / 8000,
    });
    expect(() => measureAudio(mp3, 3600)).toThrow('The audio (MP3) is 25000.7 s long; the limit is 3600 s.');
  });

  it('a Xing header saying one frame does not make the frames after it shorter', () => {
    // low-rate.mp3 opens with LAME's Info frame, whose frame count a player reads; a lie there changes nothing here.
    const file = formatBytes('low-rate.mp3');
    const info = file.findIndex((_, i) => String.fromCharCode(...file.subarray(i, i + 4)) === 'Info');
    expect(info).toBeGreaterThan(0);
    const lying = file.slice();
    new DataView(lying.buffer).setUint32(info + 8, 1); // the frame count
    expect(measureMpegAudio(lying)).toEqual(measureMpegAudio(file));
  });

  it('frames after junk are found again and counted, as a decoder resynchronizes', () => {
    const file = formatBytes('low-rate.mp3');
    const junk = new Uint8Array(5000).map((_, i) => (i * 37) % 251);
    const spliced = new Uint8Array(file.length * 2 + junk.length);
    spliced.set(file);
    spliced.set(junk, file.length);
    spliced.set(file.subarray(0), file.length + junk.length);
    expect(measureMpegAudio(spliced)!.seconds).toBeCloseTo(2 * measureMpegAudio(file)!.seconds, 3);
  });

  it('ADTS AAC: 1,024 samples a frame, counted at the rate SBR may double to', () => {
    expect(measureMpegAudio(formatBytes('short.aac'))).toEqual({
      format: 'AAC',
      sampleRate: 32_000,
      channels: 2,
      seconds: (9 * 1024) / 16_000,
    });
  });

  it('bytes with no run of frames are not MPEG audio', () => {
    const noise = new Uint8Array(10_000).map((_, i) => (i * 7919) % 256);
    expect(measureMpegAudio(noise)).toBeUndefined();
  });
});
