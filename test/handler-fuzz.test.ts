import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '../src/index.ts';
import { FakeEngine } from './support/fake-engine.ts';
import { sdkClient } from './support/lantern.ts';

/**
 * Property-based requests against the handler: random JSON, wrong types, huge and empty values, unicode and NUL
 * strings, deep nesting, bad headers, wrong methods and paths. Whatever arrives, the answer is a well-formed OpenAI
 * answer (never a 500, never an escaped exception), nothing malformed reaches the engine, and the next valid request
 * still succeeds. The engine is a fake here (this is a test of the layer above it); real-inference fuzzing is below.
 */
const CASES = 10_000;
const ORIGIN = 'http://lantern.test';

let handler: Handler;
let engine: FakeEngine;
let key: string;
let revokedKey: string;

beforeAll(async () => {
  engine = new FakeEngine();
  // Nothing may reach the engine that the validation should have refused.
  const honest = engine.onChat;
  engine.onChat = async (request, options) => {
    assertValidChat(request);
    return honest(request, options);
  };
  const lantern = await sdkClient({
    engine,
    handler: {
      // Rate limits out of the way: a 429 would hide what the fuzzer is after.
      rateLimits: { requestsPerMinute: 1e9, concurrentGenerations: 1e9 },
      limits: { maxBodyBytes: 64 * 1024 },
    },
  });
  ({ handler, key } = lantern);
  const revoked = await lantern.keys.issue('revoked');
  revokedKey = revoked.key;
  await lantern.keys.revoke(revoked.info.id);
});

function assertValidChat(request: ChatRequest): void {
  // A conversation, or a raw prompt (/v1/completions) and nothing else.
  if (request.prompt === undefined) expect(request.messages.length).toBeGreaterThan(0);
  else expect(typeof request.prompt === 'string' && request.messages.length === 0).toBe(true);
  for (const m of request.messages) {
    expect(['system', 'user', 'assistant', 'tool']).toContain(m.role);
    expect(typeof m.content).toBe('string');
    if (m.role === 'tool') expect(typeof m.toolCallId).toBe('string');
    for (const call of m.toolCalls ?? []) {
      expect(m.role).toBe('assistant');
      expect([typeof call.id, typeof call.name, typeof call.arguments]).toEqual(['string', 'string', 'string']);
    }
  }
  const tools = request.constraint?.type === 'tools' ? request.constraint : undefined;
  const names = (tools?.tools ?? []).map((t) => t.name);
  for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  expect(new Set(names).size).toBe(names.length);
  if (typeof tools?.choice === 'object') expect(names).toContain(tools.choice.name);
  expect(request.temperature).toBeGreaterThanOrEqual(0);
  expect(request.temperature).toBeLessThanOrEqual(2);
  expect(request.topP).toBeGreaterThanOrEqual(0);
  expect(request.topP).toBeLessThanOrEqual(1);
  expect(Number.isInteger(request.n) && request.n >= 1 && request.n <= 8).toBe(true);
  if (request.maxTokens !== undefined) expect(Number.isInteger(request.maxTokens) && request.maxTokens >= 1).toBe(true);
  for (const stop of request.stop) expect(typeof stop === 'string' && stop.length > 0).toBe(true);
}

// ── arbitraries ──────────────────────────────────────────────────────────────────────────────────────────────────

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // lone surrogates included
  fc.string({ unit: fc.constantFrom('\u0000', '\n', '"', '\\', '💥', '\u202e', '\uFFFF', 'a') }),
  fc.constantFrom('', ' ', '\u0000', 'null', 'undefined', '[]', '{}', '0', '-1', 'NaN', '💥'.repeat(2000)),
);
const json = fc.jsonValue({ maxDepth: 4 });
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.oneof(arb, json, nasty);
const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, 1, 2, 1e308, -1e-308, 2 ** 53 + 1));

