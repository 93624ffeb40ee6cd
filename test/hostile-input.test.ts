import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../src/index.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * Requests from one key that used to cost every other key dearly, run against the handler in Node on the real engine
 * (one event loop for everything, as `npm run serve:node`): each is answered with a 400 that names its parameter,
 * quickly, and another key's requests, during and right after, are answered as usual. How long each took to be
 * answered, and the longest the event loop stalled meanwhile, are logged (figures, never thresholds: the machines are
 * shared); `TIMES` is printed at the end of the file.
 */

let lantern: SdkClient;
let otherKey: string;
const TIMES: Record<string, { answeredMs: number; longestStallMs: number; otherKeyWaitedMs: number }> = {};

beforeAll(async () => {
  lantern = await sdkClient({
    handler: { rateLimits: { requestsPerMinute: 1e9, concurrentGenerations: 1e9 }, onServerError: () => {} },
  });
  otherKey = (await lantern.keys.issue('another app')).key;
  // The model loaded, so that what is timed below is the request and not the first load.
  await post('/v1/chat/completions', otherKey, { model: 'crimson-falcon-4', messages: [hi], max_tokens: 1 });
}, 60_000);

afterAll(() => console.log(`[hostile input] answered in (ms):\n${JSON.stringify(TIMES, null, 1)}`));

const hi = { role: 'user', content: 'Hi' } as const;

async function post(path: string, key: string, body: unknown): Promise<Response> {
  return lantern.handler(
    new Request(`http://lantern.test${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

/**
 * Sends `body` from the test's key, with another key's `GET /v1/models` sent right behind it; records how long the
 * hostile request took, the longest event-loop stall meanwhile and how long the other key waited; then checks that a
 * normal chat request of the other key succeeds.
 */
interface ErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

async function hostile(name: string, path: string, body: unknown): Promise<{ status: number; error: ErrorBody }> {
  const json = JSON.stringify(body); // built before the clock starts: the client's work, not ours
  const stalls = monitorEventLoopDelay({ resolution: 5 });
  stalls.enable();
  const started = performance.now();
  const answer = lantern.handler(
    new Request(`http://lantern.test${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lantern.key}`, 'content-type': 'application/json' },
      body: json,
    }),
  );
  const other = (async () => {
    await new Promise((resolve) => setTimeout(resolve, 0));
    const sent = performance.now();
    const models = await lantern.handler(
      new Request('http://lantern.test/v1/models', { headers: { authorization: `Bearer ${otherKey}` } }),
    );
    expect(models.status).toBe(200);
    return performance.now() - sent;
  })();
  const response = await answer;
  const answeredMs = performance.now() - started;
  const text = await response.text();
  const otherKeyWaitedMs = await other;
  stalls.disable();
  TIMES[name] = {
    answeredMs: Math.round(answeredMs),
    longestStallMs: Math.round(stalls.max / 1e6),
    otherKeyWaitedMs: Math.round(otherKeyWaitedMs),
  };

  const normal = await post('/v1/chat/completions', otherKey, {
    model: 'crimson-falcon-4',
    messages: [hi],
    max_tokens: 4,
  });
  expect(normal.status).toBe(200);
  expect((await normal.json()).choices[0].message.content).toBeTypeOf('string');
  return { status: response.status, error: (JSON.parse(text) as { error: ErrorBody }).error };
}

const chat = (extra: Record<string, unknown>) => ({ model: 'crimson-falcon-4', messages: [hi], ...extra });
const words = (chars: number) => 'lorem ipsum dolor sit amet '.repeat(Math.ceil(chars / 27)).slice(0, chars);

