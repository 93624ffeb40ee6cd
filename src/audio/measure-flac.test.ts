import { describe, expect, it } from 'vitest';
import { flacMetadata, formatBytes, repeated, silentFlacFrame } from '../../test/support/audio-files.ts';
import { measureAudio } from './measure-audio.ts';
import { measureFlac } from './measure-flac.ts';

describe("FLAC: every frame header counted, STREAMINFO's total not believed", () => {
  it('13-byte frames of 65,536 samples under a STREAMINFO saying 2.25 s: 5 MB is 437 hours, refused', () => {
    const flac = repeated(flacMetadata(), silentFlacFrame(), 5_000_000);
    const frames = (flac.length - flacMetadata().length) / 13;
    const measure = measureFlac(flac, 0);
    expect(measure).toEqual({ format: 'FLAC', sampleRate: 16_000, channels: 1, seconds: (frames * 65_536) / 16_000 });
    expect(() => measureAudio(flac, 3600)).toThrow(/^The audio \(FLAC\) is \d+\.\d s long; the limit is 3600 s/);
  });

  it('a real file is its frames: the same file twice over is twice as long', () => {
    const file = formatBytes('codec.flac');
    const metadata = flacMetadata();
    const twice = repeated(metadata, file.subarray(metadata.length), 2 * file.length - metadata.length);
    expect(measureFlac(file, 0).seconds).toBe(2.25);
    expect(measureFlac(twice, 0).seconds).toBe(4.5);
  });

  it('a sync code in the data that is no frame (a bad CRC-8, other channels) is not counted', () => {
    const file = formatBytes('codec.flac').slice();
    const frame = silentFlacFrame();
    const badCrc = frame.slice();
    badCrc[7]! ^= 1;
    const stereo = frame.slice();
    stereo[3] = 0x10; // two channels, which this mono stream's decoder refuses
    const spliced = Uint8Array.of(...file, ...badCrc, ...stereo);
    expect(measureFlac(spliced, 0).seconds).toBe(2.25);
  });

  it('a STREAMINFO rate of 800 Hz is refused before the frames are walked', () => {
    const lying = formatBytes('codec.flac').slice();
    // STREAMINFO at 8: the rate is its 20 bits from byte 10.
    lying[8 + 10] = 0;
    lying[8 + 11] = (800 >> 4) & 0xff;
    lying[8 + 12] = ((800 & 0x0f) << 4) | (lying[8 + 12]! & 0x0f);
    expect(() => measureFlac(lying, 0)).toThrow('The audio (FLAC) says its sample rate is 800 Hz');
  });
});