const message = fc.record(
  {
    role: maybe(fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool', 'function')),
    content: fc.oneof(
      nasty,
      json,
      fc.array(fc.record({ type: maybe(fc.constantFrom('text', 'image_url')), text: maybe(nasty) })),
    ),
    name: maybe(nasty),
    tool_calls: maybe(
      fc.array(
        fc.record(
          {
            id: maybe(fc.constantFrom('call_1', 'call_2')),
            type: maybe(fc.constant('function')),
            function: maybe(fc.record({ name: maybe(fc.constantFrom('f', 'g')), arguments: maybe(nasty) })),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 3 },
      ),
    ),
    tool_call_id: maybe(fc.constantFrom('call_1', 'call_2')),
  },
  { requiredKeys: [] },
);

/** A tool declaration, well-formed or nearly. */
const tool = fc.record(
  {
    type: maybe(fc.constant('function')),
    function: maybe(
      fc.record(
        {
          name: maybe(fc.constantFrom('f', 'g', 'get_weather', 'bad name', '')),
          description: maybe(nasty),
          parameters: maybe(fc.constantFrom({ type: 'object', properties: {} }, { type: 'string' })),
          strict: maybe(fc.boolean()),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

const chatBody = fc.record(
  {
    model: maybe(fc.constantFrom('chat-model', 'embed-model', 'gpt-4o')),
    messages: fc.oneof(fc.array(message, { maxLength: 6 }), json),
    temperature: maybe(number),
    top_p: maybe(number),
    max_tokens: maybe(number),
    max_completion_tokens: maybe(number),
    n: maybe(number),
    stream: maybe(fc.boolean()),
    stream_options: maybe(fc.record({ include_usage: maybe(fc.boolean()) }, { requiredKeys: [] })),
    stop: fc.oneof(nasty, fc.array(nasty, { maxLength: 6 }), json),
    seed: maybe(number),
    presence_penalty: maybe(number),
    frequency_penalty: maybe(number),
    logit_bias: maybe(fc.dictionary(fc.oneof(fc.nat().map(String), nasty), number)),
    tools: maybe(fc.array(fc.oneof(tool, json), { maxLength: 3 })),
    tool_choice: maybe(
      fc.oneof(
        fc.constantFrom('none', 'auto', 'required'),
        fc.record({ type: maybe(fc.constant('function')), function: maybe(fc.record({ name: maybe(nasty) })) }),
      ),
    ),
    parallel_tool_calls: maybe(fc.boolean()),
    functions: maybe(fc.array(json, { maxLength: 2 })),
    function_call: maybe(fc.constantFrom('none', 'auto')),
    response_format: maybe(fc.record({ type: maybe(fc.constantFrom('text', 'json_object')) })),
    user: maybe(nasty),
  },
  { requiredKeys: [] },
);

const embeddingsBody = fc.record(
  {
    model: maybe(fc.constantFrom('embed-model', 'chat-model')),
    input: fc.oneof(nasty, fc.array(nasty, { maxLength: 8 }), fc.array(fc.integer()), json),
    encoding_format: maybe(fc.constantFrom('float', 'base64', 'binary')),
    dimensions: maybe(number),
  },
  { requiredKeys: [] },
);

const completionsBody = fc.record(
  {
    model: maybe(fc.constantFrom('chat-model', 'embed-model')),
    prompt: fc.oneof(nasty, fc.array(nasty, { maxLength: 10 }), fc.array(fc.integer()), json),
    max_tokens: maybe(number),
    n: maybe(number),
    echo: maybe(fc.boolean()),
    logprobs: maybe(number),
    best_of: maybe(number),
    suffix: maybe(nasty),
    stream: maybe(fc.boolean()),
    stop: fc.oneof(nasty, fc.array(nasty, { maxLength: 6 }), json),
  },
  { requiredKeys: [] },
);

const inputItem = fc.record(
  {
    type: maybe(fc.constantFrom('message', 'function_call', 'function_call_output', 'item_reference', 'reasoning')),
    role: maybe(fc.constantFrom('user', 'assistant', 'system', 'developer', 'tool')),
    content: fc.oneof(
      nasty,
      json,
      fc.array(
        fc.record({ type: maybe(fc.constantFrom('input_text', 'output_text', 'input_image')), text: maybe(nasty) }),
      ),
    ),
    id: maybe(nasty),
  },
  { requiredKeys: [] },
);

const responsesBody = fc.record(
  {
    model: maybe(fc.constantFrom('chat-model', 'embed-model')),
    input: fc.oneof(nasty, fc.array(inputItem, { maxLength: 6 }), json),
    instructions: maybe(nasty),
    max_output_tokens: maybe(number),
    previous_response_id: maybe(nasty),
    store: maybe(fc.boolean()),
    stream: maybe(fc.boolean()),
    tools: maybe(fc.array(json)),
    text: maybe(fc.record({ format: maybe(fc.record({ type: maybe(fc.constantFrom('text', 'json_object')) })) })),
    include: maybe(fc.array(nasty)),
    metadata: maybe(json),
  },
  { requiredKeys: [] },
);

/** Valid in shape, hostile in content: these reach the engine, with unicode, NUL and surrogates in every string. */
const validChat = fc.record(
  {
    model: fc.constant('chat-model'),
    messages: fc.array(
      fc.record({ role: fc.constantFrom('system', 'developer', 'user', 'assistant'), content: nasty }),
      { minLength: 1, maxLength: 4 },
    ),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 4096 }),
    n: fc.integer({ min: 1, max: 8 }),
    stream: fc.boolean(),
    stop: fc.oneof(
      nasty.filter((t) => t.length > 0),
      fc.array(
        nasty.filter((t) => t.length > 0),
        { maxLength: 4 },
      ),
    ),
    seed: fc.integer(),
    user: nasty,
  },
  { requiredKeys: ['model', 'messages'] },
);

const validEmbeddings = fc.record({
  model: fc.constant('embed-model'),
  input: fc.oneof(
    nasty.filter((t) => t.length > 0 && t.length <= 32_768),
    fc.array(
      nasty.filter((t) => t.length > 0 && t.length <= 32_768),
      { minLength: 1, maxLength: 8 },
    ),
  ),
  encoding_format: fc.constantFrom('float', 'base64'),
});

const utf8 = (text: string) => new TextEncoder().encode(text);
const body = fc.oneof(
  { weight: 6, arbitrary: validChat.map((b) => utf8(JSON.stringify(b))) },
  { weight: 1, arbitrary: validEmbeddings.map((b) => utf8(JSON.stringify(b))) },
  { weight: 4, arbitrary: chatBody.map((b) => utf8(JSON.stringify(b))) },
  { weight: 3, arbitrary: embeddingsBody.map((b) => utf8(JSON.stringify(b))) },
  { weight: 2, arbitrary: completionsBody.map((b) => utf8(JSON.stringify(b))) },
  { weight: 2, arbitrary: responsesBody.map((b) => utf8(JSON.stringify(b))) },
  {
    weight: 3,
    arbitrary: fc
      .record({
        model: fc.constant('chat-model'),
        prompt: fc.oneof(nasty, fc.array(nasty, { minLength: 1, maxLength: 4 })),
      })
      .map((b) => utf8(JSON.stringify(b))),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({ model: fc.constant('chat-model'), input: nasty, stream: fc.boolean() })
      .map((b) => utf8(JSON.stringify(b))),
  },
  { weight: 2, arbitrary: fc.anything().map((v) => utf8(JSON.stringify(v) ?? 'undefined')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 256 }) }, // not JSON, often not UTF-8
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 200_000 }).map((depth) => utf8('['.repeat(depth) + ']'.repeat(depth))),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 100_000 })
      .map((depth) => utf8('{"a":'.repeat(depth) + '1' + '}'.repeat(depth))),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 64 * 1024 - 100, max: 200 * 1024 })
      .map((size) => utf8(`{"model":"${'x'.repeat(size)}"}`)),
  },
  { weight: 1, arbitrary: fc.constant(new Uint8Array()) },
);

