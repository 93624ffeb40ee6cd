import { describe, expect, it } from 'vitest';
import { concatBytes } from '../bytes/byte-chunks.ts';
import { AudioDecodeError } from './audio-decode-error.ts';
import { decodeWav, isWav } from './decode-wav.ts';
import { encodeWav } from './encode-wav.ts';

interface Header {
  tag?: number;
  channels?: number;
  sampleRate?: number;
  bits?: number;
  blockAlign?: number;
  /** WAVE_FORMAT_EXTENSIBLE around `tag`, with this many valid bits. */
  extensible?: number;
}

const chunk = (id: string, body: Uint8Array, pad = true) => {
  const bytes = new Uint8Array(8 + body.length + (pad ? body.length % 2 : 0));
  bytes.set([...id].map((c) => c.charCodeAt(0)));
  new DataView(bytes.buffer).setUint32(4, body.length, true);
  bytes.set(body, 8);
  return bytes;
};

const fmt = ({ tag = 1, channels = 1, sampleRate = 8000, bits = 16, blockAlign, extensible }: Header) => {
  const body = new Uint8Array(extensible === undefined ? 16 : 40);
  const view = new DataView(body.buffer);
  const align = blockAlign ?? channels * Math.ceil(bits / 8);
  view.setUint16(0, extensible === undefined ? tag : 0xfffe, true);
  view.setUint16(2, channels, true);
  view.setUint32(4, sampleRate, true);
  view.setUint32(8, sampleRate * align, true);
  view.setUint16(12, align, true);
  view.setUint16(14, bits, true);
  if (extensible !== undefined) {
    view.setUint16(16, 22, true); // cbSize
    view.setUint16(18, extensible, true);
    view.setUint32(20, channels === 1 ? 4 : 3, true); // channel mask
    view.setUint16(24, tag, true); // SubFormat GUID, whose first two bytes are the format
    body.set([0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71], 26);
  }
  return chunk('fmt ', body);
};

const riff = (...chunks: Uint8Array[]) => {
  const body = concatBytes([new TextEncoder().encode('WAVE'), ...chunks]);
  return chunk('RIFF', body, false);
};

/** Sample bytes written one value at a time by `write(view, at, value)`. */
const data = (values: number[], size: number, write: (view: DataView, at: number, value: number) => void) => {
  const body = new Uint8Array(values.length * size);
  const view = new DataView(body.buffer);
  values.forEach((v, i) => write(view, i * size, v));
  return body;
};

const int24 = (view: DataView, at: number, value: number) => {
  view.setUint8(at, value & 0xff);
  view.setUint8(at + 1, (value >> 8) & 0xff);
  view.setUint8(at + 2, (value >> 16) & 0xff);
};

const expectSamples = (actual: Float32Array, expected: number[]) => {
  expect(actual.length).toBe(expected.length);
  expected.forEach((v, i) => expect(actual[i]).toBeCloseTo(v, 6));
};

