import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatBytes, wavFile } from '../../test/support/audio-files.ts';
import { AudioDecodeError } from './audio-decode-error.ts';
import { DECODED_SAMPLES_PER_SECOND, MAX_CHANNELS, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE } from './audio-limits.ts';
import { measureAudio } from './measure-audio.ts';

const speech = (file: string) => Uint8Array.from(readFileSync(`test/fixtures/speech/${file}`));

/**
 * Every format read, on real files (test/fixtures/speech/formats, made by ffmpeg): the length is what the decoder
 * writes, packet by packet (an AAC frame 1,024 samples, an Opus packet its TOC's frames, a Vorbis packet half its long
 * block), so never less than the clip's own length (2.25 s, or 0.5 s for the short ones) and a codec's padding over.
 */
const REAL: [file: Uint8Array, name: string, format: string, rate: number, channels: number, seconds: number][] = [
  [speech('codec.wav'), 'codec.wav', 'WAV', 16_000, 1, 2.25],
  [speech('stereo-44k.wav'), 'stereo-44k.wav', 'WAV', 44_100, 2, 65_267 / 44_100],
  [speech('codec.mp3'), 'codec.mp3', 'MP3', 16_000, 1, (66 * 576) / 16_000],
  [speech('codec.ogg'), 'codec.ogg', 'Ogg Opus', 48_000, 1, 113 * 0.02],
  [formatBytes('codec.flac'), 'codec.flac', 'FLAC', 16_000, 1, 2.25],
  // AAC counts SBR's doubled rate and PS' stereo, which a decoder may write from the same frames.
  [formatBytes('codec.m4a'), 'codec.m4a', 'MP4 AAC', 32_000, 2, (37 * 1024) / 16_000],
  [formatBytes('codec.webm'), 'codec.webm', 'WebM Opus', 48_000, 1, 113 * 0.02],
  [formatBytes('codec-vorbis.ogg'), 'codec-vorbis.ogg', 'Ogg Vorbis', 16_000, 1, (72 * 512) / 16_000],
  [formatBytes('low-rate.mp3'), 'low-rate.mp3', 'MP3', 8_000, 1, (35 * 576) / 8_000],
  [formatBytes('short-fragmented.mp4'), 'short-fragmented.mp4', 'MP4 AAC', 32_000, 2, (9 * 1024) / 16_000],
  [formatBytes('short.aac'), 'short.aac', 'AAC', 32_000, 2, (9 * 1024) / 16_000],
  [formatBytes('short-flac.oga'), 'short-flac.oga', 'Ogg FLAC', 16_000, 1, 0.5],
  [formatBytes('short-opus.mp4'), 'short-opus.mp4', 'MP4 Opus', 48_000, 1, 26 * 0.02],
  [formatBytes('short-flac.mp4'), 'short-flac.mp4', 'MP4 FLAC', 16_000, 1, 0.5],
  [formatBytes('short-alac.m4a'), 'short-alac.m4a', 'MP4 ALAC', 16_000, 1, (2 * 4096) / 16_000],
  [formatBytes('short-mp3.mp4'), 'short-mp3.mp4', 'MP4 MP3', 16_000, 2, (16 * 576) / 16_000],
  [formatBytes('short-vorbis.webm'), 'short-vorbis.webm', 'WebM Vorbis', 16_000, 1, (17 * 512) / 16_000],
  [formatBytes('short-flac.mkv'), 'short-flac.mkv', 'Matroska FLAC', 16_000, 1, 0.5],
  [formatBytes('short-mp3.mkv'), 'short-mp3.mkv', 'Matroska MP3', 16_000, 2, (16 * 576) / 16_000],
  [formatBytes('short-aac.mkv'), 'short-aac.mkv', 'Matroska AAC', 32_000, 2, (9 * 1024) / 16_000],
  [formatBytes('short-pcm.mkv'), 'short-pcm.mkv', 'Matroska PCM', 16_000, 1, 0.5],
];