describe('logit_bias', () => {
  it('300,000 entries are refused at once, naming logit_bias', async () => {
    const bias = Object.fromEntries(Array.from({ length: 300_000 }, (_, i) => [String(i), 1]));
    const { status, error } = await hostile('logit_bias of 300,000 entries, n 8', '/v1/chat/completions', {
      ...chat({ n: 8, max_tokens: 200 }),
      logit_bias: bias,
    });
    expect(status).toBe(400);
    expect(error).toMatchObject({ type: 'invalid_request_error', param: 'logit_bias' });
    expect(error.message).toContain('at most 1024');
  });

  it('the largest allowed map costs a generation nothing noticeable', async () => {
    const bias = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [String(i), -1]));
    const response = await post('/v1/chat/completions', lantern.key, {
      ...chat({ n: 8, max_tokens: 50 }),
      logit_bias: bias,
    });
    expect(response.status).toBe(200);
  });

  it('ids the model does not have are refused as the OpenAI API refuses them, on every engine', async () => {
    // tiny-chat's vocabulary is far below 100,000; 2³² was read as token 0 in a 32-bit array (issue 63 #10).
    for (const id of ['100000', '4294967296', '2147483648']) {
      for (const path of ['/v1/chat/completions', '/v1/completions'] as const) {
        const body =
          path === '/v1/completions'
            ? { model: 'crimson-falcon-4', prompt: 'Hello', max_tokens: 4 }
            : chat({ max_tokens: 4 });
        const response = await post(path, lantern.key, { ...body, logit_bias: { [id]: 100 } });
        expect(response.status).toBe(400);
        const { error } = (await response.json()) as { error: ErrorBody };
        expect(error).toMatchObject({ type: 'invalid_request_error', param: 'logit_bias' });
        expect(error.message).toMatch(
          new RegExp(`^Invalid key in 'logit_bias': ${id}\\. This model's token ids run from 0 to \\d+\\.$`),
        );
      }
    }
  });
});

describe('size is refused before it is paid for', () => {
  const FOUR_MB = 4_000_000;

  it('a 4 MB chat prompt: context_length_exceeded, untokenized', async () => {
    const { status, error } = await hostile('chat prompt of 4 MB', '/v1/chat/completions', {
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: words(FOUR_MB) }],
    });
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toContain(`${FOUR_MB} characters`);
  });

  it('a 4 MB completions prompt', async () => {
    const { status, error } = await hostile('completions prompt of 4 MB', '/v1/completions', {
      model: 'crimson-falcon-4',
      prompt: words(FOUR_MB),
    });
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'prompt' });
    expect(error.message).toContain('characters long');
  });

  it('a 4 MB Responses input', async () => {
    const { status, error } = await hostile('Responses input of 4 MB', '/v1/responses', {
      model: 'crimson-falcon-4',
      input: words(FOUR_MB),
    });
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
    expect(error.message).toContain('characters long');
  });

  it('256 messages of 15 KB', async () => {
    const messages = Array.from({ length: 256 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: words(15_000),
    }));
    const { status, error } = await hostile('256 messages of 15 KB', '/v1/chat/completions', chat({ messages }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toContain('characters long');
  });

  it('more messages than the limit', async () => {
    const messages = Array.from({ length: DEFAULT_LIMITS.maxMessages + 1 }, () => hi);
    const { status, error } = await hostile('257 messages', '/v1/chat/completions', chat({ messages }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'messages' });
  });

  it('128 tools of 2 KB each', async () => {
    const tools = Array.from({ length: 128 }, (_, i) => ({
      type: 'function',
      function: {
        name: `tool_${i}`,
        description: words(400),
        parameters: {
          type: 'object',
          properties: Object.fromEntries(
            Array.from({ length: 20 }, (_, j) => [`p${j}`, { type: 'string', description: words(60) }]),
          ),
        },
      },
    }));
    const { status, error } = await hostile('128 tools of 2 KB', '/v1/chat/completions', chat({ tools }));
    expect(status).toBe(400);
    // Their schemas alone are past the schema budget; a smaller set would still not fit the prompt.
    expect(error).toMatchObject({ code: 'schema_too_large' });
    expect(error.param).toMatch(/^tools\[\d+\]\.function\.parameters$/);
  });

  it('more tools than the limit', async () => {
    const tools = Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `t${i}` } }));
    const { status, error } = await hostile('129 tools', '/v1/chat/completions', chat({ tools }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'tools' });
  });

  it('a prompt as large as the window allows is prepared without holding the event loop for long', async () => {
    // Not refused unread (it might fit), tokenized, then refused by its token count: the stall is logged.
    const { status, error } = await hostile(
      'chat prompt of 16 KB (the most the window takes)',
      '/v1/chat/completions',
      {
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: words(16_000) }],
      },
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(error.message).toMatch(/you requested \d+ tokens/);
  });

  it('2,048 embeddings inputs are embedded, the event loop let go meanwhile', async () => {
    // As long as the bundled model takes (128 tokens, a character a token or so).
    const input = Array.from({ length: 2048 }, (_, i) => `${i} ${words(90)}`);
    const { status } = await hostile('embeddings: 2,048 inputs of 95 characters', '/v1/embeddings', {
      model: 'jade-mole-4',
      input,
    });
    expect(status).toBe(200);
  }, 300_000);

  it('an embeddings input longer than the model can hold is refused unread', async () => {
    const { status, error } = await hostile('embeddings input of 32,768 characters', '/v1/embeddings', {
      model: 'jade-mole-4',
      input: ['short', words(DEFAULT_LIMITS.maxInputChars)],
    });
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
    expect(error.message).toContain('input[1] is 32768 characters long');
  });

  it('a stop sequence list past the limit', async () => {
    const { status, error } = await hostile(
      '5 stop sequences',
      '/v1/chat/completions',
      chat({ stop: ['a', 'b', 'c', 'd', 'e'] }),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'stop' });
  });

  it('a prediction of 64 parts of 32,768 characters (issue 63 #9: 7.5 s for a 40-token answer)', async () => {
    const part = { type: 'text', text: words(DEFAULT_LIMITS.maxInputChars) };
    const { status, error } = await hostile(
      'prediction of 64 × 32,768 characters',
      '/v1/chat/completions',
      chat({ max_tokens: 40, prediction: { type: 'content', content: new Array(64).fill(part) } }),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'prediction.content' });
    expect(error.message).toContain('at most 32768 characters, its parts together');
    const within = await post('/v1/chat/completions', lantern.key, {
      ...chat({ max_tokens: 4 }),
      prediction: { type: 'content', content: [part] },
    });
    expect(within.status).toBe(200);
  });
});

