import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { ResponsesWS } from 'openai/resources/responses/ws';
import { ResponsesWSBase } from 'openai/resources/responses/ws-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { Handler } from '../src/index.ts';
import { LocalResponsesSocket } from '../src/client/index.ts';
import { handleResponsesWebSocket, type ResponsesWebSocket, type ResponsesWebSocketError } from '../src/node/index.ts';
import type { openaiClient } from './support/lantern.ts';
import { reference, sdkClient, type ChatReference, type SdkClient } from './support/lantern.ts';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/**
 * The Responses API's WebSocket mode through openai-node's own client (`ResponsesWS`), on a real Node HTTP server
 * (@hono/node-server, as `npm run serve:node`) with `handleResponsesWebSocket`, on real inference with the bundled tiny
 * chat model. What a socket answers is compared with what the same requests answer over HTTP.
 */
const refs = reference<ChatReference[]>('tiny-chat');
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;
const model = 'crimson-falcon-4';
/** The handler's body limit here: small, so that a message over it is cheap to send. */
const MAX_BODY_BYTES = 64 * 1024;

type ServerEvent = OpenAI.Responses.ResponsesServerEvent | ResponsesWebSocketError;
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error']);

let lantern: SdkClient;
let http: ReturnType<typeof openaiClient>;
let otherKey: string;
let server: Server;
let baseURL: string;
let sockets: ResponsesWebSocket;

/** Serves `handler` on 127.0.0.1, a free port, with its WebSocket mode: the base URL. */
async function listen(handler: Handler): Promise<{ server: Server; baseURL: string; sockets: ResponsesWebSocket }> {
  const started = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: handler, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server)) as Server;
  });
  const sockets = handleResponsesWebSocket(started, handler);
  return { server: started, sockets, baseURL: `http://127.0.0.1:${(started.address() as AddressInfo).port}/v1` };
}

beforeAll(async () => {
  lantern = await sdkClient({
    handler: { onServerError: () => {}, limits: { maxBodyBytes: MAX_BODY_BYTES } },
    client: { maxRetries: 0 },
  });
  http = lantern.client;
  otherKey = (await lantern.keys.issue('another app')).key;
  ({ server, baseURL, sockets } = await listen(lantern.handler));
});

afterAll(async () => {
  // A socket a failed test left open would hold the server open.
  sockets?.close();
  await new Promise((resolve) => server?.close(resolve));
});

/** openai-node's WebSocket client on `url` with `apiKey`; its errors are collected rather than thrown. */
function connect(apiKey = lantern.key, url = baseURL) {
  const ws = new ResponsesWS(new OpenAI({ apiKey, baseURL: url, maxRetries: 0 }));
  const errors: Error[] = [];
  ws.on('error', (error) => errors.push(error));
  return { ws, errors };
}

/** The events `ws` receives from now until `terminals` responses (or errors) have ended. */
function collect(ws: ResponsesWS | LocalResponsesWS, terminals = 1): Promise<ServerEvent[]> {
  return new Promise((resolve, reject) => {
    const seen: ServerEvent[] = [];
    let left = terminals;
    const onEvent = (event: ServerEvent) => {
      seen.push(event);
      if (TERMINAL.has(event.type) && --left === 0) {
        ws.off('event', onEvent);
        resolve(seen);
      }
    };
    ws.on('event', onEvent);
    ws.once('close', (code) => reject(new Error(`the socket closed (${code}) after ${seen.length} events`)));
  });
}

/** The responses that ended among `events` (completed, or incomplete at their token limit). */
const completed = (events: ServerEvent[]) =>
  events.flatMap((event) =>
    event.type === 'response.completed' || event.type === 'response.incomplete' ? [event.response] : [],
  );
/** A response's text (the raw events carry no `output_text`: the SDK adds it to what `create` returns). */
const textOf = (response: OpenAI.Responses.Response) =>
  response.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((part) => (part.type === 'output_text' ? part.text : ''))
    .join('');
