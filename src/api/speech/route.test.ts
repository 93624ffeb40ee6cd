import type OpenAI from 'openai';
import { createParser } from 'eventsource-parser';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeEngine } from '../../../test/support/fake-engine.ts';
import { openaiClient } from '../../../test/support/lantern.ts';
import { sdkRefusal } from '../../../test/support/api-error.ts';
import { EngineError } from '../../engine-interface/index.ts';
import { KeyRing } from '../../keys/index.ts';
import { createHandler, type Handler } from '../create-handler.ts';

let engine: FakeEngine;
let handler: Handler;
let client: OpenAI;
let key: string;

beforeEach(async () => {
  engine = new FakeEngine();
  const keys = new KeyRing();
  key = (await keys.issue('test')).key;
  handler = createHandler({ engine, keys, onServerError: () => {}, limits: { maxSpeechChars: 50 } });
  client = openaiClient(handler, key, { maxRetries: 0 });
});

const post = (body: unknown) =>
  handler(
    new Request('http://lantern.test/v1/audio/speech', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

describe('POST /v1/audio/speech through the openai SDK', () => {
  it('answers the audio bytes, typed by format, with mp3 and speed 1 by default', async () => {
    const response = await client.audio.speech.create({ model: 'voice-model', input: 'Hello there.', voice: 'alloy' });
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
    expect(new TextDecoder().decode(await response.arrayBuffer())).toBe('Hello there.');
    expect(engine.speeches[0]!.request).toEqual({ input: 'Hello there.', voice: 'alloy', speed: 1, format: 'mp3' });
  });

  it.each([
    ['opus', 'audio/opus'],
    ['aac', 'audio/aac'],
    ['flac', 'audio/flac'],
    ['wav', 'audio/wav'],
    ['pcm', 'audio/pcm'],
  ] as const)('%s is %s', async (format, type) => {
    const response = await client.audio.speech.create({
      model: 'voice-model',
      input: 'Hi.',
      voice: 'nova',
      response_format: format,
      speed: 1.5,
      instructions: 'Cheerfully.',
    });
    expect(response.headers.get('content-type')).toBe(type);
    expect(engine.speeches[0]!.request).toMatchObject({ format, speed: 1.5, instructions: 'Cheerfully.' });
  });

  it('streams the bytes as they are made: the first chunk is readable before the engine has finished', async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    engine.onSpeak = async (_request, options) => {
      options.onEvent?.({ type: 'audio', bytes: Uint8Array.of(1, 2, 3) });
      await finished;
      options.onEvent?.({ type: 'audio', bytes: Uint8Array.of(4) });
      return { seconds: 1, sampleRate: 24_000, usage: { inputTokens: 1, outputTokens: 40 } };
    };
    const response = await client.audio.speech.create({ model: 'voice-model', input: 'Hi.', voice: 'echo' });
    const reader = response.body!.getReader();
    expect((await reader.read()).value).toEqual(Uint8Array.of(1, 2, 3));
    finish();
    expect((await reader.read()).value).toEqual(Uint8Array.of(4));
    expect((await reader.read()).done).toBe(true);
  });

  it('sse: speech.audio.delta events of base64 audio, then speech.audio.done with the usage, and no [DONE]', async () => {
    const response = await post({ model: 'voice-model', input: 'Hello there.', voice: 'alloy', stream_format: 'sse' });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events: unknown[] = [];
    const text = await response.text();
    createParser({ onEvent: (e) => events.push(JSON.parse(e.data)) }).feed(text);
    expect(text).not.toContain('[DONE]');
    const deltas = events.slice(0, -1) as { type: string; audio: string }[];
    expect(deltas.every((e) => e.type === 'speech.audio.delta')).toBe(true);
    const bytes = deltas.flatMap((e) => [...atob(e.audio)].map((c) => c.charCodeAt(0)));
    expect(new TextDecoder().decode(Uint8Array.from(bytes))).toBe('Hello there.');
    expect(events.at(-1)).toEqual({
      type: 'speech.audio.done',
      usage: { input_tokens: 12, output_tokens: 40, total_tokens: 52 },
    });
  });

  it('a failure before any audio keeps its status; after the first audio, the body fails rather than end short', async () => {
    engine.onSpeak = async () => {
      throw new EngineError('invalid_request', 'Unknown voice `zeus`.', { param: 'voice' });
    };
    const refused = await sdkRefusal(client.audio.speech.create({ model: 'voice-model', input: 'Hi.', voice: 'zeus' }));
    expect(refused).toMatchObject({ status: 400, param: 'voice' });

    engine.onSpeak = async (_request, options) => {
      options.onEvent?.({ type: 'audio', bytes: Uint8Array.of(1) });
      throw new EngineError('internal', 'The model failed.');
    };
    const response = await client.audio.speech.create({ model: 'voice-model', input: 'Hi.', voice: 'alloy' });
    await expect(response.arrayBuffer()).rejects.toThrow();
  });

  it('a model that is not for speech, or none, is 404', async () => {
    expect(
      await sdkRefusal(client.audio.speech.create({ model: 'chat-model', input: 'Hi.', voice: 'alloy' })),
    ).toMatchObject({
      status: 404,
    });
    expect(
      await sdkRefusal(client.audio.speech.create({ model: 'tts-9', input: 'Hi.', voice: 'alloy' })),
    ).toMatchObject({
      status: 404,
    });
  });
});

describe('speech request checks', () => {
  it.each([
    [{ input: undefined }, 'input', /Missing required parameter/],
    [{ input: '   ' }, 'input', /empty/],
    [{ input: 'x'.repeat(51) }, 'input', /50/],
    [{ voice: undefined }, 'voice', /Missing required parameter/],
    [{ voice: { id: 'voice_123' } }, 'voice', /Custom voices/],
    [{ response_format: 'ogg' }, 'response_format', /"mp3", "opus", "aac", "flac", "wav", "pcm"/],
    [{ speed: 0.2 }, 'speed', />= 0.25/],
    [{ speed: 4.5 }, 'speed', /<= 4/],
    [{ stream_format: 'chunks' }, 'stream_format', /"audio", "sse"/],
    [{ instructions: 'x'.repeat(51) }, 'instructions', /50/],
    [{ model: undefined }, 'model', /Missing required parameter/],
  ])('refuses %j naming %s', async (fields, param, message) => {
    const response = await post({ model: 'voice-model', input: 'Hi.', voice: 'alloy', ...fields });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { param: string; message: string } };
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
    expect(engine.speeches).toHaveLength(0);
  });

  it('takes the bounds themselves, and nulls as not given', async () => {
    for (const speed of [0.25, 4]) {
      expect((await post({ model: 'voice-model', input: 'x'.repeat(50), voice: 'alloy', speed })).status).toBe(200);
    }
    const response = await post({
      model: 'voice-model',
      input: 'Hi.',
      voice: 'alloy',
      speed: null,
      response_format: null,
    });
    expect(response.headers.get('content-type')).toBe('audio/mpeg');
  });
});
