import { createOpenAI } from '@ai-sdk/openai';
import { experimental_generateSpeech as generateSpeech } from 'ai';
import { createParser } from 'eventsource-parser';
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler, type Handler } from '../src/api/index.ts';
import { SPEECH_FORMATS, type SpeechFormat } from '../src/audio/index.ts';
import type { SpeechEvent } from '../src/engine-interface/index.ts';
import { createEngine } from '../src/models/index.ts';
import { bundledProfile } from '../src/models/model-profile.ts';
import { KeyRing } from '../src/keys/index.ts';
import { OPENAI_VOICES } from '../src/engines/speech/voices.ts';
import { ffmpegDecode, ffprobe, hasFfmpeg } from '../src/audio/encode/encoded-audio.test-support.ts';
import { BUNDLED_MODELS, openaiClient } from './support/lantern.ts';
import { speechClips } from './support/speech-fixture.ts';
import { wordErrors } from './support/word-error-rate.ts';
import { sdkRefusal } from './support/api-error.ts';

/**
 * Text to speech with the bundled tiny-speech (scripts/fixtures/tts_fixture.py), through the handler and the official
 * openai SDK and the AI SDK: every format decoded by a standard decoder (ffmpeg) at the rate and length claimed, the
 * audio sent sentence by sentence, the errors, and the round trip: what tiny-speech says, tiny-whisper writes down.
 */
const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
let handler: Handler;
let client: OpenAI;
let key: string;

beforeAll(async () => {
  const keys = new KeyRing();
  key = (await keys.issue('speech')).key;
  handler = createHandler({ engine, keys, onServerError: () => {} });
  client = openaiClient(handler, key, { maxRetries: 0 });
});

const FOUR_SENTENCES = 'The red fox runs. Open the door please. Seven one three. The black cat sleeps on Monday.';

/** ffprobe's codec name for each format (aac needs its optional encoder: installed for Lantern's tests). */
const CODECS: Record<SpeechFormat, string> = {
  mp3: 'mp3',
  opus: 'opus',
  aac: 'aac',
  flac: 'flac',
  wav: 'pcm_s16le',
  pcm: 'pcm_s16le',
};

const speak = async (format: SpeechFormat, input = FOUR_SENTENCES, voice = 'alloy') => {
  const response = await client.audio.speech.create({ model: 'tts-1', input, voice, response_format: format });
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) };
};

describe.skipIf(!hasFfmpeg)('POST /v1/audio/speech on tiny-speech, every format', () => {
  let seconds: number;

  beforeAll(async () => {
    const { bytes } = await speak('pcm');
    seconds = bytes.byteLength / 2 / 24_000;
  });

  it.each(SPEECH_FORMATS)('%s decodes with ffmpeg, mono at 24 kHz, as long as the speech', async (format) => {
    const { response, bytes } = await speak(format);
    expect(response.headers.get('x-lantern-backend')).toMatch(/^transformers:tiny-speech@/);
    const raw = format === 'pcm' ? 's16le' : undefined;
    const probed = ffprobe(bytes, raw);
    expect(probed.codec).toBe(CODECS[format]);
    expect(probed.channels).toBe(1);
    // Opus always decodes at 48 kHz (its header keeps the 24 kHz input rate); the others are 24 kHz.
    expect(probed.sampleRate).toBe(format === 'opus' ? 48_000 : 24_000);
    const decoded = ffmpegDecode(bytes, raw).samples.length / 24_000;
    // Lossy codecs add their encoder's delay and pad to a whole frame: tens of milliseconds.
    expect(Math.abs(decoded - seconds)).toBeLessThan(0.15);
    expect(seconds).toBeGreaterThan(3); // four sentences of speech, not a click
  });

  it("OpenAI's defaults, no response_format: mp3, as audio/mpeg (wasm-media-encoders is Lantern's dependency)", async () => {
    const response = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'The red fox runs.' });
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(ffprobe(new Uint8Array(await response.arrayBuffer())).codec).toBe('mp3');
  });

  it('the same audio as server-sent events: the deltas are the bytes, then the usage', async () => {
    const { bytes } = await speak('wav');
    const response = await handler(
      new Request('http://lantern.test/v1/audio/speech', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-4o-mini-tts',
          input: FOUR_SENTENCES,
          voice: 'alloy',
          response_format: 'wav',
          stream_format: 'sse',
        }),
      }),
    );
    const events: { type: string; audio?: string; usage?: Record<string, number> }[] = [];
    createParser({ onEvent: (e) => events.push(JSON.parse(e.data)) }).feed(await response.text());
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    expect(deltas.length).toBeGreaterThanOrEqual(4); // a sentence at a time, at least
    const streamed = Buffer.concat(deltas.map((e) => Buffer.from(e.audio!, 'base64')));
    expect(new Uint8Array(streamed)).toEqual(bytes);
    const done = events.at(-1)!;
    expect(done.type).toBe('speech.audio.done');
    expect(done.usage!.output_tokens).toBe(Math.ceil((((bytes.byteLength - 44) / 2) * 40) / 24_000));
    expect(done.usage!.total_tokens).toBe(done.usage!.input_tokens! + done.usage!.output_tokens!);
  });
});