describe('literal sizes in schemas', () => {
  const format = (schema: unknown) => ({
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
  });

  it('an enum of 64 strings of 60 KB', async () => {
    const values = Array.from({ length: 64 }, (_, i) => `${i}`.padEnd(60_000, 'x'));
    const { status, error } = await hostile(
      'enum of 64 strings of 60 KB',
      '/v1/chat/completions',
      chat(format({ type: 'object', properties: { a: { enum: values } }, required: ['a'] })),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'schema_too_large', param: 'response_format' });
    expect(error.message).toContain('`enum` value');
  });

  it('one const of 3.8 MB', async () => {
    const { status, error } = await hostile(
      'const of 3.8 MB',
      '/v1/chat/completions',
      chat(format({ type: 'object', properties: { a: { const: 'y'.repeat(3_800_000) } }, required: ['a'] })),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'schema_too_large', param: 'response_format' });
  });

  it('varied enums under the per-value limit, past the total', async () => {
    // 65 distinct values of 512 characters each: every one allowed alone, too many together.
    const values = Array.from({ length: 65 }, (_, i) => `${i}`.padEnd(DEFAULT_LIMITS.maxEnumValueChars, 'x'));
    const { status, error } = await hostile(
      'enum of 65 strings of 512 characters',
      '/v1/chat/completions',
      chat(format({ type: 'object', properties: { a: { enum: values } }, required: ['a'] })),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'schema_too_large', param: 'response_format' });
  });

  it('an object of 5,000 properties', async () => {
    const properties = Object.fromEntries(
      Array.from({ length: 5000 }, (_, j) => [`property_${j}`, { type: 'string' }]),
    );
    const { status, error } = await hostile(
      'object of 5,000 properties',
      '/v1/chat/completions',
      chat(format({ type: 'object', properties })),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'schema_too_large', param: 'response_format' });
  });

  it('a schema nested 1,000 deep', async () => {
    let schema: unknown = { type: 'string' };
    for (let i = 0; i < 1000; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
    const { status, error } = await hostile('schema nested 1,000 deep', '/v1/chat/completions', chat(format(schema)));
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'schema_too_large', param: 'response_format' });
    expect(error.message).toContain('nests deeper');
  });

  it('a schema nested 100,000 deep', async () => {
    let schema = '{"type":"string"}';
    for (let i = 0; i < 100_000; i++) schema = `{"type":"object","properties":{"a":${schema}}}`;
    // JSON.stringify of the object would overflow the stack: the body is written by hand.
    const body = `{"model":"crimson-falcon-4","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${schema}}}}`;
    const response = await lantern.handler(
      new Request('http://lantern.test/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${lantern.key}`, 'content-type': 'application/json' },
        body,
      }),
    );
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { param: string | null } };
    // JSON.parse of this depth may itself give up (invalid_json, no param); otherwise the depth limit names the schema.
    expect([null, 'response_format']).toContain(error.param);
    const normal = await post('/v1/chat/completions', otherKey, chat({ max_tokens: 2 }));
    expect(normal.status).toBe(200);
  });

  // Issue 23's inputs that crashed XGrammar's own converter (and every later structured request with it).
  const structured = async () => {
    const response = await post('/v1/chat/completions', otherKey, {
      ...chat({ max_tokens: 24 }),
      ...format({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { choices: { message: { content: string } }[] };
  };

  it('60 chained $refs: refused at once, and another key’s structured request is answered', async () => {
    const $defs: Record<string, unknown> = { d60: { type: 'string' } };
    for (let i = 0; i < 60; i++) $defs[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
    const { status, error } = await hostile(
      'schema of 60 chained $refs',
      '/v1/chat/completions',
      chat(format({ type: 'object', properties: { a: { $ref: '#/$defs/d0' } }, required: ['a'], $defs })),
    );
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'response_format' });
    expect(error.message).toContain('more than 32 `$ref`s in a row');
    expect(JSON.parse((await structured()).choices[0]!.message.content)).toHaveProperty('ok');
  });

  it('a schema nested 80 deep, in a tool: refused, naming the tool', async () => {
    let schema: unknown = { type: 'string' };
    for (let i = 0; i < 80; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
    const tool = { type: 'function', function: { name: 'deep', parameters: schema } };
    const { status, error } = await hostile('a tool nested 80 deep', '/v1/chat/completions', chat({ tools: [tool] }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ param: 'tools[0].function.parameters' });
    expect(JSON.parse((await structured()).choices[0]!.message.content)).toHaveProperty('ok');
  });

  it('the largest enum the budget allows compiles and answers', async () => {
    const { maxSchemaLiteralChars, maxEnumValueChars } = DEFAULT_LIMITS;
    const values = Array.from({ length: maxSchemaLiteralChars / maxEnumValueChars }, (_, i) =>
      `${i}`.padEnd(maxEnumValueChars, 'x'),
    );
    const { status } = await hostile(
      `enum of ${values.length} strings of ${maxEnumValueChars} characters (the most allowed), compiled`,
      '/v1/chat/completions',
      chat({ max_tokens: 4, ...format({ type: 'object', properties: { a: { enum: values } }, required: ['a'] }) }),
    );
    expect(status).toBe(200);
  }, 120_000);
});

describe('control tokens spelled in supplied text (issue 63 #8)', () => {
  /** The prompt's tokens, by `usage`, with `text` where a user, a tool or a file_search passage puts it. */
  const promptTokens = async (messages: unknown[]) => {
    const response = await post('/v1/chat/completions', lantern.key, { ...chat({ messages }), max_tokens: 1 });
    expect(response.status).toBe(200);
    return ((await response.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
  };
  const places = {
    user: (text: string) => [{ role: 'user', content: text }],
    tool: (text: string) => [
      { role: 'user', content: 'Look it up.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: text },
    ],
    system: (text: string) => [
      { role: 'system', content: text },
      { role: 'user', content: 'Hi' },
    ],
  };

  it.each(Object.keys(places) as (keyof typeof places)[])(
    'a %s message’s `<|im_end|>` is plain text: one token fewer than `<|im_endx|>` (it was seven: one control token)',
    async (place) => {
      const [control, text] = await Promise.all([
        promptTokens(places[place]('<|im_end|>')),
        promptTokens(places[place]('<|im_endx|>')),
      ]);
      expect(text - control).toBe(1);
    },
  );
});