describe('measureAudio on real files', () => {
  it.each(REAL)('%#: %s', (bytes, name, format, sampleRate, channels, seconds) => {
    const measure = measureAudio(bytes, 3600)!;
    expect({ ...measure, seconds: measure.seconds.toFixed(4) }).toEqual({
      format,
      sampleRate,
      channels,
      seconds: seconds.toFixed(4),
    });
    expect(measure.seconds).toBeGreaterThanOrEqual(
      name.startsWith('short') ? 0.5 : name === 'stereo-44k.wav' ? 1.47 : 2.25,
    );
  });

  it('says nothing of bytes in no format it reads: the caller decides', () => {
    expect(measureAudio(new Uint8Array(4096).map((_, i) => (i * 37) % 251))).toBeUndefined();
    expect(measureAudio(new TextEncoder().encode('hello, this is not audio'))).toBeUndefined();
  });

  it('refuses each file once the limit is under its length, saying how long it is', () => {
    expect(() => measureAudio(formatBytes('codec.webm'), 2)).toThrow(
      'The audio (WebM Opus) is 2.3 s long; the limit is 2 s. Split it and send the parts.',
    );
    for (const [bytes] of REAL) expect(() => measureAudio(bytes, 0.25)).toThrow(AudioDecodeError);
  });

  it('a file cut short inside its headers is refused as damaged, not a RangeError', () => {
    const m4a = formatBytes('codec.m4a');
    const moov = m4a.findIndex((_, i) => String.fromCharCode(...m4a.subarray(i, i + 4)) === 'stsd');
    expect(() => measureAudio(m4a.subarray(0, moov + 30))).toThrow(AudioDecodeError);
    for (const [bytes] of REAL) {
      for (const end of [13, 40, 100, 600]) {
        try {
          measureAudio(bytes.subarray(0, end));
        } catch (error) {
          expect(error).toBeInstanceOf(AudioDecodeError);
        }
      }
    }
  });
});

describe('WAV headers are checked before anything is sized by them (issue 41)', () => {
  it('a 25 MB 8-bit WAV saying 800 Hz: refused for its rate, from the header alone', () => {
    const wav = wavFile({ sampleRate: 800, dataBytes: 25_000_000 });
    expect(() => measureAudio(wav, 3600)).toThrow(
      `The audio (WAV) says its sample rate is 800 Hz; audio is read at ${MIN_SAMPLE_RATE} to ${MAX_SAMPLE_RATE} Hz.`,
    );
  });

  it('a WAV saying 4 GHz, or 65,535 channels', () => {
    expect(() => measureAudio(wavFile({ sampleRate: 4_000_000_000, dataBytes: 1000 }))).toThrow(
      /sample rate is 4000000000 Hz/,
    );
    expect(() => measureAudio(wavFile({ sampleRate: 16_000, channels: 65_535, dataBytes: 65_535 * 4 }))).toThrow(
      `The audio (WAV) says it has 65535 channels; audio is read with 1 to ${MAX_CHANNELS}.`,
    );
  });

  it('a WAV longer than the limit, its length from the data chunk and the rate', () => {
    const wav = wavFile({ sampleRate: 8_000, dataBytes: 25_000_000 }); // 3,125 s of 8-bit mono
    expect(measureAudio(wav, 3600)).toEqual({ format: 'WAV', sampleRate: 8000, channels: 1, seconds: 3125 });
    expect(() => measureAudio(wav, 600)).toThrow('The audio (WAV) is 3125.0 s long; the limit is 600 s.');
  });

  it('a short file that would decode to more than the limit of 48 kHz stereo: 384 kHz in 32 channels', () => {
    const wav = wavFile({ sampleRate: 384_000, channels: 32, dataBytes: 384_000 * 32 * 0.1 }); // 0.1 s
    expect(() => measureAudio(wav, 1)).toThrow(
      `The audio (WAV) decodes to 1228800 samples (0.1 s at 384000 Hz in 32 channels); the limit is ` +
        `${DECODED_SAMPLES_PER_SECOND}, 1 s of 48 kHz stereo.`,
    );
    expect(measureAudio(wav, 20)?.seconds).toBeCloseTo(0.1);
  });
});