const errorsOf = (events: ServerEvent[]) =>
  events.filter((event): event is ResponsesWebSocketError => event.type === 'error');

/** The event types the same request streams over HTTP (SSE). */
async function sseTypes(params: OpenAI.Responses.ResponseCreateParamsStreaming) {
  const types: string[] = [];
  for await (const event of await http.responses.create(params)) types.push(event.type);
  return types;
}

describe('Responses WebSocket mode (openai-node ResponsesWS, handleResponsesWebSocket)', () => {
  it('answers two responses over one socket, one after the other, with the events SSE streams', async () => {
    const { ws, errors } = connect();
    const params = { model, input: 'Count to 10.', temperature: 0 } as const;
    const events = collect(ws, 2);
    ws.send({ type: 'response.create', ...params });
    ws.send({ type: 'response.create', ...params, instructions: 'Answer briefly.' });
    const received = await events;
    ws.close();

    const [first, second] = completed(received);
    expect([first!.status, second!.status]).toEqual(['completed', 'completed']);
    expect(second!.instructions).toBe('Answer briefly.');
    expect(first!.id).not.toBe(second!.id);
    // One at a time: every event of the first response comes before the second's first.
    const secondStart = received.findIndex((e) => e.type === 'response.created' && e.response.id === second!.id);
    const firstEnd = received.findIndex((e) => e.type === 'response.completed' && e.response.id === first!.id);
    expect(firstEnd).toBeLessThan(secondStart);
    // The same events, in the same order, as the request streamed over HTTP; the same greedy text.
    const firstEvents = received.slice(0, firstEnd + 1).map((e) => e.type);
    expect(firstEvents).toEqual(await sseTypes({ ...params, stream: true }));
    const text = received
      .slice(0, firstEnd)
      .flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []))
      .join('');
    expect(text).toBe(count.greedy_text);
    expect(textOf(first!)).toBe(count.greedy_text);
    // Stored for the key, as over HTTP.
    expect((await http.responses.retrieve(first!.id)).id).toBe(first!.id);
    expect(errors).toEqual([]);
  });

  it('continues a response by previous_response_id as HTTP does', async () => {
    const { ws } = connect();
    const firstTurn = collect(ws);
    ws.send({ type: 'response.create', model, input: 'Count to 10.', temperature: 0 });
    const [first] = completed(await firstTurn);
    const secondTurn = collect(ws);
    ws.send({
      type: 'response.create',
      model,
      previous_response_id: first!.id,
      input: 'Tell me a story.',
      temperature: 0,
      max_output_tokens: 12,
    });
    const [second] = completed(await secondTurn);
    ws.close();
    expect(second!.previous_response_id).toBe(first!.id);
    const overHttp = await http.responses.create({
      model,
      previous_response_id: first!.id,
      input: 'Tell me a story.',
      temperature: 0,
      max_output_tokens: 12,
    });
    expect(second!.output).toEqual(
      overHttp.output.map((item) => ({ ...item, id: expect.stringMatching(/^msg_/) as unknown })),
    );
  });

  it('refuses a bad key at the handshake with the 401 HTTP answers', async () => {
    const bad = `lt_${'x'.repeat(40)}`;
    const { ws, errors } = connect(bad);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    expect(await closed).toBe(1006);
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('401')]);

    // The answer itself: the handler's own error body.
    const raw = new WebSocket(baseURL.replace('http', 'ws') + '/responses', {
      headers: { authorization: `Bearer ${bad}` },
    });
    const refusal = await new Promise<{ status: number; body: string }>((resolve) => {
      raw.on('error', () => {});
      raw.on('unexpected-response', (_request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode!, body }));
      });
    });
    expect(refusal.status).toBe(401);
    expect(JSON.parse(refusal.body)).toMatchObject({
      error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
    });
    // Another URL's upgrade is the handler's unknown URL.
    const elsewhere = new WebSocket(baseURL.replace('http', 'ws') + '/chat/completions', {
      headers: { authorization: `Bearer ${lantern.key}` },
    });
    const unknown = await new Promise<number>((resolve) => {
      elsewhere.on('error', () => {});
      elsewhere.on('unexpected-response', (_request, response) => resolve(response.statusCode!));
    });
    expect(unknown).toBe(404);
    // And a plain GET of the URL, with a good key, is told it takes a WebSocket.
    const plain = await fetch(`${baseURL}/responses`, { headers: { authorization: `Bearer ${lantern.key}` } });
    expect(plain.status).toBe(426);
    expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('websocket_upgrade_required');
  });

  it('answers an invalid message with an error event and keeps the socket for the next', async () => {
    const { ws, errors } = connect();
    const events = collect(ws, 6);
    ws.send({ type: 'response.create', model, input: 'Hi', temperature: 9 });
    ws.sendRaw('{not json');
    ws.sendRaw(JSON.stringify({ type: 'response.cancel' }));
    ws.send({ type: 'response.create', model, input: 'x'.repeat(MAX_BODY_BYTES + 1) });
    ws.send({ type: 'response.create', model, input: 'Hi', background: true });
    ws.send({ type: 'response.create', model, input: 'Count to 10.', temperature: 0 });
    const received = await events;
    ws.close();
    // The socket's own refusals (not a request) and the handler's (the same as over HTTP), each once.
    const refused = errorsOf(received);
    expect(refused).toHaveLength(5);
    expect(refused).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ status: 400, error: expect.objectContaining({ code: 'invalid_json' }) }),
        expect.objectContaining({ status: 400, error: expect.objectContaining({ code: 'unknown_event_type' }) }),
        expect.objectContaining({ status: 400, error: expect.objectContaining({ param: 'background' }) }),
        expect.objectContaining({ status: 400, error: expect.objectContaining({ param: 'temperature' }) }),
        expect.objectContaining({ status: 400, error: expect.objectContaining({ code: 'request_too_large' }) }),
      ]),
    );
    // The invalid request's refusal is the one HTTP gives it.
    const overHttp = await http.responses
      .create({ model, input: 'Hi', temperature: 9 })
      .catch((error: unknown) => error);
    expect(refused.find((e) => e.error.param === 'temperature')!.error).toEqual(
      (overHttp as InstanceType<typeof OpenAI.BadRequestError>).error,
    );
    expect(completed(received).map(textOf)).toEqual([count.greedy_text]);
    expect(errors).toHaveLength(5);
  });

  it("refuses another key's previous_response_id as HTTP does (not found)", async () => {
    const [first] = completed(await turn(connect(), { model, input: 'Count to 10.', max_output_tokens: 2 }));
    const { ws } = connect(otherKey);
    const events = collect(ws);
    ws.send({ type: 'response.create', model, input: 'Go on.', previous_response_id: first!.id });
    const [error] = errorsOf(await events);
    ws.close();
    expect(error).toEqual({
      type: 'error',
      status: 400,
      error: {
        message: `Previous response with id '${first!.id}' not found.`,
        type: 'invalid_request_error',
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      },
    });
  });

  it('stops the running response when the socket closes', async () => {
    const { ws } = connect();
    const started = new Promise<void>((resolve) => ws.on('response.output_text.delta', () => resolve()));
    ws.send({ type: 'response.create', model, input: 'Tell me a story.', max_output_tokens: 900 });
    await started;
    const call = lantern.calls.at(-1)!;
    ws.close();
    expect(await call.outcome).toMatchObject({ kind: 'aborted' });
    // The model stopped at once (what it had produced as the abort landed, at most).
    expect(call.eventsAfterAbort).toBeLessThanOrEqual(1);
  });

  it("counts each response.create against the key's rate limit, as HTTP does", async () => {
    const limited = await sdkClient({
      engine: lantern.engine,
      handler: { onServerError: () => {}, rateLimits: { requestsPerMinute: 2 } },
    });
    const { server: own, baseURL: url, sockets: ownSockets } = await listen(limited.handler);
    try {
      const { ws } = connect(limited.key, url);
      const events = collect(ws, 3);
      for (let i = 0; i < 3; i++) ws.send({ type: 'response.create', model, input: 'Hi', max_output_tokens: 1 });
      const received = await events;
      ws.close();
      expect(received.filter((e) => TERMINAL.has(e.type)).map((e) => e.type)).toEqual([
        expect.stringMatching(/^response\./),
        expect.stringMatching(/^response\./),
        'error',
      ]);
      expect(errorsOf(received)[0]).toMatchObject({ status: 429, error: { type: 'requests' } });
    } finally {
      ownSockets.close();
      await new Promise((resolve) => own.close(resolve));
    }
  });
});