describe('speech as it is synthesised', () => {
  it.each(SPEECH_FORMATS)(
    '%s: the first audio of four sentences comes before the last sentence is synthesised',
    async (format) => {
      const order: string[] = [];
      const onEvent = (event: SpeechEvent) =>
        order.push(event.type === 'audio' ? 'audio' : `spoken ${event.characters}/${event.total}`);
      await engine.speak('ochre-lark-4', { input: FOUR_SENTENCES, voice: 'nova', speed: 1, format }, { onEvent });
      const firstAudio = order.indexOf('audio');
      const allSpoken = order.indexOf(`spoken ${FOUR_SENTENCES.length}/${FOUR_SENTENCES.length}`);
      expect(order.filter((e) => e.startsWith('spoken'))).toHaveLength(4);
      expect(firstAudio).toBeGreaterThanOrEqual(0);
      expect(firstAudio).toBeLessThan(allSpoken);
    },
  );

  it('the body is chunked as it is made: several reads, one or more a sentence', async () => {
    const response = await client.audio.speech.create({
      model: 'ochre-lark-4',
      input: FOUR_SENTENCES,
      voice: 'echo',
      response_format: 'pcm',
    });
    const reader = response.body!.getReader();
    let reads = 0;
    while (!(await reader.read()).done) reads += 1;
    expect(reads).toBeGreaterThanOrEqual(4);
  });
});