const path = fc.oneof(
  fc.constantFrom(
    '/v1/chat/completions',
    '/v1/embeddings',
    '/v1/completions',
    '/v1/responses',
    '/v1/responses/resp_0123',
    '/v1/models',
    '/v1/models/chat-model',
    '/v1/models/',
    '/v1',
    '/v1/',
    '/v1/chat/completions/',
    '/v1//models',
    '/v2/models',
    '/v1/chat/completions?stream=true',
    '/v1/models/%00',
    '/v1/models/..%2F..%2Fetc',
  ),
  fc.webPath().map((p) => `/v1${p}`),
  nasty.map((s) => `/v1/models/${encodeURIComponent(s)}`),
);

const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 300,
});
const authorization = fc.oneof(
  fc.constant<string | null>('valid'),
  fc.constant<string | null>('valid'),
  fc.constant<string | null>(null),
  fc.constant<string | null>('revoked'),
  headerText,
  headerText.map((t) => `Bearer ${t}`),
  headerText.map((t) => `Bearer lt_${t}`),
  fc.constantFrom('Bearer', 'Bearer ', 'bearer lt_', 'Basic dXNlcjpwYXNz', 'Bearer lt_' + 'A'.repeat(10_000)),
);

const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('application/json', 'text/plain', 'multipart/form-data'),
  headerText,
);
const extra = fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), headerText, { maxKeys: 4 });