/** One response over a fresh socket: its events. */
async function turn(
  { ws }: ReturnType<typeof connect>,
  params: Omit<OpenAI.Responses.ResponsesClientEvent, 'type'>,
): Promise<ServerEvent[]> {
  const events = collect(ws);
  ws.send({ type: 'response.create', ...params });
  const received = await events;
  ws.close();
  return received;
}

describe('npm run serve:node', () => {
  let served: ServedNode;
  beforeAll(async () => {
    served = await serveNode();
  }, 120_000);
  afterAll(async () => {
    await served?.close();
  });

  it('accepts WebSocket mode on /v1/responses with its key', async () => {
    const events = await turn(connect(served.key, served.baseURL), { model, input: 'Count to 10.', temperature: 0 });
    expect(completed(events).map(textOf)).toEqual([count.greedy_text]);
    const { ws, errors } = connect(`lt_${'y'.repeat(40)}`, served.baseURL);
    await new Promise((resolve) => ws.on('close', resolve));
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining('401')]);
  }, 120_000);
});

/**
 * openai-node's `ResponsesWSBase` on Lantern's fetch-carried socket, as a page whose service worker runs Lantern uses
 * it (docs/api.md): here `fetch` is the handler itself, as the service worker's is.
 */
class LocalResponsesWS extends ResponsesWSBase<LocalResponsesSocket> {
  constructor(client: OpenAI) {
    super(client);
    this._connectInitial();
  }
  protected override _createSocket(url: URL, authHeaders: Record<string, string>) {
    return new LocalResponsesSocket(url, authHeaders, (input, init) =>
      lantern.handler(new Request(input as URL, init)),
    );
  }
}

