import { serve } from '@hono/node-server';
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession, tool } from '@openai/agents-realtime';
import type { Server } from 'node:http';
import { connect as netConnect, type AddressInfo, type TcpNetConnectOpts } from 'node:net';
import OpenAI from 'openai';
import type { RealtimeClientEvent, RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { z } from 'zod';
import type { Handler } from '../src/index.ts';
import { handleRealtimeWebSocket, type RealtimeWebSocket } from '../src/node/index.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';
import { base64Pcm, pcmBase64, realtimeClip, rms, silence } from './support/realtime-audio.ts';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/**
 * The Realtime API's WebSocket form through openai-node's own client (`OpenAIRealtimeWS`) and the Agents SDK's
 * `OpenAIRealtimeWebSocket` transport under its `RealtimeSession`, on a real Node HTTP server (@hono/node-server, as
 * `npm run serve:node`) with `handleRealtimeWebSocket`, on real inference with the bundled tiny models: tiny-whisper
 * hears a held-out clip, tiny-chat answers, tiny-speech says it.
 */
/** A Lantern chat model by its own id: the session sends any name without `realtime` in it to chat as it is. */
const MODEL = 'crimson-falcon-4';
const TURN_MS = 120_000;

type Event = RealtimeServerEvent | { type: string; [field: string]: unknown };

let lantern: SdkClient;
let otherKey: string;
let server: Server;
let baseURL: string;
let sockets: RealtimeWebSocket;

/** Serves `handler` on 127.0.0.1, a free port, with the Realtime WebSocket: the base URL. */
async function listen(handler: Handler) {
  const started = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: handler, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server;
  });
  const ws = handleRealtimeWebSocket(started, handler);
  return { server: started, sockets: ws, baseURL: `http://127.0.0.1:${(started.address() as AddressInfo).port}/v1` };
}

beforeAll(async () => {
  lantern = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
  otherKey = (await lantern.keys.issue('another app')).key;
  ({ server, baseURL, sockets } = await listen(lantern.handler));
});

afterAll(async () => {
  sockets?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/**
 * openai-node's Realtime WebSocket on `url` with `apiKey`: its events recorded as they come, errors collected.
 * `OpenAIRealtimeWS` always dials `wss:` (whatever the base URL's scheme); a plain-HTTP server such as serve:node's
 * takes it when the socket is made without TLS, through the `ws` options it passes on.
 */
function connect(apiKey = lantern.key, url = baseURL, model = MODEL) {
  const options = { createConnection: ((o: TcpNetConnectOpts) => netConnect(o.port, o.host)) as typeof netConnect };
  const rt = new OpenAIRealtimeWS({ model, options }, new OpenAI({ apiKey, baseURL: url, maxRetries: 0 }));
  const events: Event[] = [];
  const errors: Error[] = [];
  rt.on('event', (event) => events.push(event));
  rt.on('error', (error) => errors.push(error));
  const opened = new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('close', (code) => reject(new Error(`closed (${code}) before opening`)));
  });
  /** The first event of `type` from index `from` on, waited for. */
  const next = (type: string, from = 0) =>
    new Promise<Event>((resolve, reject) => {
      const seen = events.slice(from).find((e) => e.type === type);
      if (seen) return resolve(seen);
      const onEvent = (event: Event) => {
        if (event.type !== type) return;
        rt.off('event', onEvent);
        resolve(event);
      };
      rt.on('event', onEvent);
      rt.socket.once('close', (code) => reject(new Error(`closed (${code}) waiting for ${type}: ${types(events)}`)));
    });
  const send = (event: RealtimeClientEvent) => rt.send(event);
  return { rt, events, errors, opened, next, send };
}
const types = (events: Event[]) => events.map((e) => e.type).join(', ');

