import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatBytes, longOggOpus, oggStream, opusHead } from '../../test/support/audio-files.ts';
import { AudioDecodeError } from './audio-decode-error.ts';
import { measureAudio } from './measure-audio.ts';
import { measureOgg } from './measure-ogg.ts';

const text = (s: string) => Uint8Array.from([...s].map((c) => c.charCodeAt(0)));

describe('Ogg: every packet counted, granule positions not believed', () => {
  it('2-byte Opus packets of 120 ms under granule positions of 0: 100 hours in 9 MB, refused', () => {
    const ogg = longOggOpus(360_000);
    const measure = measureOgg(ogg);
    expect(measure).toEqual({ format: 'Ogg Opus', sampleRate: 48_000, channels: 1, seconds: 360_000 });
    expect(() => measureAudio(ogg, 3600)).toThrow('The audio (Ogg Opus) is 360000.0 s long; the limit is 3600 s.');
  });

  it('an OpusHead of 255 channels is refused before a packet is counted', () => {
    const ogg = oggStream([opusHead(255), text('OpusTags\0\0\0\0\0\0\0\0')], 0n);
    expect(() => measureOgg(ogg)).toThrow('The audio (Opus) says it has 255 channels; audio is read with 1 to 32.');
  });

  it('a real file: a packet that continues onto the next page is counted once', () => {
    // codec.ogg's pages end mid-packet where a packet spans them; the count is the 113 packets ffprobe finds.
    const bytes = Uint8Array.from(readFileSync('test/fixtures/speech/codec.ogg'));
    expect(measureOgg(bytes).seconds).toBeCloseTo(113 * 0.02, 6);
    const oneByteLaced = oggStream(
      [opusHead(1), text('OpusTags\0\0\0\0\0\0\0\0'), ...Array.from({ length: 600 }, () => Uint8Array.of(31 << 3))],
      1n,
    );
    expect(measureOgg(oneByteLaced).seconds).toBeCloseTo(600 * 0.02, 6);
  });

  it('Vorbis: a rate of 4 GHz or of 800 Hz in the identification header is refused', () => {
    const real = formatBytes('codec-vorbis.ogg');
    for (const rate of [4_000_000_000, 800]) {
      const lying = real.slice();
      const id = lying.indexOf(0x01, 28); // the identification packet, in the first page after its lacing value
      new DataView(lying.buffer).setUint32(id + 12, rate, true);
      expect(() => measureOgg(lying)).toThrow(`The audio (Vorbis) says its sample rate is ${rate} Hz`);
    }
  });

  it('a file of 300 streams is refused before their records add up: no recording has more than 256', () => {
    const streams = Array.from({ length: 300 }, (_, serial) => oggStream([opusHead(1)], 0n, serial));
    const many = Uint8Array.from(streams.flatMap((page) => [...page]));
    expect(() => measureOgg(many)).toThrow('The Ogg file declares more than 256 tracks, more than any recording has');
  });

  it('Speex, which no browser decodes, is refused by name; a stream that is not audio alone is no audio', () => {
    expect(() => measureOgg(oggStream([text('Speex   1.2')], 0n))).toThrow(/holds Speex, which is not read here/);
    expect(() => measureOgg(oggStream([text('\x80theora')], 0n))).toThrow(AudioDecodeError);
  });
});
