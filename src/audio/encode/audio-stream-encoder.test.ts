import { describe, expect, it } from 'vitest';
import { concatBytes } from '../../bytes/byte-chunks.ts';
import { createAudioEncoder, encoderAvailable } from './audio-stream-encoder.ts';
import {
  RATE,
  TONES,
  dominantTones,
  ffmpegDecode,
  ffprobe,
  hasFfmpeg,
  opusInputRate,
  toneSequence,
  unevenPieces,
} from './encoded-audio.test-support.ts';
import { floatToPcm16 } from './pcm-stream.ts';
import { SPEECH_FORMATS, type SpeechFormat } from './speech-formats.ts';

/** Each format as ffmpeg must read it, and how far its decoded length may stray from the input's. */
const EXPECTED: Record<SpeechFormat, { codec: string; inputFormat?: string; lengthSlack: number }> = {
  pcm: { codec: 'pcm_s16le', inputFormat: 's16le', lengthSlack: 0 },
  wav: { codec: 'pcm_s16le', lengthSlack: 0 },
  flac: { codec: 'flac', lengthSlack: 0 },
  // Ogg Opus trims the encoder's delay (pre-skip) and the last frame's padding (granule position) exactly.
  opus: { codec: 'opus', lengthSlack: 0 },
  // Neither raw mp3 without a LAME tag nor ADTS carries the encoder's delay and padding: ffmpeg gives them back, up
  // to two frames (mp3 at 24 kHz: 576 samples per frame; AAC: 1024).
  mp3: { codec: 'mp3', lengthSlack: 2 * 576 + 529 },
  aac: { codec: 'aac', lengthSlack: 2 * 1024 + 1024 },
};

interface Encoded {
  bytes: Uint8Array;
  /** Bytes returned by each push, then by finish. */
  perCall: number[];
}

async function encodeTones(format: SpeechFormat): Promise<Encoded> {
  const encoder = await createAudioEncoder(format, RATE);
  const parts: Uint8Array[] = [];
  const perCall: number[] = [];
  try {
    for (const piece of unevenPieces(toneSequence())) {
      const out = await encoder.push(piece);
      perCall.push(out.reduce((n, p) => n + p.length, 0));
      parts.push(...out);
    }
    const last = await encoder.finish();
    perCall.push(last.reduce((n, p) => n + p.length, 0));
    parts.push(...last);
  } finally {
    encoder.close();
  }
  return { bytes: concatBytes(parts), perCall };
}

describe.skipIf(!hasFfmpeg)('createAudioEncoder, decoded by ffmpeg', () => {
  const input = toneSequence();

  it.each(SPEECH_FORMATS)('%s: streams 24 kHz mono that ffmpeg decodes to the same tones', async (format) => {
    const { bytes, perCall } = await encodeTones(format);
    const expected = EXPECTED[format];

    // Streams: bytes leave with the first pushes, not only at the end.
    const pushes = perCall.slice(0, -1);
    expect(
      pushes.slice(0, 3).some((n) => n > 0),
      `bytes per call: ${perCall.join(', ')}`,
    ).toBe(true);
    expect(pushes.reduce((n, p) => n + p, 0)).toBeGreaterThan(bytes.length / 2);

    const probed = ffprobe(bytes, expected.inputFormat);
    expect(probed.codec).toBe(expected.codec);
    expect(probed.channels).toBe(1);
    // ffmpeg decodes Opus at 48 kHz whatever went in; the stream's header keeps the input rate.
    expect(format === 'opus' ? opusInputRate(bytes) : probed.sampleRate).toBe(RATE);

    const { samples } = ffmpegDecode(bytes, expected.inputFormat);
    expect(Math.abs(samples.length - input.length)).toBeLessThanOrEqual(expected.lengthSlack);
    if (['pcm', 'wav', 'flac'].includes(format)) {
      const exact = floatToPcm16(input);
      expect(new Uint8Array(samples.buffer)).toEqual(exact);
    } else {
      expect(dominantTones(samples)).toEqual(TONES);
    }
  });

  it('mp3 starts with an MPEG audio frame, no ID3 tag (clients sniff the first bytes)', async () => {
    const { bytes } = await encodeTones('mp3');
    expect(bytes[0]).toBe(0xff);
    expect(bytes[1]! & 0xe0).toBe(0xe0); // frame sync
    expect(String.fromCharCode(...bytes.subarray(0, 3))).not.toBe('ID3');
  });

  it('aac is ADTS (sync word first), flac starts fLaC, opus OggS, wav RIFF', async () => {
    const first = async (format: SpeechFormat) => (await encodeTones(format)).bytes.subarray(0, 4);
    const aac = await first('aac');
    expect([aac[0], aac[1]! & 0xf6]).toEqual([0xff, 0xf0]);
    expect(new TextDecoder().decode(await first('flac'))).toBe('fLaC');
    expect(new TextDecoder().decode(await first('opus'))).toBe('OggS');
    expect(new TextDecoder().decode(await first('wav'))).toBe('RIFF');
  });
});

describe('createAudioEncoder', () => {
  it('finishes cleanly with no samples, and close is safe after finish', async () => {
    for (const format of SPEECH_FORMATS) {
      const encoder = await createAudioEncoder(format, RATE);
      await encoder.finish();
      encoder.close();
      encoder.close();
    }
  });

  it('refuses to be used after finish', async () => {
    const encoder = await createAudioEncoder('pcm', RATE);
    await encoder.finish();
    await expect(encoder.push(new Float32Array(10))).rejects.toThrow(/finished/);
  });

  it('close aborts an encoder mid-stream', async () => {
    for (const format of ['flac', 'opus', 'aac', 'mp3'] as const) {
      const encoder = await createAudioEncoder(format, RATE);
      await encoder.push(toneSequence().subarray(0, 4800));
      encoder.close();
      await expect(encoder.push(new Float32Array(10))).rejects.toThrow();
    }
  });

  it('refuses a sample rate that is not a positive whole number', async () => {
    await expect(createAudioEncoder('wav', 0)).rejects.toThrow(RangeError);
    await expect(createAudioEncoder('wav', 22_050.5)).rejects.toThrow(RangeError);
  });

  it('says every format is available in Node with the optional packages installed', async () => {
    for (const format of SPEECH_FORMATS) expect(await encoderAvailable(format)).toBe(true);
  });
});
