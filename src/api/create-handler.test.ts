import { beforeEach, describe, expect, it } from 'vitest';
import { aborted, FakeEngine } from '../../test/support/fake-engine.ts';
import { EngineError, type EngineErrorKind } from '../engine-interface/index.ts';
import { KeyRing } from '../keys/index.ts';
import { createHandler, type Handler } from './create-handler.ts';
import type { HandlerOptions } from './options.ts';
import { streamEnd } from './sse.ts';
import type { ChatCompletion, ChatCompletionChunk, EmbeddingList, ErrorBody } from './wire.ts';

let engine: FakeEngine;
let keys: KeyRing;
let key: string;
let handler: Handler;
let serverErrors: { error: unknown; requestId: string }[];

async function setUp(options: Partial<HandlerOptions> = {}) {
  engine = new FakeEngine();
  keys = new KeyRing();
  key = (await keys.issue('test')).key;
  serverErrors = [];
  const onServerError = (error: unknown, requestId: string) => serverErrors.push({ error, requestId });
  handler = createHandler({ engine, keys, onServerError, ...options });
}
beforeEach(() => setUp());

function request(path: string, body?: unknown, init: RequestInit & { auth?: string | null } = {}) {
  const headers = new Headers(init.headers);
  const auth = init.auth === undefined ? `Bearer ${key}` : init.auth;
  if (auth !== null) headers.set('authorization', auth);
  if (body !== undefined) headers.set('content-type', 'application/json');
  return handler(
    new Request(`http://lantern.test${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      ...init,
      headers,
      ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    }),
  );
}

const chatBody = (extra: Record<string, unknown> = {}) => ({
  model: 'chat-model',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

async function expectError(response: Response, status: number, code: string | null = null): Promise<ErrorBody> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  const body = (await response.json()) as ErrorBody;
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(10);
  return body;
}

/** Reads an event stream into its JSON chunks; asserts the framing on the way. */
async function readEvents(response: Response): Promise<unknown[]> {
  const text = await response.text();
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((frame) => {
      expect(frame.startsWith('data: ')).toBe(true);
      return frame === 'data: [DONE]' ? '[DONE]' : JSON.parse(frame.slice(6));
    });
}

describe('authentication', () => {
  it.each([
    ['no Authorization header', null, null, /didn't provide an API key/],
    ['another scheme', 'Basic abc', 'invalid_api_key', /form `Bearer lt_…`/],
    ['a key without the lt_ prefix', 'Bearer sk-0123456789abcdef0123', 'invalid_api_key', /begin with `lt_`/],
    ['an unknown lt_ key', 'Bearer lt_0123456789abcdefABCDEF', 'invalid_api_key', /Incorrect API key/],
  ])('refuses %s with 401 on every route', async (_name, auth, code, message) => {
    for (const [path, body] of [
      ['/v1/models', undefined],
      ['/v1/models/chat-model', undefined],
      ['/v1/chat/completions', chatBody()],
      ['/v1/completions', { model: 'chat-model', prompt: 'x' }],
      ['/v1/responses', { model: 'chat-model', input: 'x' }],
      ['/v1/responses/resp_1', undefined],
      ['/v1/embeddings', { model: 'embed-model', input: 'x' }],
      ['/v1/nowhere', undefined],
    ] as const) {
      const error = await expectError(await request(path, body, { auth }), 401, code);
      expect(error.error.message).toMatch(message);
      expect(JSON.stringify(error)).not.toContain('0123456789abcdef');
    }
    expect(engine.chats).toHaveLength(0);
  });

  it('refuses a revoked key from the next request on', async () => {
    expect((await request('/v1/models')).status).toBe(200);
    const [info] = await keys.list();
    await keys.revoke(info!.id);
    const error = await expectError(await request('/v1/models'), 401, 'invalid_api_key');
    expect(error.error.message).toMatch(/revoked/);
  });

  it('accepts the scheme in any case and extra headers clients send', async () => {
    const response = await request('/v1/models', undefined, {
      auth: `bearer ${key}`,
      headers: { 'x-stainless-lang': 'js', 'OpenAI-Organization': 'org', 'OpenAI-Project': 'p' },
    });
    expect(response.status).toBe(200);
  });
});

describe('cors', () => {
  it('sends no CORS headers unless asked: in a service worker /v1 is same-origin', async () => {
    const response = await request('/v1/models', undefined, { headers: { origin: 'http://localhost:5173' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await request('/v1/models', undefined, { method: 'OPTIONS', auth: null });
    expect(preflight.status).toBe(401);
  });

  it('answers preflights without a key and marks the answers of allowed origins only', async () => {
    await setUp({ cors: { origins: ['https://app.example'] } });
    const preflight = await request('/v1/chat/completions', undefined, {
      method: 'OPTIONS',
      auth: null,
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const refused = await request('/v1/models', undefined, { headers: { origin: 'https://other.example' } });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const error = await request('/v1/chat/completions', chatBody({ temperature: 9 }), {
      headers: { origin: 'https://app.example' },
    });
    expect(error.headers.get('access-control-allow-origin')).toBe('https://app.example');
    await expectError(error, 400, 'invalid_value');
  });
});

describe('routing', () => {
  it('lists models and retrieves one, with one owned_by for all', async () => {
    const list = await (await request('/v1/models')).json();
    expect(list).toEqual({
      object: 'list',
      data: [
        { id: 'chat-model', object: 'model', created: 1, owned_by: 'lantern' },
        { id: 'embed-model', object: 'model', created: 2, owned_by: 'lantern' },
        { id: 'speech-model', object: 'model', created: 3, owned_by: 'lantern' },
        { id: 'voice-model', object: 'model', created: 4, owned_by: 'lantern' },
      ],
    });
    expect(await (await request('/v1/models/embed-model')).json()).toEqual(list.data[1]);
    await expectError(await request('/v1/models/nope'), 404, 'model_not_found');
  });

  it('answers unknown URLs and wrong methods with an OpenAI 404', async () => {
    await expectError(await request('/v1/assistants', chatBody()), 404, 'unknown_url');
    await expectError(await request('/v1/embeddings'), 404, 'unknown_url');
  });

  it('404s unknown models and models on the wrong endpoint before any work', async () => {
    await expectError(await request('/v1/chat/completions', chatBody({ model: 'gpt-4o' })), 404, 'model_not_found');
    await expectError(
      await request('/v1/chat/completions', chatBody({ model: 'embed-model' })),
      404,
      'model_not_found',
    );
    await expectError(await request('/v1/embeddings', { model: 'chat-model', input: 'x' }), 404, 'model_not_found');
    expect(engine.chats).toHaveLength(0);
    expect(engine.embeds).toHaveLength(0);
  });
});

describe('chat completions', () => {
  it('answers with a chat.completion and hands the engine the converted request', async () => {
    const response = await request('/v1/chat/completions', chatBody({ n: 2, temperature: 0, stop: 'x', seed: 5 }));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('120');
    const body = (await response.json()) as ChatCompletion;
    expect(body).toMatchObject({ object: 'chat.completion', model: 'chat-model' });
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.choices).toEqual(
      [0, 1].map((index) => ({
        index,
        message: { role: 'assistant', content: 'hi there', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      })),
    );
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(engine.chats[0]!.request).toMatchObject({ n: 2, temperature: 0, stop: ['x'], seed: 5 });
  });

  it('streams chunks: role first for each choice, one id, finish reasons, usage last, then [DONE]', async () => {
    const response = await request(
      '/v1/chat/completions',
      chatBody({ stream: true, n: 2, stream_options: { include_usage: true } }),
    );
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
    const events = await readEvents(response);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1) as ChatCompletionChunk[];
    expect(new Set(chunks.map((c) => `${c.id} ${c.created} ${c.model} ${c.object}`)).size).toBe(1);
    expect(chunks.slice(0, 2).map((c) => c.choices[0])).toEqual([
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      { index: 1, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
    ]);
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((c) => c.choices).filter((c) => c.index === index);
      expect(mine.map((c) => c.delta.content ?? '').join('')).toBe('hi there');
      expect(mine.at(-1)!.finish_reason).toBe('stop');
    }
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  it("writes each chunk's JSON byte for byte as JSON.stringify of the chunk in its wire order", async () => {
    const text = 'say "hi"\n\u2028✓ \\o/';
    const logprobs = [{ token: 'say', logprob: -0.5, bytes: [115, 97, 121], topLogprobs: [] }];
    engine.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'reasoning', choice: 0, text: 'hmm "so"' });
      onEvent?.({ type: 'delta', choice: 0, text, logprobs });
      onEvent?.({ type: 'delta', choice: 0, text: '' });
      onEvent?.({ type: 'finish', choice: 0, reason: 'stop' });
      return { choices: [{ text, finishReason: 'stop' }], usage: { promptTokens: 1, completionTokens: 2 } };
    };
    for (const includeUsage of [false, true]) {
      const body = chatBody({ stream: true, logprobs: true, stream_options: { include_usage: includeUsage } });
      const frames = (await (await request('/v1/chat/completions', body)).text()).split('\n\n').filter(Boolean);
      const chunks = frames
        .slice(0, -1)
        .map((frame) => JSON.parse(frame.slice('data: '.length)) as ChatCompletionChunk);
      // Rebuilt field by field in the order of the wire types, as one object stringified per chunk wrote them.
      const inOrder = (c: ChatCompletionChunk) => ({
        id: c.id,
        object: c.object,
        created: c.created,
        model: c.model,
        system_fingerprint: c.system_fingerprint,
        choices: c.choices.map((choice) => ({
          index: choice.index,
          delta: choice.delta,
          logprobs: choice.logprobs,
          finish_reason: choice.finish_reason,
        })),
        ...(includeUsage && { usage: c.usage }),
      });
      expect(frames.slice(0, -1)).toEqual(chunks.map((c) => `data: ${JSON.stringify(inOrder(c))}`));
      expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
        { role: 'assistant', content: '' },
        { reasoning_content: 'hmm "so"', reasoning: 'hmm "so"' },
        { content: text },
        { content: '' },
        {},
        ...(includeUsage ? [undefined] : []),
      ]);
      expect(chunks[2]!.choices[0]!.logprobs).toEqual({
        content: [{ token: 'say', logprob: -0.5, bytes: [115, 97, 121], top_logprobs: [] }],
        refusal: null,
      });
    }
  });

  it('sends no usage field without include_usage', async () => {
    const events = await readEvents(await request('/v1/chat/completions', chatBody({ stream: true })));
    expect(events.slice(0, -1).every((c) => !('usage' in (c as object)))).toBe(true);
  });

  it('answers an engine refusal before the first token with its own status, even when streaming', async () => {
    engine.onChat = async () => {
      throw new EngineError('context_length_exceeded', 'This model has 8 tokens of context.', { param: 'messages' });
    };
    const body = await expectError(
      await request('/v1/chat/completions', chatBody({ stream: true })),
      400,
      'context_length_exceeded',
    );
    expect(body.error.param).toBe('messages');
  });

  it('ends a stream that fails after its first token with an error frame', async () => {
    engine.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'par' });
      await new Promise((resolve) => setTimeout(resolve, 1));
      throw new EngineError('unavailable', 'The engine worker stopped.');
    };
    const events = await readEvents(await request('/v1/chat/completions', chatBody({ stream: true })));
    expect(events.at(-1)).toEqual({
      error: { message: 'The engine worker stopped.', type: 'server_error', param: null, code: 'engine_unavailable' },
    });
    expect(events).not.toContain('[DONE]');
  });

  it.each([false, true])('passes the client abort to the engine (stream: %s)', async (stream) => {
    const client = new AbortController();
    let engineSignal: AbortSignal | undefined;
    engine.onChat = async (_request, { signal, onEvent }) => {
      engineSignal = signal;
      onEvent?.({ type: 'delta', choice: 0, text: 'x' });
      await aborted(signal);
      throw new EngineError('aborted', 'cancelled');
    };
    const pending = request('/v1/chat/completions', chatBody({ stream }), { signal: client.signal });
    await new Promise((resolve) => setTimeout(resolve, 5));
    client.abort();
    await pending.then((r) => r.text()).catch(() => undefined);
    expect(engineSignal?.aborted).toBe(true);
  });
});

/** The bodies of the other routes that generate: they share chat's middleware, limits and error handling. */
const generationRoutes = [
  ['/v1/completions', (extra: Record<string, unknown> = {}) => ({ model: 'chat-model', prompt: 'hello', ...extra })],
  ['/v1/responses', (extra: Record<string, unknown> = {}) => ({ model: 'chat-model', input: 'hello', ...extra })],
] as const;

/** The JSON of each `data:` line of an event stream (`[DONE]` as is), whatever `event:` lines name them. */
async function readData(response: Response): Promise<unknown[]> {
  return (await response.text())
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => (line === 'data: [DONE]' ? '[DONE]' : JSON.parse(line.slice(6))));
}

describe.each(generationRoutes)('%s, as chat completions', (path, body) => {
  it.each([false, true])('passes the client abort to the engine (stream: %s)', async (stream) => {
    const client = new AbortController();
    let engineSignal: AbortSignal | undefined;
    engine.onChat = async (_request, { signal, onEvent }) => {
      engineSignal = signal;
      onEvent?.({ type: 'delta', choice: 0, text: 'x' });
      await aborted(signal);
      throw new EngineError('aborted', 'cancelled');
    };
    const pending = request(path, body({ stream }), { signal: client.signal });
    await new Promise((resolve) => setTimeout(resolve, 5));
    client.abort();
    await pending.then((r) => r.text()).catch(() => undefined);
    expect(engineSignal?.aborted).toBe(true);
  });

  it('spends the same per-key requests and generation slots as chat completions and embeddings', async () => {
    await setUp({ rateLimits: { requestsPerMinute: 2 } });
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
    expect((await request(path, body())).status).toBe(200);
    await expectError(await request(path, body()), 429, 'rate_limit_exceeded');
    await setUp({ rateLimits: { concurrentGenerations: 1 } });
    let release!: () => void;
    engine.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'a' });
      await new Promise<void>((resolve) => (release = resolve));
      onEvent?.({ type: 'finish', choice: 0, reason: 'stop' });
      return { choices: [{ text: 'a', finishReason: 'stop' }], usage: { promptTokens: 1, completionTokens: 1 } };
    };
    const first = await request(path, body({ stream: true }));
    await expectError(await request('/v1/chat/completions', chatBody()), 429, 'rate_limit_exceeded');
    release();
    await first.text();
    const second = request(path, body());
    while (engine.chats.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    release();
    expect((await second).status).toBe(200);
  });

  it('answers an engine refusal before the first token with its own status, even when streaming', async () => {
    engine.onChat = async () => {
      throw new EngineError('context_length_exceeded', 'This model has 8 tokens of context.', { param: 'messages' });
    };
    await expectError(await request(path, body({ stream: true })), 400, 'context_length_exceeded');
  });

  it('ends a stream that fails after its first token in its own words, and reports the failure', async () => {
    engine.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'par' });
      await new Promise((resolve) => setTimeout(resolve, 1));
      throw new EngineError('unavailable', 'The engine worker stopped.');
    };
    const response = await request(path, body({ stream: true }));
    const requestId = response.headers.get('x-request-id');
    const events = await readData(response);
    expect(events).not.toContain('[DONE]');
    if (path === '/v1/completions') {
      expect(events.at(-1)).toEqual({
        error: { message: 'The engine worker stopped.', type: 'server_error', param: null, code: 'engine_unavailable' },
      });
    } else {
      // The Responses API's way: the response ends `failed`, with what it had written.
      expect(events.at(-1)).toMatchObject({
        type: 'response.failed',
        sequence_number: events.length - 1,
        response: {
          status: 'failed',
          error: { code: 'server_error', message: 'The engine worker stopped.' },
          output: [{ type: 'message', content: [{ type: 'output_text', text: 'par' }] }],
        },
      });
    }
    expect(serverErrors).toEqual([{ error: expect.any(EngineError), requestId }]);
  });
});

describe('engine errors', () => {
  const table: [EngineErrorKind, number, string, string | null][] = [
    ['model_not_found', 404, 'model_not_found', null],
    ['context_length_exceeded', 400, 'context_length_exceeded', null],
    ['invalid_request', 400, 'null', null],
    ['unavailable', 500, 'engine_unavailable', 'true'],
    ['engine_lost', 500, 'engine_unavailable', 'true'], // the walk could not send it on: a retry runs on the next engine
    ['device_lost', 503, 'gpu_device_lost', 'true'], // the worker is replaced: the SDK's retry succeeds
    ['version_mismatch', 503, 'version_mismatch', 'false'], // only a reload heals it
    ['load_failed', 500, 'model_load_failed', 'false'],
    ['internal', 500, 'engine_error', null], // retried: the broken worker is replaced
  ];
  it.each(table)('maps %s to %i', async (kind, status, code, retry) => {
    engine.onChat = async () => {
      throw new EngineError(kind, `failure of kind ${kind}`);
    };
    const response = await request('/v1/chat/completions', chatBody());
    expect(response.headers.get('x-should-retry')).toBe(retry);
    const body = await expectError(response, status, code === 'null' ? null : code);
    expect(body.error.message).toBe(`failure of kind ${kind}`);
  });

  it('answers an unexpected failure with a 500 that is not retried, and serves the next request', async () => {
    engine.onEmbed = async () => {
      throw new TypeError('undefined is not a function');
    };
    const response = await request('/v1/embeddings', { model: 'embed-model', input: 'x' });
    expect(response.headers.get('x-should-retry')).toBe('false');
    const requestId = response.headers.get('x-request-id');
    const body = await expectError(response, 500, 'internal_error');
    expect(body.error.message).not.toMatch(/undefined is not a function/);
    expect(serverErrors).toEqual([{ error: expect.any(TypeError), requestId }]);
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
  });
});

describe('limits', () => {
  it('refuses a body over the limit before the engine sees it', async () => {
    await setUp({ limits: { maxBodyBytes: 200 } });
    const body = chatBody({ messages: [{ role: 'user', content: 'x'.repeat(300) }] });
    const error = await expectError(await request('/v1/chat/completions', body), 400, 'request_too_large');
    expect(error.error.message).toMatch(/200 bytes/);
    expect(engine.chats).toHaveLength(0);
  });

  it('refuses malformed JSON with a 400 and keeps serving', async () => {
    await expectError(await request('/v1/chat/completions', '{"model": "chat-model", '), 400, 'invalid_json');
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
  });
});

describe('rate limits', () => {
  it('answers 429 with retry headers once a key spends its requests per minute', async () => {
    let now = 1_000_000;
    await setUp({ rateLimits: { requestsPerMinute: 2 }, now: () => now });
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
    const response = await request('/v1/chat/completions', chatBody());
    expect(response.headers.get('retry-after-ms')).toBe('30000');
    expect(response.headers.get('retry-after')).toBe('30');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    await expectError(response, 429, 'rate_limit_exceeded');
    // Embeddings spend the same requests: they run on the same engine.
    await expectError(
      await request('/v1/embeddings', { model: 'embed-model', input: 'x' }),
      429,
      'rate_limit_exceeded',
    );
    now += 30_000;
    expect((await request('/v1/embeddings', { model: 'embed-model', input: 'x' })).status).toBe(200);
    now += 30_000;
    expect((await request('/v1/chat/completions', chatBody())).status).toBe(200);
  });

  it('holds a generation slot until the stream ends or is cancelled', async () => {
    await setUp({ rateLimits: { concurrentGenerations: 1 } });
    let release!: () => void;
    engine.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'a' });
      await new Promise<void>((resolve) => (release = resolve));
      onEvent?.({ type: 'finish', choice: 0, reason: 'stop' });
      return { choices: [{ text: 'a', finishReason: 'stop' }], usage: { promptTokens: 1, completionTokens: 1 } };
    };
    const first = await request('/v1/chat/completions', chatBody({ stream: true }));
    await expectError(await request('/v1/chat/completions', chatBody({ stream: true })), 429, 'rate_limit_exceeded');
    release();
    await first.text();
    const second = await request('/v1/chat/completions', chatBody({ stream: true }));
    await second.body!.cancel();
    release();
    // The slot is given back when the cancelled generation ends, a few promise steps on; a remembered key is checked in
    // fewer, so the next request waits for that end rather than for the time a key check used to take.
    await streamEnd(second);
    const third = await request('/v1/chat/completions', chatBody({ stream: true }));
    expect(third.status).toBe(200);
    release();
  });

  it("reads a body before it takes one of the engine's slots: bodies sent slowly hold only their own keys'", async () => {
    await setUp({ rateLimits: { maxGenerations: 2 }, limits: { bodyTimeoutMs: 200 } });
    // Sixteen keys each open a request and send the first bytes of its body, then nothing (the issue's 1 byte/s).
    const trickling = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const { key: slowKey } = await keys.issue(`slow ${i}`);
        let controller!: ReadableStreamDefaultController<Uint8Array>;
        const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
        controller.enqueue(new TextEncoder().encode('{"model": "chat-'));
        return handler(
          new Request('http://lantern.test/v1/chat/completions', {
            method: 'POST',
            headers: { authorization: `Bearer ${slowKey}`, 'content-type': 'application/json' },
            body,
            duplex: 'half',
          } as RequestInit),
        );
      }),
    );
    // Meanwhile another key is served at once, twice over: the engine's two slots are free.
    const answers = await Promise.all([
      request('/v1/chat/completions', chatBody()),
      request('/v1/embeddings', { model: 'embed-model', input: 'x' }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    // The slow bodies are refused at their deadline, naming it.
    for (const response of trickling) {
      const body = await expectError(response, 400, 'request_timeout');
      expect(body.error.message).toMatch(/0.2 s/);
    }
    expect(engine.chats).toHaveLength(1);
  });
});

describe('embeddings', () => {
  it('answers floats or base64 in input order', async () => {
    const floats = (await (
      await request('/v1/embeddings', { model: 'embed-model', input: ['a', 'bcd'] })
    ).json()) as EmbeddingList;
    expect(floats).toEqual({
      object: 'list',
      model: 'embed-model',
      data: [
        { object: 'embedding', index: 0, embedding: [0, 1, Math.fround(0.1)] },
        { object: 'embedding', index: 1, embedding: [1, 3, Math.fround(0.1)] },
      ],
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    const base64 = (await (
      await request('/v1/embeddings', { model: 'embed-model', input: ['a', 'bcd'], encoding_format: 'base64' })
    ).json()) as EmbeddingList;
    const decoded = base64.data.map((d) => {
      const bytes = Buffer.from(d.embedding as string, 'base64');
      return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
    });
    expect(decoded).toEqual(floats.data.map((d) => d.embedding));
  });
});