describe('the Realtime WebSocket (openai-node OpenAIRealtimeWS, handleRealtimeWebSocket)', () => {
  it(
    'hears a spoken clip: transcript, streamed text and audio, response.done',
    async () => {
      const { rt, events, errors, opened, next, send } = connect();
      await opened;
      expect((await next('session.created')).type).toBe('session.created');
      send({
        type: 'session.update',
        session: {
          type: 'realtime',
          instructions: 'Answer in one short sentence.',
          output_modalities: ['audio'],
          max_output_tokens: 24,
          audio: {
            input: {
              format: { type: 'audio/pcm', rate: 24_000 },
              transcription: { model: 'whisper-1' },
              turn_detection: { type: 'server_vad', silence_duration_ms: 400 },
            },
            output: { format: { type: 'audio/pcm', rate: 24_000 }, voice: 'alloy' },
          },
        },
      });
      const updated = (await next('session.updated')) as Extract<RealtimeServerEvent, { type: 'session.updated' }>;
      expect(updated.session).toMatchObject({ type: 'realtime', instructions: 'Answer in one short sentence.' });

      const clip = realtimeClip('clip02.wav');
      const from = events.length;
      // Speech, then a second of silence: server VAD hears the end of the turn, commits, and answers.
      for (const pcm of [silence(0.3), clip.pcm, silence(1)]) {
        for (let at = 0; at < pcm.length; at += 4800) {
          send({ type: 'input_audio_buffer.append', audio: pcmBase64(pcm.subarray(at, at + 4800)) });
        }
      }
      const done = (await next('response.done', from)) as Extract<RealtimeServerEvent, { type: 'response.done' }>;
      const transcript = (await next('conversation.item.input_audio_transcription.completed', from)) as Extract<
        RealtimeServerEvent,
        { type: 'conversation.item.input_audio_transcription.completed' }
      >;
      rt.close();

      const seen = events.slice(from).map((e) => e.type);
      expect(seen).toEqual(
        expect.arrayContaining([
          'input_audio_buffer.speech_started',
          'input_audio_buffer.speech_stopped',
          'input_audio_buffer.committed',
          'response.created',
          'response.output_audio_transcript.delta',
          'response.output_audio.delta',
          'response.done',
        ]),
      );
      // tiny-whisper hears the held-out clip's words (it is tiny: most of them).
      const heard = transcript.transcript.toLowerCase();
      expect(['pink', 'duck', 'swims', 'sunday'].filter((word) => heard.includes(word)).length).toBeGreaterThan(1);
      // The assistant's words and its voice: non-silent PCM16 at 24 kHz.
      const spoken = events
        .slice(from)
        .flatMap((e) => (e.type === 'response.output_audio_transcript.delta' ? [e.delta as string] : []))
        .join('');
      expect(spoken.trim()).not.toBe('');
      const audio = events
        .slice(from)
        .flatMap((e) => (e.type === 'response.output_audio.delta' ? [base64Pcm(e.delta as string)] : []));
      const samples = Int16Array.from(audio.flatMap((pcm) => [...pcm]));
      expect(samples.length / 24_000).toBeGreaterThan(0.2);
      expect(rms(samples)).toBeGreaterThan(0.005);
      // Completed, or cut at max_output_tokens: the tiny model's sentences run long.
      expect(['completed', 'incomplete']).toContain(done.response.status);
      expect(errors).toEqual([]);
    },
    TURN_MS,
  );

  it('refuses a bad key at the handshake with the 401 HTTP answers, and ?call_id= with a 400', async () => {
    const bad = `lt_${'x'.repeat(40)}`;
    const { rt, errors } = connect(bad);
    const code = await new Promise<number>((resolve) => rt.socket.on('close', (c) => resolve(c)));
    expect(code).toBe(1006);
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('401')]);

    const refusal = (url: string, headers: Record<string, string>, protocols?: string[]) =>
      new Promise<{ status: number; body: string }>((resolve) => {
        const raw = new WebSocket(url, protocols, { headers });
        raw.on('error', () => {});
        raw.on('unexpected-response', (_request, response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode!, body }));
        });
      });
    const ws = baseURL.replace('http', 'ws');
    const refused = await refusal(`${ws}/realtime?model=${MODEL}`, { authorization: `Bearer ${bad}` });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'invalid_api_key' } });
    // No key at all, and a bad one in a browser's subprotocol, are the handler's 401 too.
    expect((await refusal(`${ws}/realtime?model=${MODEL}`, {})).status).toBe(401);
    expect(
      (await refusal(`${ws}/realtime?model=${MODEL}`, {}, ['realtime', `openai-insecure-api-key.${bad}`])).status,
    ).toBe(401);
    const call = await refusal(`${ws}/realtime?call_id=rtc_123`, { authorization: `Bearer ${lantern.key}` });
    expect(call.status).toBe(400);
    expect(JSON.parse(call.body)).toMatchObject({ error: { param: 'call_id', code: 'unsupported_parameter' } });
    // Another URL's upgrade is the handler's unknown URL.
    expect((await refusal(`${ws}/chat/completions`, { authorization: `Bearer ${lantern.key}` })).status).toBe(404);
  });

  it("takes a browser's key from the subprotocol and answers `realtime`", async () => {
    const raw = new WebSocket(`${baseURL.replace('http', 'ws')}/realtime?model=${MODEL}`, [
      'realtime',
      `openai-insecure-api-key.${lantern.key}`,
      'openai-agents-sdk.0.20.0',
    ]);
    const first = await new Promise<Event>((resolve, reject) => {
      raw.once('message', (data) => resolve(JSON.parse(String(data)) as Event));
      raw.once('error', reject);
    });
    expect(raw.protocol).toBe('realtime');
    expect(first.type).toBe('session.created');
    // A binary message is an error event; the socket stays open.
    const refused = new Promise<Event>((resolve) => raw.once('message', (data) => resolve(JSON.parse(String(data)))));
    raw.send(new Uint8Array([1, 2, 3]));
    expect(await refused).toMatchObject({ type: 'error', error: { code: 'binary_message' } });
    expect(raw.readyState).toBe(WebSocket.OPEN);
    raw.close();
  });

  it(
    "opens a client secret's session (its instructions, its model), answers it, and ends its call with the socket",
    async () => {
      const secret = await lantern.client.realtime.clientSecrets.create({
        session: { type: 'realtime', model: MODEL, instructions: 'Be brief.', output_modalities: ['text'] },
      });
      // A browser's socket: the secret in the subprotocol, the URL naming no model.
      const raw = new WebSocket(`${baseURL.replace('http', 'ws')}/realtime`, [
        'realtime',
        `openai-insecure-api-key.${secret.value}`,
      ]);
      const events: Event[] = [];
      raw.on('message', (data) => events.push(JSON.parse(String(data)) as Event));
      const until = (type: string) =>
        expect.poll(() => events.some((event) => event.type === type), { timeout: TURN_MS }).toBe(true);
      await until('session.created');
      expect(events[0]).toMatchObject({
        session: { model: MODEL, instructions: 'Be brief.', output_modalities: ['text'] },
      });
      raw.send(
        JSON.stringify({
          type: 'conversation.item.create',
          item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello!' }] },
        }),
      );
      raw.send(JSON.stringify({ type: 'response.create', response: { max_output_tokens: 8 } }));
      await until('response.done');
      expect(events.find((event) => event.type === 'response.done')).toMatchObject({
        response: { status: expect.stringMatching(/^(completed|incomplete)$/) },
      });
      // The secret opened the socket; it runs no model by itself.
      const chat = await fetch(`${baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret.value}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(chat.status).toBe(401);
      raw.close();
    },
    TURN_MS,
  );

  it(
    'stops the running response when the socket closes',
    async () => {
      const { rt, opened, next, send } = connect();
      await opened;
      send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
      await next('session.updated');
      send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me a story.' }] },
      });
      send({ type: 'response.create', response: { max_output_tokens: 900 } });
      await next('response.output_text.delta');
      const call = lantern.calls.at(-1)!;
      rt.close();
      expect(await call.outcome).toMatchObject({ kind: 'aborted' });
    },
    TURN_MS,
  );

  it('closes a socket whose message is over its limit (1009)', async () => {
    const small = await new Promise<Server>((resolve) => {
      const s = serve({ fetch: lantern.handler, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server;
    });
    const ws = handleRealtimeWebSocket(small, lantern.handler, { maxPayloadBytes: 1024 });
    try {
      const url = `http://127.0.0.1:${(small.address() as AddressInfo).port}/v1`;
      const { rt, opened, next } = connect(lantern.key, url);
      await opened;
      await next('session.created');
      const closed = new Promise<number>((resolve) => rt.socket.once('close', (code) => resolve(code)));
      rt.send({ type: 'input_audio_buffer.append', audio: 'A'.repeat(2048) });
      expect(await closed).toBe(1009);
    } finally {
      ws.close();
      await new Promise((resolve) => small.close(resolve));
    }
  });

  it(
    "keeps one key's session from another's",
    async () => {
      const mine = connect();
      const theirs = connect(otherKey);
      await Promise.all([mine.opened, theirs.opened]);
      await Promise.all([mine.next('session.created'), theirs.next('session.created')]);
      mine.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
      await mine.next('session.updated');
      mine.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'My secret word is ember.' }] },
      });
      mine.send({ type: 'response.create', response: { max_output_tokens: 8 } });
      const created = (await mine.next('conversation.item.added')) as { item: { id: string } };
      await mine.next('response.done');
      // The other key's socket saw nothing of it; asking for the item there finds none.
      theirs.send({ type: 'conversation.item.retrieve', item_id: created.item.id });
      const answer = await Promise.race([theirs.next('error'), theirs.next('conversation.item.retrieved')]);
      mine.rt.close();
      theirs.rt.close();
      expect(answer.type).toBe('error');
      expect(JSON.stringify(theirs.events)).not.toContain('ember');
      expect(theirs.events.map((e) => e.type)).not.toContain('response.done');
      const sessions = [mine, theirs].map((c) => (c.events[0] as unknown as { session: { id: string } }).session.id);
      expect(sessions[0]).not.toBe(sessions[1]);
    },
    TURN_MS,
  );
});