describe('decodeWav', () => {
  it('reads 16-bit PCM mono, as encodeWav writes it', () => {
    const samples = Float32Array.from([0, 0.5, -0.5, 1, -1]);
    const decoded = decodeWav(encodeWav(samples, 16_000));
    expect(decoded.sampleRate).toBe(16_000);
    expect(decoded.channels).toBe(1);
    expect(decoded.durationSeconds).toBeCloseTo(5 / 16_000);
    samples.forEach((v, i) => expect(decoded.samples[i]).toBeCloseTo(v, 4));
  });

  it('reads 8-bit unsigned PCM', () => {
    const wav = riff(fmt({ bits: 8 }), chunk('data', Uint8Array.from([128, 255, 0, 192])));
    expectSamples(decodeWav(wav).samples, [0, 127 / 128, -1, 0.5]);
  });

  it('reads 24-bit and 32-bit PCM', () => {
    const pcm24 = riff(fmt({ bits: 24 }), chunk('data', data([0x400000, -0x400000, -0x800000], 3, int24)));
    expectSamples(decodeWav(pcm24).samples, [0.5, -0.5, -1]);
    const pcm32 = riff(
      fmt({ bits: 32 }),
      chunk(
        'data',
        data([0x40000000, -0x80000000], 4, (v, at, x) => v.setInt32(at, x, true)),
      ),
    );
    expectSamples(decodeWav(pcm32).samples, [0.5, -1]);
  });

  it('reads IEEE float 32 and 64', () => {
    const f32 = riff(
      fmt({ tag: 3, bits: 32 }),
      chunk(
        'data',
        data([0.25, -0.75], 4, (v, at, x) => v.setFloat32(at, x, true)),
      ),
    );
    expectSamples(decodeWav(f32).samples, [0.25, -0.75]);
    const f64 = riff(
      fmt({ tag: 3, bits: 64 }),
      chunk(
        'data',
        data([0.125, -1], 8, (v, at, x) => v.setFloat64(at, x, true)),
      ),
    );
    expectSamples(decodeWav(f64).samples, [0.125, -1]);
  });

  it('reads G.711 µ-law and A-law', () => {
    // µ-law 0xff and A-law 0xd5 are zero; µ-law 0x80 and A-law 0xaa are the loudest positive values.
    expectSamples(decodeWav(riff(fmt({ tag: 7, bits: 8 }), chunk('data', Uint8Array.from([0xff, 0x80])))).samples, [
      0,
      32124 / 32768,
    ]);
    expectSamples(decodeWav(riff(fmt({ tag: 6, bits: 8 }), chunk('data', Uint8Array.from([0xd5, 0xaa])))).samples, [
      8 / 32768,
      32256 / 32768,
    ]);
  });

  it('reads WAVE_FORMAT_EXTENSIBLE, 20-bit audio in 24-bit containers included', () => {
    const wav = riff(
      fmt({ tag: 1, bits: 24, extensible: 20, channels: 2 }),
      chunk('data', data([0x400000, 0x200000], 3, int24)),
    );
    const decoded = decodeWav(wav);
    expect(decoded.channels).toBe(2);
    expectSamples(decoded.samples, [0.375]);
    const float = riff(
      fmt({ tag: 3, bits: 32, extensible: 32 }),
      chunk(
        'data',
        data([0.5], 4, (v, at, x) => v.setFloat32(at, x, true)),
      ),
    );
    expectSamples(decodeWav(float).samples, [0.5]);
  });

  it('averages channels to mono', () => {
    const stereo = riff(
      fmt({ channels: 2, sampleRate: 44_100 }),
      chunk(
        'data',
        data([0x4000, -0x4000, 0x4000, 0x0000], 2, (v, at, x) => v.setInt16(at, x, true)),
      ),
    );
    const decoded = decodeWav(stereo);
    expect(decoded.channels).toBe(2);
    expect(decoded.sampleRate).toBe(44_100);
    expectSamples(decoded.samples, [0, 0.25]);
    expect(decoded.durationSeconds).toBeCloseTo(2 / 44_100);
  });

  it('skips LIST and fact chunks and the pad byte after an odd-sized chunk', () => {
    const wav = riff(
      chunk('LIST', new TextEncoder().encode('INFOISFT\x05\x00\x00\x00odd')), // 15 bytes: padded to 16
      fmt({ bits: 8 }),
      chunk('fact', Uint8Array.from([3, 0, 0, 0])),
      chunk('data', Uint8Array.from([128, 192, 64])), // odd, and last: padded
      chunk('id3 ', Uint8Array.from([1, 2, 3])),
    );
    expectSamples(decodeWav(wav).samples, [0, 0.5, -0.5]);
  });

  it('reads a cut-short data chunk as far as it goes, in whole frames', () => {
    const full = riff(
      fmt({ channels: 2 }),
      chunk(
        'data',
        data([0x4000, 0x4000, 0x2000, 0x2000, 0x1000, 0x1000], 2, (v, at, x) => v.setInt16(at, x, true)),
      ),
    );
    const cut = full.subarray(0, full.length - 3); // the last frame loses 3 of its 4 bytes
    expectSamples(decodeWav(cut).samples, [0.5, 0.25]);
  });

  it('reads a data size left at 0 or 0xFFFFFFFF by a streaming writer as the rest of the file', () => {
    for (const size of [0, 0xffffffff]) {
      const wav = riff(fmt({ bits: 8 }), chunk('data', Uint8Array.from([192, 64])));
      new DataView(wav.buffer).setUint32(wav.length - 6, size, true);
      expectSamples(decodeWav(wav).samples, [0.5, -0.5]);
    }
  });

  it('reads from a view into a larger buffer', () => {
    const wav = encodeWav(Float32Array.from([0.5]), 8000);
    const bigger = new Uint8Array(wav.length + 7);
    bigger.set(wav, 5);
    expectSamples(decodeWav(bigger.subarray(5, 5 + wav.length)).samples, [0.5]);
  });

  it('takes an empty data chunk as no audio', () => {
    const decoded = decodeWav(riff(fmt({}), chunk('data', new Uint8Array(0))));
    expect(decoded.samples.length).toBe(0);
    expect(decoded.durationSeconds).toBe(0);
  });

  it.each([
    ['not RIFF', new TextEncoder().encode('ID3\x03 this is an mp3 file'), /not a WAV file/],
    ['too short', new TextEncoder().encode('RIFF'), /not a WAV file/],
    ['no format chunk', riff(chunk('data', new Uint8Array(4))), /data comes before its format chunk/],
    ['no data chunk', riff(fmt({})), /no data chunk/],
    ['nothing after WAVE', riff(), /no format chunk/],
    ['a format chunk cut short', riff(fmt({})).subarray(0, 30), /format chunk is cut short/],
    ['a tiny format chunk', riff(chunk('fmt ', new Uint8Array(8)), chunk('data', new Uint8Array(2))), /too small/],
    ['zero channels', riff(fmt({ channels: 0, blockAlign: 2 }), chunk('data', new Uint8Array(2))), /0 channels/],
    ['a zero sample rate', riff(fmt({ sampleRate: 0 }), chunk('data', new Uint8Array(2))), /0 Hz/],
    [
      'ADPCM',
      riff(fmt({ tag: 2, bits: 4, blockAlign: 256 }), chunk('data', new Uint8Array(2))),
      /4-bit Microsoft ADPCM/,
    ],
    ['MP3 in WAV', riff(fmt({ tag: 0x55, bits: 0, blockAlign: 1 }), chunk('data', new Uint8Array(2))), /MP3 audio/],
    ['16-bit float', riff(fmt({ tag: 3, bits: 16 }), chunk('data', new Uint8Array(2))), /16-bit float/],
    [
      'a short extensible chunk',
      riff(
        chunk('fmt ', Uint8Array.from([0xfe, 0xff, 1, 0, 0x40, 0x1f, 0, 0, 0, 0, 0, 0, 2, 0, 16, 0, 0, 0])),
        chunk('data', new Uint8Array(2)),
      ),
      /extensible format chunk is too small/,
    ],
  ])('rejects %s with what to send instead', (_, bytes, message) => {
    let error: unknown;
    try {
      decodeWav(bytes);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toMatch(/send 16-bit PCM wav, or mp3, ogg, webm or m4a\.$/);
    expect((error as AudioDecodeError).param).toBe('file');
  });

  // Issue 41: the rate sizes the samples resampled and the resampler's filter (at 4 GHz, millions of taps for each of
  // 4,096 phases), so it is bounded before either, as are the channels.
  it.each([
    ['800 Hz', fmt({ sampleRate: 800 }), 'says its sample rate is 800 Hz; audio is read at 8000 to 384000 Hz'],
    ['4 GHz', fmt({ sampleRate: 3_999_999_999 }), 'says its sample rate is 3999999999 Hz'],
    ['33 channels', fmt({ channels: 33 }), 'says it has 33 channels; audio is read with 1 to 32'],
  ])('refuses a header of %s before decoding a sample', (_, format, message) => {
    expect(() => decodeWav(riff(format, chunk('data', new Uint8Array(66))))).toThrow(`The audio (WAV) ${message}`);
  });
});

describe('isWav', () => {
  it('checks the RIFF/WAVE magic only', () => {
    expect(isWav(encodeWav(new Float32Array(0), 8000))).toBe(true);
    expect(isWav(new TextEncoder().encode('RIFF\0\0\0\0AVI LIST'))).toBe(false);
    expect(isWav(new TextEncoder().encode('OggS'))).toBe(false);
    expect(isWav(new Uint8Array(0))).toBe(false);
  });
});

describe('encodeWav', () => {
  it('writes a 44-byte header and clips beyond [-1, 1]', () => {
    const wav = encodeWav(Float32Array.from([2, -2]), 22_050);
    expect(wav.length).toBe(48);
    const view = new DataView(wav.buffer);
    expect(view.getUint32(4, true)).toBe(40);
    expect(view.getUint32(24, true)).toBe(22_050);
    expect(view.getInt16(44, true)).toBe(32767);
    expect(view.getInt16(46, true)).toBe(-32768);
  });
});