describe('in a page: LocalResponsesSocket under ResponsesWSBase', () => {
  const local = (apiKey = lantern.key) => {
    const ws = new LocalResponsesWS(new OpenAI({ apiKey, baseURL: 'http://lantern.test/v1', maxRetries: 0 }));
    const errors: Error[] = [];
    ws.on('error', (error) => errors.push(error));
    return { ws, errors };
  };

  it('answers responses and a continuation over one socket as the Node socket does', async () => {
    const { ws, errors } = local();
    const firstTurn = collect(ws, 2);
    ws.send({ type: 'response.create', model, input: 'Count to 10.', temperature: 0 });
    ws.sendRaw('{not json');
    const received = await firstTurn;
    const [first] = completed(received);
    expect(textOf(first!)).toBe(count.greedy_text);
    expect(errorsOf(received).map((e) => e.error.code)).toEqual(['invalid_json']);
    const secondTurn = collect(ws);
    ws.send({ type: 'response.create', model, input: 'Go on.', previous_response_id: first!.id, max_output_tokens: 3 });
    const [second] = completed(await secondTurn);
    ws.close();
    expect(second!.previous_response_id).toBe(first!.id);
    expect(errors).toHaveLength(1);
  });

  it('refuses a bad key as a refused handshake (error, then close 1006)', async () => {
    const { ws, errors } = local(`lt_${'z'.repeat(40)}`);
    const code = await new Promise<number>((resolve) => ws.on('close', (c) => resolve(c)));
    expect(code).toBe(1006);
    expect(errors.map((e) => e.message)).toEqual(['Unexpected server response: 401']);
  });
});
