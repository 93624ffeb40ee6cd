import { beforeEach, describe, expect, it } from 'vitest';
import { createHandler, type Handler } from '../src/api/index.ts';
import { decodeWav, resample } from '../src/audio/index.ts';
import { KeyRing } from '../src/keys/index.ts';
import { createEngine } from '../src/models/index.ts';
import { bundledProfile } from '../src/models/model-profile.ts';
import {
  aLawDecode,
  aLawEncode,
  bytesToBase64,
  base64ToBytes,
  chatModelFor,
  floatToPcm16,
  MAX_CONVERSATION_ITEMS,
  muLawDecode,
  muLawEncode,
  pcm16FromBytes,
  pcm16ToBytes,
  RealtimeSession,
  type RealtimeItem,
  type RealtimeMetrics,
  type RealtimeResponse,
  type RealtimeSessionConfig,
  type RealtimeServerEvent,
  type RealtimeSessionOptions,
  type RealtimeSpeaker,
} from '../src/realtime/index.ts';
import type { ChatMessage } from '../src/realtime/client-items.ts';
import { SentenceCutter } from '../src/realtime/sentence-cutter.ts';
import {
  OpenAIRealtimeWebSocket,
  RealtimeAgent,
  RealtimeSession as SdkRealtimeSession,
  tool,
} from '@openai/agents-realtime';
import { BUNDLED_MODELS } from './support/lantern.ts';
import { speechBytes, speechClip } from './support/speech-fixture.ts';

/**
 * The Realtime session core: the protocol's edge cases against a fake `request` (the /v1 routes answered in a few
 * lines), then the whole pipeline on the bundled models through the real handler: speech in, voice activity,
 * tiny-whisper, the chat model, tiny-speech out.
 */

const RATE = 24_000;

/** The chat completions body the session sends, as far as these tests read it. */
interface ChatBody {
  model: string;
  messages: ChatMessage[];
  tools?: { function: { name: string } }[];
  tool_choice?: unknown;
  max_completion_tokens?: number;
}

/** Records what a session sends and waits for events by type. */
class Client {
  readonly events: RealtimeServerEvent[] = [];
  readonly #waiters: { test: (e: RealtimeServerEvent) => boolean; resolve: (e: RealtimeServerEvent) => void }[] = [];