/** Anything at all: methods, paths, headers and bodies. */
const anyRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
  path,
  authorization,
  contentType,
  extra,
  body,
});

/** Past the front door: a valid key, POST to a real endpoint, so that the body is what gets fuzzed. */
const bodyRequest = fc.record({
  method: fc.constant('POST'),
  path: fc.constantFrom('/v1/chat/completions', '/v1/embeddings', '/v1/completions', '/v1/responses'),
  authorization: fc.constant<string | null>('valid'),
  contentType,
  extra,
  body,
});

const requestSpec = fc.oneof({ weight: 2, arbitrary: anyRequest }, { weight: 3, arbitrary: bodyRequest });

type RequestSpec = typeof requestSpec extends fc.Arbitrary<infer T> ? T : never;

function toRequest(spec: RequestSpec): Request {
  const headers = new Headers(spec.extra);
  if (spec.authorization === 'valid') headers.set('authorization', `Bearer ${key}`);
  else if (spec.authorization === 'revoked') headers.set('authorization', `Bearer ${revokedKey}`);
  else if (spec.authorization !== null) headers.set('authorization', spec.authorization);
  if (spec.contentType !== undefined) headers.set('content-type', spec.contentType);
  const withBody = spec.method !== 'GET' && spec.method !== 'HEAD';
  return new Request(ORIGIN + spec.path, {
    method: spec.method,
    headers,
    ...(withBody && { body: spec.body as Uint8Array<ArrayBuffer> }),
  });
}

async function expectWellFormed(response: Response, method: string): Promise<void> {
  // 426: GET /v1/responses is WebSocket mode's URL, which a plain request with a valid key is told to upgrade.
  expect([200, 400, 401, 404, 426]).toContain(response.status);
  expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  const text = await response.text();
  if (method === 'HEAD') return expect(text).toBe(''); // a HEAD answer has headers only
  if (response.status === 200) {
    if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
      // A response's stream ends with its last event, the others with [DONE].
      expect(text.endsWith('data: [DONE]\n\n') || /"type":"response\.completed"[^\n]*\n\n$/.test(text)).toBe(true);
    } else {
      JSON.parse(text);
    }
    return;
  }
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const { error } = JSON.parse(text) as { error: Record<string, unknown> };
  expect(typeof error.message).toBe('string');
  expect((error.message as string).length).toBeGreaterThan(0);
  expect(typeof error.type).toBe('string');
  expect(error.param === null || typeof error.param === 'string').toBe(true);
  expect(error.code === null || typeof error.code === 'string').toBe(true);
  // Keys are never echoed, not even a rejected one.
  expect(text).not.toContain(key.slice(3));
  expect(text).not.toContain(revokedKey.slice(3));
}

async function expectHealthy(): Promise<void> {
  const response = await handler(
    new Request(`${ORIGIN}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] }),
    }),
  );
  expect(response.status).toBe(200);
  expect(((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(
    'hi there',
  );
}

describe('the handler under fuzzing', () => {
  it(`answers ${CASES.toLocaleString('en')} random requests well-formed, never 500, and keeps serving`, async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestSpec, async (spec) => {
        const response = await handler(toRequest(spec));
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        await expectWellFormed(response, spec.method);
        await expectHealthy();
      }),
      { numRuns: CASES },
    );
    // The fuzzer reached past validation too, not only the front door.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(500);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(1000);
    console.log(`[fuzz] ${CASES} requests, statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  });
});
