import type OpenAI from 'openai';
import { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler } from '../src/api/index.ts';
import { createEngine } from '../src/models/index.ts';
import { bundledProfile } from '../src/models/model-profile.ts';
import { KeyRing } from '../src/keys/index.ts';
import { sdkRefusal } from './support/api-error.ts';
import { longMp3, longOggOpus, wavFile } from './support/audio-files.ts';
import { BUNDLED_MODELS, openaiClient } from './support/lantern.ts';
import { speechBytes, speechClip } from './support/speech-fixture.ts';
import { wordErrors } from './support/word-error-rate.ts';

/**
 * Issue 41's audio reproductions, through the official openai SDK and the real engine on the bundled models: a file
 * whose header or frames say it decodes to hours, or at a rate or channel count no audio has, is a 400 naming `file`
 * from its headers and frames alone, and another key is answered as it is sent and after. Before the fix, the 25 MB
 * WAV saying 800 Hz was decoded and resampled to 2.5 GB over 27 s before its length was checked.
 */
const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
let attacker: OpenAI;
let other: OpenAI;

beforeAll(async () => {
  const keys = new KeyRing();
  const handler = createHandler({ engine, keys, onServerError: () => {} });
  attacker = openaiClient(handler, (await keys.issue('attacker')).key, { maxRetries: 0 });
  other = openaiClient(handler, (await keys.issue('other')).key, { maxRetries: 0 });
  // Loaded before the clock starts: the figures logged below are the refusals' own.
  await other.embeddings.create({ model: 'jade-mole-4', input: 'warm up' });
  await other.audio.transcriptions.create({
    file: await toFile(speechBytes('codec.wav'), 'codec.wav'),
    model: 'whisper-1',
  });
});

const CASES: [name: string, bytes: () => Uint8Array, message: RegExp][] = [
  [
    'a 25 MB 8-bit WAV saying 800 Hz',
    () => wavFile({ sampleRate: 800, dataBytes: 25_000_000 }),
    /^400 The audio \(WAV\) says its sample rate is 800 Hz; audio is read at 8000 to 384000 Hz/,
  ],
  ['a WAV saying 4 GHz', () => wavFile({ sampleRate: 3_999_999_999, dataBytes: 100_000 }), /3999999999 Hz/],
  [
    'a WAV of 65,535 channels',
    () => wavFile({ sampleRate: 16_000, channels: 65_535, dataBytes: 65_535 * 100 }),
    /says it has 65535 channels; audio is read with 1 to 32/,
  ],
  [
    '25 MB of 8 kbit/s MP3 frames: 6.9 hours',
    () => longMp3(25_000_000),
    /^400 The audio \(MP3\) is 25000\.7 s long; the limit is 3600 s/,
  ],
  [
    'Ogg Opus of 100 hours in 9 MB, its granule positions saying 0',
    () => longOggOpus(360_000),
    /^400 The audio \(Ogg Opus\) is 360000\.0 s long; the limit is 3600 s/,
  ],
];

describe('audio that would decode to hours, or is no audio, refused from its headers (issue 41)', () => {
  it.each(CASES)('%s: 400 naming file; another key answered during and after', async (name, bytes, message) => {
    const file = await toFile(bytes(), name.includes('MP3') ? 'long.mp3' : name.includes('Ogg') ? 'long.ogg' : 'a.wav');
    const started = performance.now();
    const refusal = sdkRefusal(attacker.audio.transcriptions.create({ file, model: 'whisper-1' }));
    // Sent while the refused file is read and measured: answered as if it were not there.
    const during = other.embeddings.create({ model: 'jade-mole-4', input: 'the other key' });
    const error = await refusal;
    const refusedAfter = performance.now() - started;
    expect(error).toMatchObject({ status: 400, param: 'file' });
    expect(error.message).toMatch(message);
    expect((await during).data).toHaveLength(1);
    const answered = performance.now() - started;
    const after = await other.audio.transcriptions.create({
      file: await toFile(speechBytes('codec.wav'), 'codec.wav'),
      model: 'whisper-1',
    });
    expect(wordErrors(speechClip('codec.wav').text, after.text).errors).toBeLessThanOrEqual(1);
    console.log(
      `${name} (${file.size} bytes): refused in ${refusedAfter.toFixed(0)} ms; the other key's embeddings sent ` +
        `beside it answered in ${answered.toFixed(0)} ms, its transcription after in ` +
        `${(performance.now() - started - answered).toFixed(0)} ms`,
    );
  });
});
