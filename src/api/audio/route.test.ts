import type OpenAI from 'openai';
import { toFile } from 'openai';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeEngine } from '../../../test/support/fake-engine.ts';
import { openaiClient } from '../../../test/support/lantern.ts';
import { KeyRing } from '../../keys/index.ts';
import { createHandler, type Handler } from '../create-handler.ts';
import { sdkRefusal } from '../../../test/support/api-error.ts';
import { formatBytes, longOggOpus, wavFile } from '../../../test/support/audio-files.ts';

let engine: FakeEngine;
let handler: Handler;
let client: OpenAI;
let key: string;

beforeEach(async () => {
  engine = new FakeEngine();
  const keys = new KeyRing();
  key = (await keys.issue('test')).key;
  handler = createHandler({ engine, keys, onServerError: () => {}, limits: { maxAudioBytes: 1000 } });
  client = openaiClient(handler, key, { maxRetries: 0 });
});

const audio = (bytes = 100, name = 'speech.wav') => toFile(new Uint8Array(bytes), name, { type: 'audio/wav' });

/** A multipart request built by hand, for what the SDK would not send. */
function post(path: string, fields: Record<string, string | Blob>, headers: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return handler(
    new Request(`http://lantern.test/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, ...headers },
      body: form,
    }),
  );
}

describe('POST /v1/audio/transcriptions through the openai SDK', () => {
  it('json: the text, and the audio billed in whole seconds as whisper-1 answers', async () => {
    const result = await client.audio.transcriptions.create({ file: await audio(), model: 'speech-model' });
    expect(result).toEqual({ text: 'Hello there. General Kenobi.', usage: { type: 'duration', seconds: 4 } });
    const { request } = engine.transcriptions[0]!;
    expect(request).toMatchObject({ task: 'transcribe', temperature: 0, words: false, maxSeconds: 3600 });
    expect(request.audio).toMatchObject({ name: 'speech.wav', type: 'audio/wav' });
    expect(request.audio.bytes.byteLength).toBe(100);
  });

  it('text, srt and vtt come back as strings', async () => {
    const text = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'text',
    });
    expect(text).toBe('Hello there. General Kenobi.\n');
    const srt = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'srt',
    });
    expect(srt).toBe(
      '1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n00:00:01,500 --> 00:00:03,500\nGeneral Kenobi.\n\n',
    );
    const vtt = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'vtt',
    });
    expect(vtt).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n00:00:01.500 --> 00:00:03.500\nGeneral Kenobi.\n\n',
    );
  });

  it('verbose_json: task, language by name, duration, segments, and words when asked for', async () => {
    const verbose = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
      language: 'en',
      prompt: 'Star Wars.',
      temperature: 0.2,
    });
    expect(verbose).toMatchObject({ task: 'transcribe', language: 'english', duration: 3.5 });
    expect(verbose.segments![1]).toEqual({
      id: 1,
      seek: 0,
      start: 1.5,
      end: 3.5,
      text: ' General Kenobi.',
      tokens: [1, 2],
      temperature: 0,
      avg_logprob: -0.1,
      compression_ratio: 1,
      no_speech_prob: 0.01,
    });
    expect(verbose.words).toHaveLength(4);
    expect(engine.transcriptions[0]!.request).toMatchObject({
      language: 'en',
      prompt: 'Star Wars.',
      temperature: 0.2,
      words: true,
    });
    const wordsOnly = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'verbose_json',
      timestamp_granularities: ['word'],
    });
    expect(wordsOnly.segments).toBeUndefined();
    expect(wordsOnly.words![0]).toEqual({ word: 'Hello', start: 0, end: 0.8 });
  });

  it('streams transcript.text.delta events, then transcript.text.done', async () => {
    const stream = await client.audio.transcriptions.create({
      file: await audio(),
      model: 'speech-model',
      stream: true,
    });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events).toEqual([
      { type: 'transcript.text.delta', delta: 'Hello there.' },
      { type: 'transcript.text.delta', delta: ' General Kenobi.' },
      { type: 'transcript.text.done', text: 'Hello there. General Kenobi.' },
    ]);
  });

  it('translations: the same answers, under task translate', async () => {
    const verbose = await client.audio.translations.create({
      file: await audio(),
      model: 'speech-model',
      response_format: 'verbose_json',
    });
    expect(verbose).toMatchObject({ task: 'translate', text: 'Hello there. General Kenobi.' });
    expect(engine.transcriptions[0]!.request.task).toBe('translate');
  });
});

describe('audio request errors name their parameter', () => {
  const refused = sdkRefusal;

  it.each([
    [{ response_format: 'diarized_json' }, 'response_format', /no model here tells speakers apart/],
    [{ response_format: 'xml' }, 'response_format', /expected one of json, text, srt, verbose_json, vtt/],
    [{ temperature: 1.5 }, 'temperature', /from 0 to 1/],
    [{ timestamp_granularities: ['word'] }, 'timestamp_granularities', /needs `response_format: 'verbose_json'`/],
    [{ response_format: 'verbose_json', timestamp_granularities: ['line'] }, 'timestamp_granularities', /`segment`/],
    [{ language: 'English' }, 'language', /ISO-639-1/],
    [{ stream: true, response_format: 'srt' }, 'stream', /json or text/],
    [{ include: ['logprobs'] }, 'include', /not supported/],
    [{ known_speaker_names: ['ann'] }, 'known_speaker_names', /no model here diarizes/],
  ])('%j is a 400 naming %s', async (params, param, message) => {
    const error = await refused(
      client.audio.transcriptions.create({ file: await audio(), model: 'speech-model', ...(params as object) }),
    );
    expect(error).toMatchObject({ status: 400, param });
    expect(error.message).toMatch(message);
    expect(engine.transcriptions).toHaveLength(0);
  });

  it('a file over the limit, a missing file or model, text for the file: 400 before the engine', async () => {
    expect(
      await refused(client.audio.transcriptions.create({ file: await audio(1001), model: 'speech-model' })),
    ).toMatchObject({ status: 400, param: 'file' });
    const missingFile = await post('/audio/transcriptions', { model: 'speech-model' });
    expect(missingFile.status).toBe(400);
    expect((await missingFile.json()).error).toMatchObject({ param: 'file' });
    const textFile = await post('/audio/transcriptions', { model: 'speech-model', file: 'not a file' });
    expect((await textFile.json()).error).toMatchObject({ param: 'file' });
    const noModel = await post('/audio/transcriptions', { file: new Blob([new Uint8Array(4)]) });
    expect((await noModel.json()).error).toMatchObject({ param: 'model' });
    expect(engine.transcriptions).toHaveLength(0);
  });

  // Issue 41: what a file's headers and frames say it decodes to is checked before the engine is asked, whoever serves.
  it('audio measured past its limits: 400 naming file before the engine; another key answered after', async () => {
    const keys = new KeyRing();
    const [first, second] = [(await keys.issue('a')).key, (await keys.issue('b')).key];
    const limits = { maxAudioBytes: 25 * 1024 * 1024, maxAudioSeconds: 60 };
    const served = createHandler({ engine, keys, onServerError: () => {}, limits });
    const sdk = openaiClient(served, first, { maxRetries: 0 });
    const upload = (bytes: Uint8Array, name: string) => toFile(bytes, name);
    const cases: [Uint8Array, string, RegExp][] = [
      [wavFile({ sampleRate: 800, dataBytes: 25_000_000 }), 'slow.wav', /\(WAV\) says its sample rate is 800 Hz/],
      [wavFile({ sampleRate: 3_999_999_999, dataBytes: 1000 }), 'fast.wav', /sample rate is 3999999999 Hz/],
      [wavFile({ sampleRate: 16_000, channels: 65_535, dataBytes: 65_535 * 10 }), 'wide.wav', /65535 channels/],
      [wavFile({ sampleRate: 8_000, dataBytes: 1_000_000 }), 'long.wav', /\(WAV\) is 125\.0 s long; the limit is 60 s/],
      [longOggOpus(7200), 'hours.ogg', /\(Ogg Opus\) is 7200\.0 s long; the limit is 60 s/],
    ];
    for (const [bytes, name, message] of cases) {
      const error = await refused(
        sdk.audio.transcriptions.create({ file: await upload(bytes, name), model: 'speech-model' }),
      );
      expect(error, name).toMatchObject({ status: 400, param: 'file' });
      expect(error.message, name).toMatch(message);
    }
    expect(engine.transcriptions).toHaveLength(0);
    const other = openaiClient(served, second, { maxRetries: 0 });
    const answer = await other.audio.transcriptions.create({
      file: await upload(formatBytes('codec.webm'), 'codec.webm'),
      model: 'speech-model',
    });
    expect(answer.text).toBe('Hello there. General Kenobi.');
  });

  it('a format not measured here goes to the engine, which decides', async () => {
    await client.audio.transcriptions.create({ file: await audio(100, 'speech.aiff'), model: 'speech-model' });
    expect(engine.transcriptions).toHaveLength(1);
  });

  it('a JSON body is refused: the audio routes take multipart/form-data', async () => {
    const response = await handler(
      new Request('http://lantern.test/v1/audio/transcriptions', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'speech-model', file: 'x' }),
      }),
    );
    expect(response.status).toBe(400);
    expect((await response.json()).error.message).toMatch(/multipart\/form-data/);
  });

  it('a chat model for transcription, and the speech model for chat: 404 model_not_found naming model', async () => {
    expect(
      await refused(client.audio.transcriptions.create({ file: await audio(), model: 'chat-model' })),
    ).toMatchObject({ status: 404, param: 'model' });
    expect(
      await refused(
        client.chat.completions.create({ model: 'speech-model', messages: [{ role: 'user', content: 'hi' }] }),
      ),
    ).toMatchObject({ status: 404, param: 'model' });
  });

  it('language is not a parameter of translations, nor is stream', async () => {
    const language = await post('/audio/translations', {
      model: 'speech-model',
      file: new File([new Uint8Array(4)], 'a.wav'),
      language: 'de',
    });
    expect((await language.json()).error).toMatchObject({ param: 'language' });
    const stream = await post('/audio/translations', {
      model: 'speech-model',
      file: new File([new Uint8Array(4)], 'a.wav'),
      stream: 'true',
    });
    expect((await stream.json()).error).toMatchObject({ param: 'stream' });
  });

  it('without a key: 401', async () => {
    const response = await post('/audio/transcriptions', { model: 'speech-model' }, { authorization: 'Bearer nope' });
    expect(response.status).toBe(401);
  });
});