describe('voices, speed and errors', () => {
  it("takes OpenAI's voices and the model's own, and lists both in /v1/models", async () => {
    const models = await client.models.list();
    const card = models.data.find((m) => m.id === 'ochre-lark-4') as unknown as Record<string, unknown>;
    expect(card).toMatchObject({ output_modalities: ['audio'], input_modalities: ['text'] });
    expect(card.voices).toEqual([...OPENAI_VOICES, 'us_female', 'us_male', 'gb_female', 'gb_male']);
    const own = await speak('pcm', 'Hello.', 'gb_male');
    const mapped = await speak('pcm', 'Hello.', 'fable'); // fable is gb_male here
    expect(mapped.bytes).toEqual(own.bytes);
    const other = await speak('pcm', 'Hello.', 'us_female');
    expect(other.bytes).not.toEqual(own.bytes);
  });

  it('speed changes the pace: twice as fast is about half as long', async () => {
    const length = async (speed: number) => {
      const response = await client.audio.speech.create({
        model: 'tts-1',
        input: FOUR_SENTENCES,
        voice: 'alloy',
        response_format: 'pcm',
        speed,
      });
      return (await response.arrayBuffer()).byteLength;
    };
    const ratio = (await length(2)) / (await length(1));
    expect(ratio).toBeGreaterThan(0.35);
    expect(ratio).toBeLessThan(0.7);
  });

  it('400 digits and a word of 4,096 letters are spoken, and the engine goes on (issue 63 #2, #7)', async () => {
    // phonemize overflowed its stack on the digits, which replaced the engine thread; the word held it 34 s before
    // any audio. Each is now spoken piece by piece: the first audio is read, the rest left (the request aborted).
    for (const input of ['1'.repeat(400), 'a'.repeat(4096)]) {
      const response = await client.audio.speech.create({
        model: 'tts-1',
        input,
        voice: 'alloy',
        response_format: 'pcm',
      });
      const reader = response.body!.getReader();
      const first = await reader.read();
      expect(first.done).toBe(false);
      expect(first.value!.byteLength).toBeGreaterThan(0);
      await reader.cancel();
    }
    const after = await speak('pcm', 'Hello.', 'gb_male');
    expect(after.bytes.length).toBeGreaterThan(0);
  });

  it('a long sentence at speed 0.25 is said in passes of a few seconds each, not one of its whole length (issue 63 #7)', async () => {
    // One pass of Kokoro's 510 phonemes at 0.25 was 139 s of audio, 31 s on the engine's thread and 3.9 GB kept.
    const input = 'The red fox runs and the black cat sleeps on Monday morning at the big window.';
    const passes: number[] = [0];
    await engine.speak(
      'ochre-lark-4',
      { input, voice: 'alloy', speed: 0.25, format: 'pcm' },
      {
        onEvent: (event) => {
          if (event.type === 'audio') passes[passes.length - 1]! += event.bytes.byteLength / 2 / 24_000;
          else passes.push(0);
        },
      },
    );
    passes.pop(); // after the last progress event
    expect(passes.length).toBeGreaterThan(3);
    expect(passes.reduce((a, b) => a + b)).toBeGreaterThan(10); // the whole sentence, slowly
    expect(Math.max(...passes)).toBeLessThan(7);
  });

  it('an unknown voice is 400 naming `voice` and the voices there are; an unknown model 404', async () => {
    const refused = await sdkRefusal(client.audio.speech.create({ model: 'tts-1', input: 'Hi.', voice: 'zeus' }));
    expect(refused).toMatchObject({ status: 400, param: 'voice' });
    expect(refused.message).toMatch(/`alloy`.*`us_female`/);
    expect(
      await sdkRefusal(client.audio.speech.create({ model: 'gpt-9-tts', input: 'Hi.', voice: 'alloy' })),
    ).toMatchObject({ status: 404 });
    expect(
      await sdkRefusal(client.audio.speech.create({ model: 'whisper-1', input: 'Hi.', voice: 'alloy' })),
    ).toMatchObject({ status: 404 });
  });
});

describe('the AI SDK', () => {
  it('experimental_generateSpeech gets a wav it can tell is a wav', async () => {
    const openai = createOpenAI({
      apiKey: key,
      baseURL: 'http://lantern.test/v1',
      fetch: (url, init) => handler(new Request(url, init)),
    });
    const { audio } = await generateSpeech({
      model: openai.speech('tts-1'),
      text: 'The bird sings.',
      voice: 'nova',
      outputFormat: 'wav',
      speed: 1.25,
    });
    expect(audio.mediaType).toBe('audio/wav');
    expect(new TextDecoder().decode(audio.uint8Array.subarray(0, 4))).toBe('RIFF');
    expect(audio.uint8Array.byteLength).toBeGreaterThan(44 + 24_000); // half a second or more
  });
});

describe('the round trip: tiny-speech says it, tiny-whisper writes it down', () => {
  // tiny-whisper's held-out phrases (test/fixtures/speech): neither fixture was trained on them.
  const phrases = speechClips.filter((c) => /^clip\d+\.wav$/.test(c.file)).map((c) => c.text);

  it('with a word error rate of at most 10% over every voice', async () => {
    let errors = 0;
    let words = 0;
    const misses: string[] = [];
    const voices = ['us_female', 'us_male', 'gb_female', 'gb_male'];
    for (const [index, text] of phrases.entries()) {
      const voice = voices[index % voices.length]!;
      const { bytes } = await speak('wav', text, voice);
      const heard = await client.audio.transcriptions.create({
        file: await toFile(bytes, 'speech.wav', { type: 'audio/wav' }),
        model: 'whisper-1',
      });
      const score = wordErrors(text, heard.text);
      errors += score.errors;
      words += score.words;
      if (score.errors > 0) misses.push(`${voice}: ${JSON.stringify(heard.text)} for ${JSON.stringify(text)}`);
    }
    expect(phrases.length).toBeGreaterThanOrEqual(15);
    expect(errors / words, misses.join('\n')).toBeLessThanOrEqual(0.1);
  });
});