  readonly send = (event: RealtimeServerEvent) => {
    this.events.push(event);
    for (const w of [...this.#waiters])
      if (w.test(event)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(event);
      }
  };

  of(type: string): RealtimeServerEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }

  /** The next event of `type` (after `from` events, default: any seen so far or later). */
  next(type: string, test: (e: RealtimeServerEvent) => boolean = () => true, from = 0): Promise<RealtimeServerEvent> {
    const seen = this.events.slice(from).find((e) => e.type === type && test(e));
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} in: ${this.types().join(', ')}`)), 8_000);
      this.#waiters.push({
        test: (e) => e.type === type && test(e),
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
    });
  }
}

const tone = (ms: number, amplitude = 0.3, hz = 220) => {
  const out = new Float32Array((RATE * ms) / 1000);
  for (let i = 0; i < out.length; i++) out[i] = amplitude * Math.sin((2 * Math.PI * hz * i) / RATE);
  return floatToPcm16(out);
};
const silence = (ms: number) => new Int16Array((RATE * ms) / 1000);
const join = (...parts: Int16Array[]) => {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
/** Audio sent as `input_audio_buffer.append` events of 100 ms, as a microphone would. */
const appendEvents = (session: RealtimeSession, samples: Int16Array) => {
  for (let at = 0; at < samples.length; at += RATE / 10)
    session.receive(
      JSON.stringify({
        type: 'input_audio_buffer.append',
        audio: bytesToBase64(pcm16ToBytes(samples.subarray(at, at + RATE / 10))),
      }),
    );
};

/** The same, at the pace of a microphone: 100 ms of audio every 100 ms (what latency is measured against). */
const appendInRealTime = async (session: RealtimeSession, samples: Int16Array) => {
  const start = performance.now();
  for (let at = 0, n = 1; at < samples.length; at += RATE / 10, n++) {
    appendEvents(session, samples.subarray(at, at + RATE / 10));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + n * 100 - performance.now())));
  }
};

// ————— a fake /v1 for the protocol tests —————

interface FakeApi {
  calls: { path: string; body: unknown; signal: AbortSignal | null | undefined }[];
  request: RealtimeSessionOptions['request'];
}

type ChatScript = { content?: string; tool_calls?: unknown[]; finish_reason?: string }[];

/**
 * Answers transcriptions with `transcript`, chat with the chunks `chat(body)` returns (each after `delayMs`, stopping
 * when aborted), speech with 200 ms of tone per request.
 */
function fakeApi(
  options: {
    transcript?: string;
    chat?: (body: Record<string, unknown>) => ChatScript;
    delayMs?: number;
    /** Routes answered 429 (the key's limit) the first time they are asked. */
    busyOnce?: string[];
  } = {},
): FakeApi {
  const calls: FakeApi['calls'] = [];
  const busy = new Set(options.busyOnce);
  const request: RealtimeSessionOptions['request'] = async (path, init) => {
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : init.body;
    calls.push({ path, body, signal: init.signal });
    if (busy.delete(path))
      return Response.json({ error: { message: 'busy' } }, { status: 429, headers: { 'retry-after-ms': '20' } });
    if (path === '/v1/audio/transcriptions') return Response.json({ text: options.transcript ?? 'Hello there.' });
    if (path === '/v1/audio/speech') return new Response(pcm16ToBytes(tone(200)) as Uint8Array<ArrayBuffer>);
    if (path === '/v1/chat/completions') {
      const script = options.chat?.(body) ?? [
        { content: 'Hi. ' },
        { content: 'How are you?' },
        { finish_reason: 'stop' },
      ];
      const signal = init.signal;
      const encoder = new TextEncoder();
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (const step of script) {
            if (options.delayMs) await new Promise((r) => setTimeout(r, options.delayMs));
            if (signal?.aborted) return controller.error(signal.reason);
            const delta = {
              ...(step.content ? { content: step.content } : {}),
              ...(step.tool_calls ? { tool_calls: step.tool_calls } : {}),
            };
            const chunk = { choices: [{ index: 0, delta, finish_reason: step.finish_reason ?? null }] };
            controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
          }
          controller.enqueue(
            encoder.encode(
              `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 } })}\n\n`,
            ),
          );
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
        },
      });
      return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
    }
    return Response.json({ error: { message: 'not found' } }, { status: 404 });
  };
  return { calls, request };
}

function open(api: FakeApi, extra: Partial<RealtimeSessionOptions> = {}) {
  const client = new Client();
  const session = new RealtimeSession({ model: 'gpt-realtime', request: api.request, send: client.send, ...extra });
  session.open();
  return { client, session };
}

const event = (e: Record<string, unknown>) => JSON.stringify(e);

describe('the protocol, on a fake /v1', () => {
  it('opens with OpenAI’s defaults, and every server event has an event_… id', () => {
    const { client } = open(fakeApi());
    const created = client.of('session.created')[0]!;
    expect(created.event_id).toMatch(/^event_/);
    expect(created.session).toMatchObject({
      type: 'realtime',
      model: 'gpt-realtime',
      output_modalities: ['audio'],
      tool_choice: 'auto',
      max_output_tokens: 'inf',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate: 24000 },
          turn_detection: {
            type: 'server_vad',
            threshold: 0.5,
            prefix_padding_ms: 300,
            silence_duration_ms: 500,
            create_response: true,
            interrupt_response: true,
          },
        },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'alloy' },
      },
    });
    expect(chatModelFor('gpt-4o-realtime-preview')).toBe('gpt-realtime');
    expect(chatModelFor('gpt-4o-mini')).toBe('gpt-4o-mini');
  });

  it('answers bad events and bad updates with error events naming the param and the event, and keeps working', () => {
    const { client, session } = open(fakeApi());
    session.receive('{not json');
    session.receive(event({ type: 'no.such.event', event_id: 'evt_1' }));
    session.receive(
      event({ type: 'session.update', event_id: 'evt_2', session: { audio: { output: { voice: 'nobody' } } } }),
    );
    session.receive(
      event({
        type: 'session.update',
        event_id: 'evt_3',
        session: { audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: -5 } } } },
      }),
    );
    session.receive(
      event({
        type: 'session.update',
        event_id: 'evt_4',
        session: { audio: { input: { format: { type: 'audio/flac' } } } },
      }),
    );
    session.receive(event({ type: 'conversation.item.retrieve', event_id: 'evt_5', item_id: 'item_missing' }));
    session.receive(event({ type: 'response.cancel', event_id: 'evt_6' }));
    session.receive(event({ type: 'input_audio_buffer.commit', event_id: 'evt_7' }));
    session.receive(event({ type: 'output_audio_buffer.clear', event_id: 'evt_8' }));
    session.receive('x'.repeat(16 * 1024 * 1024 + 1));
    const errors = client.of('error').map((e) => e.error as Record<string, unknown>);
    expect(errors.map((e) => [e.event_id, e.param, e.code])).toEqual([
      [null, null, 'invalid_json'],
      ['evt_1', 'type', 'invalid_value'],
      ['evt_2', 'session.audio.output.voice', 'invalid_value'],
      ['evt_3', 'session.audio.input.turn_detection.silence_duration_ms', 'invalid_value'],
      ['evt_4', 'session.audio.input.format.type', 'invalid_value'],
      ['evt_5', 'item_id', 'item_not_found'],
      ['evt_6', null, 'response_cancel_not_active'],
      ['evt_7', null, 'input_audio_buffer_commit_empty'],
      ['evt_8', 'type', 'invalid_value'],
      [null, null, 'event_too_large'],
    ]);
    for (const e of errors) expect(e.type).toBe('invalid_request_error');
    // Unchanged by the bad updates, changed by a good one, echoed whole.
    session.receive(
      event({
        type: 'session.update',
        session: {
          type: 'realtime',
          instructions: 'Be brief.',
          audio: { input: { turn_detection: { type: 'semantic_vad', eagerness: 'high' } }, output: { voice: 'marin' } },
          tracing: null,
        },
      }),
    );
    const updated = client.of('session.updated').at(-1)!.session as RealtimeSessionConfig;
    expect(updated.instructions).toBe('Be brief.');
    expect(updated.audio.output.voice).toBe('marin');
    expect(updated.audio.input.format).toEqual({ type: 'audio/pcm', rate: 24000 });
    expect(updated.audio.input.turn_detection).toEqual({
      type: 'semantic_vad',
      eagerness: 'high',
      create_response: true,
      interrupt_response: true,
    });
  });

  it('voice activity on a tone: the same cuts on the same audio, speech_started minus the padding, a response after the silence', async () => {
    const cuts: unknown[] = [];
    for (let run = 0; run < 2; run++) {
      const api = fakeApi();
      const { client, session } = open(api);
      session.receive(
        event({ type: 'session.update', session: { audio: { input: { transcription: { model: 'whisper-1' } } } } }),
      );
      appendEvents(session, join(silence(1000), tone(1000), silence(1000)));
      const done = await client.next('response.done');
      const started = client.of('input_audio_buffer.speech_started')[0]!;
      const stopped = client.of('input_audio_buffer.speech_stopped')[0]!;
      cuts.push([started.audio_start_ms, stopped.audio_end_ms]);
      expect(started.audio_start_ms).toBe(700); // the tone begins at 1000 ms; 300 ms of padding
      expect(stopped.audio_end_ms).toBe(2500); // it ends at 2000 ms; 500 ms of silence
      expect(started.item_id).toBe(stopped.item_id);
      const committed = client.of('input_audio_buffer.committed')[0]!;
      expect(committed.item_id).toBe(started.item_id);
      await client.next('conversation.item.input_audio_transcription.completed');
      expect(client.of('conversation.item.input_audio_transcription.completed')[0]).toMatchObject({
        item_id: committed.item_id,
        content_index: 0,
        transcript: 'Hello there.',
      });
      // The turn's audio went to the transcription route as a WAV of the speech with its padding, once, at the pause
      // that became the turn's end (200 ms into the silence).
      const transcriptions = api.calls.filter((c) => c.path === '/v1/audio/transcriptions');
      expect(transcriptions).toHaveLength(1);
      const wav = new Uint8Array(await ((transcriptions[0]!.body as FormData).get('file') as Blob).arrayBuffer());
      expect(decodeWav(wav).samples.length).toBe((RATE * 1500) / 1000);
      expect(done.response).toMatchObject({
        status: 'completed',
        usage: { input_tokens: 7, output_tokens: 5, total_tokens: 12 },
      });
      // The chat model read the transcript; the audio came as base64 deltas, one TTS request per sentence.
      const chat = api.calls.find((c) => c.path === '/v1/chat/completions')!.body as ChatBody;
      expect(chat.model).toBe('gpt-realtime');
      expect(chat.messages.at(-1)).toEqual({ role: 'user', content: 'Hello there.' });
      expect(
        api.calls.filter((c) => c.path === '/v1/audio/speech').map((c) => (c.body as { input: string }).input),
      ).toEqual(['Hi.', 'How are you?']);
      expect(client.of('response.output_audio.delta').length).toBeGreaterThan(0);
      expect(client.of('response.output_audio_transcript.done')[0]!.transcript).toBe('Hi. How are you?');
      const history = session.items;
      expect(history.map((i) => (i.type === 'message' ? i.role : i.type))).toEqual(['user', 'assistant']);
    }
    expect(cuts[0]).toEqual(cuts[1]);
  });

  it('a pause shorter than the turn’s end starts a transcript that is dropped when speech goes on', async () => {
    const api = fakeApi();
    const { client, session } = open(api);
    // At a microphone's pace, so the first transcript ahead is over before the next pause (one runs at a time).
    await appendInRealTime(session, join(silence(500), tone(600), silence(300), tone(600), silence(700)));
    await client.next('response.done');
    const transcriptions = api.calls.filter((c) => c.path === '/v1/audio/transcriptions');
    expect(transcriptions).toHaveLength(2);
    expect(transcriptions[0]!.signal!.aborted).toBe(true);
    expect(transcriptions[1]!.signal!.aborted).toBe(false);
    const wav = new Uint8Array(await ((transcriptions[1]!.body as FormData).get('file') as Blob).arrayBuffer());
    expect(decodeWav(wav).samples.length).toBe((RATE * (300 + 600 + 300 + 600 + 200)) / 1000);
    expect(client.of('input_audio_buffer.speech_started')).toHaveLength(1);
    expect(client.of('input_audio_buffer.committed')).toHaveLength(1);
  });

  it('a model call answered 429 (the key’s limit) is tried again after the wait it names', async () => {
    const api = fakeApi({ busyOnce: ['/v1/chat/completions', '/v1/audio/speech'] });
    const { client, session } = open(api);
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    const done = await client.next('response.done');
    expect(done.response).toMatchObject({ status: 'completed' });
    expect(api.calls.map((c) => c.path)).toEqual([
      '/v1/chat/completions',
      '/v1/chat/completions',
      '/v1/audio/speech',
      '/v1/audio/speech',
      '/v1/audio/speech',
    ]);
  });

  it('with turn_detection null the client commits, and a quiet buffer starts nothing', async () => {
    const api = fakeApi();
    const { client, session } = open(api);
    session.receive(
      event({
        type: 'session.update',
        session: { audio: { input: { turn_detection: null } }, output_modalities: ['text'] },
      }),
    );
    appendEvents(session, join(tone(500), silence(1000)));
    expect(client.of('input_audio_buffer.speech_started')).toEqual([]);
    session.receive(event({ type: 'input_audio_buffer.commit' }));
    const committed = client.of('input_audio_buffer.committed')[0]!;
    expect(client.of('response.created')).toEqual([]);
    session.receive(event({ type: 'response.create' }));
    const done = await client.next('response.done');
    expect(done.response).toMatchObject({ status: 'completed', output_modalities: ['text'] });
    expect(client.of('response.output_text.done')[0]!.text).toBe('Hi. How are you?');
    expect(client.of('response.output_audio.delta')).toEqual([]);
    expect(api.calls.some((c) => c.path === '/v1/audio/speech')).toBe(false);
    // Without `transcription` no transcription events, but the item has its transcript.
    expect(client.of('conversation.item.input_audio_transcription.completed')).toEqual([]);
    const user = session.items.find((i) => i.id === committed.item_id)!;
    expect(user).toMatchObject({ content: [{ type: 'input_audio', transcript: 'Hello there.' }] });
  });

  it('one response at a time; response.cancel aborts the chat request and ends it cancelled', async () => {
    const api = fakeApi({ delayMs: 30, chat: () => Array.from({ length: 50 }, () => ({ content: 'word ' })) });
    const { client, session } = open(api);
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Talk.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    session.receive(event({ type: 'response.create', event_id: 'evt_again' }));
    expect(client.of('error').at(-1)!.error).toMatchObject({
      code: 'conversation_already_has_active_response',
      event_id: 'evt_again',
    });
    await client.next('response.output_audio_transcript.delta');
    session.receive(event({ type: 'response.cancel' }));
    const done = await client.next('response.done');
    expect(done.response).toMatchObject({
      status: 'cancelled',
      status_details: { type: 'cancelled', reason: 'client_cancelled' },
    });
    expect(api.calls.find((c) => c.path === '/v1/chat/completions')!.signal!.aborted).toBe(true);
    expect(client.of('response.output_item.done')[0]!.item).toMatchObject({ status: 'incomplete' });
    // The next response may start.
    session.receive(
      event({ type: 'response.create', response: { output_modalities: ['text'], max_output_tokens: 20 } }),
    );
    await client.next('response.done', (e) => (e.response as RealtimeResponse).status === 'completed');
    expect(
      (api.calls.filter((c) => c.path === '/v1/chat/completions')[1]!.body as ChatBody).max_completion_tokens,
    ).toBe(20);
  });

  it('a function call: streamed arguments, the response ends, the output and a new response answer it', async () => {
    const api = fakeApi({
      chat: (body) =>
        (body as unknown as ChatBody).messages.some((m) => m.role === 'tool')
          ? [{ content: 'It is sunny.' }, { finish_reason: 'stop' }]
          : [
              {
                tool_calls: [
                  { index: 0, id: 'call_abc', type: 'function', function: { name: 'weather', arguments: '' } },
                ],
              },
              { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
              { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
              { finish_reason: 'tool_calls' },
            ],
    });
    const { client, session } = open(api);
    const tools = [
      {
        type: 'function',
        name: 'weather',
        description: 'The weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ];
    session.receive(
      event({ type: 'session.update', session: { tools, tool_choice: { type: 'function', name: 'weather' } } }),
    );
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    await client.next('response.done');
    const chat = api.calls[0]!.body as ChatBody;
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(chat.tools?.[0]?.function.name).toBe('weather');
    expect(client.of('response.function_call_arguments.delta').map((e) => e.delta)).toEqual(['{"city":', '"Paris"}']);
    const call = client.of('response.output_item.done')[0]!.item as RealtimeItem;
    expect(call).toMatchObject({
      type: 'function_call',
      status: 'completed',
      call_id: 'call_abc',
      name: 'weather',
      arguments: '{"city":"Paris"}',
    });
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: 'call_abc', output: '{"sky":"sunny"}' },
      }),
    );
    const from = client.events.length;
    session.receive(event({ type: 'response.create' }));
    await client.next('response.done', () => true, from);
    const second = api.calls.filter((c) => c.path === '/v1/chat/completions')[1]!.body as ChatBody;
    expect(second.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_abc', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc', content: '{"sky":"sunny"}' },
    ]);
    expect(client.of('response.output_audio_transcript.done').at(-1)!.transcript).toBe('It is sunny.');
  });

  it('barge-in with a speaker: the response stops, the speaker clears, the item is cut to what was heard', async () => {
    const played: Int16Array[] = [];
    let listener: { started(id: string): void; stopped(id: string): void } | undefined;
    let playing: string | undefined;
    const speaker: RealtimeSpeaker = {
      play(itemId, samples) {
        if (!playing) listener!.started(itemId);
        playing = itemId;
        played.push(samples);
      },
      clear() {
        const was = playing;
        playing = undefined;
        return was ? { itemId: was, playedMs: 250 } : undefined;
      },
      playedMs: () => 250,
      listen(l) {
        listener = l;
      },
    };
    const api = fakeApi({
      delayMs: 20,
      chat: () => [
        { content: 'First sentence here. ' },
        { content: 'Second one. ' },
        ...Array.from({ length: 40 }, () => ({ content: 'Then more. ' })),
      ],
    });
    const { client, session } = open(api, { speaker });
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Talk.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    await client.next('output_audio_buffer.started');
    while (played.length < 2) await new Promise((resolve) => setTimeout(resolve, 5)); // both sentences are playing
    expect(client.of('response.output_audio.delta')).toEqual([]); // the speaker carries the audio
    session.appendAudio(join(tone(300), silence(100)));
    const done = await client.next('response.done');
    expect(done.response).toMatchObject({ status: 'cancelled', status_details: { reason: 'turn_detected' } });
    const truncated = client.of('conversation.item.truncated')[0]!;
    expect(truncated).toMatchObject({ content_index: 0, audio_end_ms: 250 });
    expect(client.of('output_audio_buffer.cleared').length).toBe(1);
    // 250 ms heard: the first sentence's 200 ms and the start of the second.
    session.receive(event({ type: 'conversation.item.retrieve', item_id: truncated.item_id }));
    expect(client.of('conversation.item.retrieved')[0]!.item).toMatchObject({
      content: [{ type: 'output_audio', transcript: 'First sentence here. Second one.' }],
    });
  });

  it('conversation.item.truncate from a WebSocket client; items placed at root and after others; delete', async () => {
    const { client, session } = open(fakeApi());
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Talk.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    await client.next('response.done');
    const assistant = client.of('response.output_item.done')[0]!.item as RealtimeItem;
    session.receive(
      event({ type: 'conversation.item.truncate', item_id: assistant.id, content_index: 0, audio_end_ms: 100 }),
    );
    expect(client.of('conversation.item.truncated')[0]).toMatchObject({ item_id: assistant.id, audio_end_ms: 100 });
    session.receive(
      event({
        type: 'conversation.item.truncate',
        item_id: assistant.id,
        content_index: 0,
        audio_end_ms: 100_000,
        event_id: 'evt_long',
      }),
    );
    expect(client.of('error').at(-1)!.error).toMatchObject({ param: 'audio_end_ms', event_id: 'evt_long' });
    session.receive(
      event({
        type: 'conversation.item.create',
        previous_item_id: 'root',
        item: { id: 'item_first', type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Rules.' }] },
      }),
    );
    expect(client.of('conversation.item.added').at(-1)!.previous_item_id).toBeNull();
    session.receive(
      event({
        type: 'conversation.item.create',
        previous_item_id: 'item_first',
        item: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Ok.' }] },
      }),
    );
    expect(client.of('conversation.item.added').at(-1)!.previous_item_id).toBe('item_first');
    session.receive(
      event({
        type: 'conversation.item.create',
        previous_item_id: 'item_nope',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
      }),
    );
    expect(client.of('error').at(-1)!.error).toMatchObject({ param: 'previous_item_id', code: 'item_not_found' });
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'output_text', text: 'x' }] },
      }),
    );
    expect(client.of('error').at(-1)!.error).toMatchObject({ param: 'item.content[0].type' });
    expect(session.items.map((i) => i.id)[0]).toBe('item_first');
    session.receive(event({ type: 'conversation.item.delete', item_id: 'item_first' }));
    expect(client.of('conversation.item.deleted')[0]).toMatchObject({ item_id: 'item_first' });
    expect(session.items.some((i) => i.id === 'item_first')).toBe(false);
  });

  it('server VAD’s idle_timeout_ms: quiet audio after a response commits a turn and answers it', async () => {
    const { client, session } = open(fakeApi());
    session.receive(
      event({
        type: 'session.update',
        session: {
          output_modalities: ['text'],
          audio: { input: { turn_detection: { type: 'server_vad', idle_timeout_ms: 5000 } } },
        },
      }),
    );
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    await client.next('response.done');
    session.appendAudio(silence(4900));
    expect(client.of('input_audio_buffer.timeout_triggered')).toEqual([]);
    session.appendAudio(silence(200));
    const timeout = client.of('input_audio_buffer.timeout_triggered')[0]!;
    expect(timeout).toMatchObject({ audio_start_ms: 0, audio_end_ms: 5100 });
    expect(client.of('input_audio_buffer.committed')[0]).toMatchObject({ item_id: timeout.item_id });
    await client.next('response.done', (e) => e.response !== client.of('response.done')[0]!.response);
    expect(client.of('response.created')).toHaveLength(2);
  });

  it('limits: 15 minutes of input audio, the conversation’s items', () => {
    const { client, session } = open(fakeApi());
    session.receive(event({ type: 'session.update', session: { audio: { input: { turn_detection: null } } } }));
    session.appendAudio(silence(15 * 60 * 1000));
    expect(client.of('error')).toEqual([]);
    session.appendAudio(silence(20));
    expect(client.of('error')[0]!.error).toMatchObject({ code: 'input_audio_buffer_full' });
    session.receive(event({ type: 'input_audio_buffer.clear' }));
    expect(client.of('input_audio_buffer.cleared')).toHaveLength(1);
    const text = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] };
    for (let i = 0; i < MAX_CONVERSATION_ITEMS; i++)
      session.receive(event({ type: 'conversation.item.create', item: text }));
    expect(client.of('error')).toHaveLength(1);
    session.receive(event({ type: 'conversation.item.create', item: text, event_id: 'evt_full' }));
    expect(client.of('error')[1]!.error).toMatchObject({ code: 'conversation_full', event_id: 'evt_full' });
  });

  it('sentences go to speech as they complete; the first piece may end at a clause', () => {
    const cutter = new SentenceCutter();
    const pieces: string[] = [];
    for (const word of 'Well, the weather in Paris today, as far as I know, is sunny. It is warm. Bye'.split(/(?<= )/))
      pieces.push(...cutter.push(word));
    expect(pieces).toEqual(['Well, the weather in Paris today, ', 'as far as I know, is sunny. ', 'It is warm. ']);
    expect(cutter.flush()).toEqual(['Bye']);
  });

  it('G.711 µ-law in and out: the detector hears it at 24 kHz, the deltas are 8 kHz bytes', async () => {
    const { client, session } = open(fakeApi());
    session.receive(
      event({
        type: 'session.update',
        session: { audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } } },
      }),
    );
    const narrow = join(silence(600), tone(800), silence(900)).filter((_, i) => i % 3 === 0);
    const bytes = Uint8Array.from(narrow, (sample) => muLawEncode(sample));
    for (let at = 0; at < bytes.length; at += 800)
      session.receive(event({ type: 'input_audio_buffer.append', audio: bytesToBase64(bytes.subarray(at, at + 800)) }));
    await client.next('response.done');
    expect(client.of('input_audio_buffer.speech_started')[0]!.audio_start_ms).toBeCloseTo(300, -2);
    // Each sentence's 200 ms of speech is 1600 µ-law bytes.
    expect(client.of('response.output_audio.delta').map((e) => base64ToBytes(e.delta as string).length)).toEqual([
      1600, 1600,
    ]);
  });

  it('G.711 µ-law and A-law round-trip within their quantization', () => {
    for (const s of [0, 1, -1, 100, -100, 1000, -1000, 12345, -12345, 32000, -32000]) {
      expect(Math.abs(muLawDecode(muLawEncode(s)) - s)).toBeLessThanOrEqual(Math.max(8, Math.abs(s) / 16));
      expect(Math.abs(aLawDecode(aLawEncode(s)) - s)).toBeLessThanOrEqual(Math.max(16, Math.abs(s) / 16));
    }
    const pcm = tone(10);
    expect(pcm16FromBytes(base64ToBytes(bytesToBase64(pcm16ToBytes(pcm))))).toEqual(pcm);
  });
});

// ————— the real pipeline on the bundled models —————

describe('the pipeline on the bundled models, through the handler', () => {
  const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
  const keys = new KeyRing();
  const handler: Handler = createHandler({ engine, keys, onServerError: () => {} });
  let key: string;
  /** Each call's path and status, to tell in a failure what the handler refused. */
  let answers: string[] = [];

  // A key per test, as each session is its own client: one test's calls never meet another's rate limits.
  beforeEach(async () => {
    key = (await keys.issue('realtime')).key;
    answers = [];
  });

  const request: RealtimeSessionOptions['request'] = async (path, init) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${key}`);
    const response = await handler(new Request(`http://lantern.test${path}`, { ...init, headers }));
    answers.push(`${path} ${response.status}`);
    return response;
  };

  function realSession(update: Record<string, unknown>, onMetrics?: (m: RealtimeMetrics) => void) {
    const client = new Client();
    const session = new RealtimeSession({ model: 'gpt-4o-mini', request, send: client.send, onMetrics });
    session.open();
    session.receive(event({ type: 'session.update', session: update }));
    return { client, session };
  }

  const clip = (file: string) => {
    const wav = decodeWav(new Uint8Array(speechBytes(file)));
    return floatToPcm16(resample(wav.samples, wav.sampleRate, RATE));
  };

  it('speech in, a spoken answer out: voice activity, tiny-whisper, the chat model, tiny-speech', async () => {
    const metrics: RealtimeMetrics[] = [];
    const { client, session } = realSession(
      {
        audio: { input: { transcription: { model: 'whisper-1' } } },
        instructions: 'Answer in one short sentence.',
        max_output_tokens: 24,
      },
      (m) => metrics.push(m),
    );
    const file = 'clip02.wav';
    await appendInRealTime(session, join(silence(300), clip(file), silence(1000)));
    const done = await client.next('response.done');
    expect(client.of('input_audio_buffer.speech_started').length).toBe(1);
    expect(client.of('input_audio_buffer.speech_stopped').length).toBe(1);
    expect(client.of('input_audio_buffer.committed').length).toBe(1);
    const transcript = client.of('conversation.item.input_audio_transcription.completed')[0]!.transcript as string;
    expect(transcript.trim().length).toBeGreaterThan(0);
    expect(transcript.toLowerCase()).toContain('duck'); // "The pink duck swims on Sunday."
    expect(speechClip(file).text).toContain('duck');
    expect(done.response).toMatchObject({ status: expect.stringMatching(/^(completed|incomplete)$/) });
    const said = client.of('response.output_audio_transcript.done')[0]!.transcript as string;
    expect(said.trim().length).toBeGreaterThan(0);
    const audio = client.of('response.output_audio.delta').map((e) => pcm16FromBytes(base64ToBytes(e.delta as string)));
    const samples = join(...audio);
    expect(samples.length).toBeGreaterThan(RATE / 10);
    expect(Math.max(...samples.map(Math.abs))).toBeGreaterThan(1000);
    expect(metrics).toHaveLength(1);
    expect(metrics[0]!.speechEndToFirstAudioMs).toBeGreaterThan(0);
    console.info(`[realtime] end of speech → first audio: ${JSON.stringify(metrics[0])}`);
  }, 90_000);

  it('a forced tool: a function_call item, its output sent back, and the next response answers', async () => {
    const tools = [
      {
        type: 'function',
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ];
    const { client, session } = realSession({
      output_modalities: ['text'],
      tools,
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 40,
    });
    session.receive(
      event({
        type: 'conversation.item.create',
        item: {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: 'What is the weather in Paris?' }],
        },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    const first = await client.next('response.done');
    expect(first.response).toMatchObject({ status: 'completed' });
    const call = (first.response as RealtimeResponse).output.find((i) => i.type === 'function_call')!;
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'get_weather' });
    expect(() => JSON.parse(call.arguments)).not.toThrow();
    expect(client.of('response.function_call_arguments.done')[0]).toMatchObject({
      call_id: call.call_id,
      arguments: call.arguments,
    });
    session.receive(event({ type: 'session.update', session: { tool_choice: 'none' } }));
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"sunny"}' },
      }),
    );
    const from = client.events.length;
    session.receive(event({ type: 'response.create' }));
    const second = await client.next('response.done', () => true, from);
    expect(second.response).toMatchObject({ status: expect.stringMatching(/^(completed|incomplete)$/) });
    const text = client.of('response.output_text.done').at(-1)!.text as string;
    expect(text.trim().length).toBeGreaterThan(0);
    expect(session.items.map((i) => i.type)).toEqual(['message', 'function_call', 'function_call_output', 'message']);
  }, 60_000);

  it('an unmodified Agents SDK RealtimeSession: a typed turn and a spoken turn land in its history with transcripts', async () => {
    const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer in one short sentence.' });
    const sdk = new SdkRealtimeSession(agent, {
      model: 'gpt-4o-mini',
      transport: new OpenAIRealtimeWebSocket({
        createWebSocket: async () => (socket = new MemorySocket(request, 'gpt-4o-mini')) as unknown as CreatedSocket,
      }),
    });
    let socket: MemorySocket | undefined;
    const errors: unknown[] = [];
    sdk.on('error', (e) => errors.push(e));
    await sdk.connect({ apiKey: key, url: 'ws://lantern.test/v1/realtime?model=gpt-4o-mini' });
    let responsesDone = 0;
    sdk.transport.on('*', (e: { type: string }) => {
      if (e.type === 'response.done') responsesDone++;
    });
    const settled = async (test: () => boolean) => {
      for (const start = Date.now(); !test(); await new Promise((resolve) => setTimeout(resolve, 20)))
        if (Date.now() - start > 30_000)
          throw new Error(`history: ${JSON.stringify(sdk.history)}; calls: ${answers.join(', ')}`);
    };
    // The tiny chat model samples: an answer may be empty (no item), so turns are counted by response.done.
    const assistantWords = () =>
      sdk.history.filter(
        (i) =>
          i.type === 'message' &&
          i.role === 'assistant' &&
          i.status === 'completed' &&
          i.content.some((c) => 'transcript' in c && c.transcript),
      );
    sdk.sendMessage('Say hello.');
    await settled(() => responsesDone === 1);
    expect(sdk.history[0]).toMatchObject({
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: 'Say hello.' }],
    });
    // A spoken turn: semantic VAD (the SDK's default) ends it, the SDK retrieves the transcribed item.
    const speech = join(silence(300), clip('clip02.wav'), silence(1500));
    sdk.sendAudio(pcm16ToBytes(speech).buffer as ArrayBuffer);
    await settled(
      () =>
        responsesDone === 2 &&
        sdk.history.some(
          (i) =>
            i.type === 'message' &&
            i.role === 'user' &&
            i.content.some((c) => c.type === 'input_audio' && (c.transcript ?? '').length > 0),
        ),
    );
    const spoken = sdk.history.find(
      (i) => i.type === 'message' && i.role === 'user' && i.content[0]?.type === 'input_audio',
    );
    expect(JSON.stringify(spoken)).toMatch(/duck/i);
    expect(assistantWords().length).toBeGreaterThan(0);
    expect(errors).toEqual([]);
    expect(socket!.session.session.audio.input.turn_detection).toMatchObject({ type: 'semantic_vad' });
    sdk.close();
  }, 90_000);

  it('the Agents SDK runs a tool the model called, sends its output, and the next response answers', async () => {
    const calls: string[] = [];
    const weather = tool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
        additionalProperties: false,
      },
      strict: true,
      execute: async (input) => {
        calls.push(JSON.stringify(input));
        return 'sunny';
      },
    });
    const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.', tools: [weather] });
    const sdk = new SdkRealtimeSession(agent, {
      model: 'gpt-4o-mini',
      config: { outputModalities: ['text'], toolChoice: 'none' },
      transport: new OpenAIRealtimeWebSocket({
        createWebSocket: async () => new MemorySocket(request, 'gpt-4o-mini') as unknown as CreatedSocket,
      }),
    });
    await sdk.connect({ apiKey: key, url: 'ws://lantern.test/v1/realtime?model=gpt-4o-mini' });
    const done: { status?: string | null; output?: { type?: string }[] | null }[] = [];
    sdk.transport.on('*', (e: { type: string; response?: (typeof done)[number] }) => {
      if (e.type === 'response.done' && e.response) done.push(e.response);
    });
    sdk.transport.sendMessage('What is the weather in Paris?', {}, { triggerResponse: false });
    // The first response must call the tool; the one after the output may not (the session's choice is 'none').
    sdk.transport.requestResponse!({ tool_choice: { type: 'function', name: 'get_weather' } });
    // The call's response, then the one after its output (the tiny model's answer may be empty: no item then).
    for (const start = Date.now(); done.length < 2; await new Promise((resolve) => setTimeout(resolve, 20)))
      if (Date.now() - start > 30_000)
        throw new Error(`responses: ${JSON.stringify(done)}; calls: ${answers.join(', ')}`);
    expect(done.map((r) => r.status)).toEqual(['completed', expect.stringMatching(/^(completed|incomplete)$/)]);
    expect(done[0]!.output?.map((i) => i.type)).toEqual(['function_call']);
    expect(sdk.history.find((i) => i.type === 'function_call')).toMatchObject({ name: 'get_weather', output: 'sunny' });
    expect(calls).toHaveLength(1);
    expect(Object.keys(JSON.parse(calls[0]!))).toEqual(['city']);
    sdk.close();
  }, 60_000);

  it('a text-only session answers a typed message in response.output_text.*, with no audio', async () => {
    const { client, session } = realSession({ output_modalities: ['text'], max_output_tokens: 16 });
    session.receive(
      event({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello.' }] },
      }),
    );
    session.receive(event({ type: 'response.create' }));
    const done = await client.next('response.done');
    expect(done.response).toMatchObject({
      status: expect.stringMatching(/^(completed|incomplete)$/),
      output_modalities: ['text'],
    });
    expect(client.of('response.output_text.delta').length).toBeGreaterThan(0);
    expect(client.of('response.output_audio.delta')).toEqual([]);
    expect(client.of('response.output_audio_transcript.delta')).toEqual([]);
  }, 60_000);
});

// ————— an unmodified Agents SDK session on the core —————

/** A WebSocket in memory, as the Agents SDK's `createWebSocket` option takes one: a Lantern session at the far end. */
/** What the SDK's `createWebSocket` resolves to (the `ws` package's type, in Node). */
type CreatedSocket = Awaited<
  ReturnType<NonNullable<NonNullable<ConstructorParameters<typeof OpenAIRealtimeWebSocket>[0]>['createWebSocket']>>
>;

class MemorySocket extends EventTarget {
  readonly session: RealtimeSession;
  constructor(request: RealtimeSessionOptions['request'], model: string) {
    super();
    this.session = new RealtimeSession({
      model,
      request,
      send: (e) => queueMicrotask(() => this.dispatchEvent(new MessageEvent('message', { data: JSON.stringify(e) }))),
    });
    setTimeout(() => {
      this.dispatchEvent(new Event('open'));
      this.session.open();
    });
  }
  send(text: string): void {
    this.session.receive(text);
  }
  close(): void {
    this.session.close();
    this.dispatchEvent(new Event('close'));
  }
}