describe('the Agents SDK (OpenAIRealtimeWebSocket under RealtimeSession) in Node', () => {
  const weather = tool({
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async () => 'Sunny and 21 degrees.',
  });

  async function session() {
    const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.', tools: [weather] });
    const transport = new OpenAIRealtimeWebSocket({ url: `${baseURL.replace('http', 'ws')}/realtime?model=${MODEL}` });
    const rt = new RealtimeSession(agent, {
      transport,
      model: MODEL,
      config: { outputModalities: ['text'] },
    });
    const errors: unknown[] = [];
    rt.on('error', (error) => errors.push(error));
    await rt.connect({ apiKey: lantern.key });
    return { rt, transport, errors };
  }
  /** Resolves once `rt`'s history holds an item that `match` accepts. */
  const inHistory = (rt: RealtimeSession, match: (items: RealtimeSession['history']) => boolean) =>
    new Promise<void>((resolve) => {
      if (match(rt.history)) return resolve();
      rt.on('history_updated', (history) => match(history) && resolve());
    });
  const assistantText = (items: RealtimeSession['history']) =>
    items.some(
      (item) =>
        item.type === 'message' &&
        item.role === 'assistant' &&
        item.status !== 'in_progress' &&
        item.content.some((part) => (part.type === 'output_text' ? part.text : (part.transcript ?? '')).trim()),
    );

  it(
    'answers sendMessage() in the history',
    async () => {
      const { rt, errors } = await session();
      rt.sendMessage('Say hello.');
      await inHistory(rt, assistantText);
      rt.close();
      expect(rt.history[0]).toMatchObject({ type: 'message', role: 'user' });
      expect(errors).toEqual([]);
    },
    TURN_MS,
  );

  it(
    'runs a forced tool and answers after its output',
    async () => {
      const { rt, transport, errors } = await session();
      const ran: string[] = [];
      rt.on('agent_tool_end', (_context, _agent, called, result) => ran.push(`${called.name}: ${result}`));
      transport.sendMessage('What is the weather in Paris?', {}, { triggerResponse: false });
      transport.requestResponse({ tool_choice: { type: 'function', name: 'get_weather' } });
      const called = (items: RealtimeSession['history']) => items.findIndex((i) => i.type === 'function_call');
      await inHistory(rt, (items) => called(items) >= 0 && assistantText(items.slice(called(items))));
      rt.close();
      expect(ran).toEqual(['get_weather: Sunny and 21 degrees.']);
      const call = rt.history.find((i) => i.type === 'function_call')!;
      expect(call).toMatchObject({ name: 'get_weather', output: 'Sunny and 21 degrees.' });
      expect(errors).toEqual([]);
    },
    TURN_MS,
  );
});

describe('npm run serve:node', () => {
  let served: ServedNode;
  beforeAll(async () => {
    served = await serveNode();
  }, 120_000);
  afterAll(async () => {
    await served?.close();
  });

  it('takes the Realtime WebSocket on /v1/realtime with its key', async () => {
    const { rt, opened, next, send, errors } = connect(served.key, served.baseURL);
    await opened;
    await next('session.created');
    send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
    await next('session.updated');
    send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
    });
    send({ type: 'response.create', response: { max_output_tokens: 4 } });
    const done = (await next('response.done')) as Extract<RealtimeServerEvent, { type: 'response.done' }>;
    rt.close();
    expect(['completed', 'incomplete']).toContain(done.response.status);
    expect(errors).toEqual([]);
    const bad = connect(`lt_${'y'.repeat(40)}`, served.baseURL);
    await new Promise((resolve) => bad.rt.socket.on('close', resolve));
    expect(bad.errors.map((e) => e.message)).toEqual([expect.stringContaining('401')]);
  }, 120_000);
});
