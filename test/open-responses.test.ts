import { Validator, type Schema } from '@cfworker/json-schema';
import { Agent, Runner } from '@openai/agents-core';
import { OpenAIProvider, OpenAIResponsesCompactionSession } from '@openai/agents-openai';
import { createParser } from 'eventsource-parser';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '../src/index.ts';
import { openaiClient, sdkClient, type SdkClient } from './support/lantern.ts';
import { sdkRefusal } from './support/api-error.ts';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/**
 * What the Open Responses specification and its compliance suite ask of every response object, checked on real
 * inference (the bundled tiny chat model, which reads images too): the suite's scenarios, sent all at once as it sends
 * them, each answer and every streamed event's `response` held to the fields its `ResponseResource` requires, with
 * their types. And the two routes beside `POST /v1/responses` that the Agents SDK's compaction session and openai-node
 * call: `/v1/responses/compact` and `/v1/responses/input_tokens`.
 */
const model = 'crimson-falcon-4';
const BASE = 'http://lantern.test/v1';

const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });
const integer: Schema = { type: 'integer' };
const number: Schema = { type: 'number' };
const string: Schema = { type: 'string' };

/** The response object's required fields and their types, as Open Responses' `ResponseResource` states them. */
const RESPONSE_RESOURCE: Schema = {
  type: 'object',
  required: [
    ...['id', 'object', 'created_at', 'completed_at', 'status', 'incomplete_details', 'model', 'previous_response_id'],
    ...['instructions', 'output', 'error', 'tools', 'tool_choice', 'truncation', 'parallel_tool_calls', 'text'],
    ...['top_p', 'presence_penalty', 'frequency_penalty', 'top_logprobs', 'temperature', 'reasoning', 'user'],
    ...['usage', 'max_output_tokens', 'max_tool_calls', 'store', 'background', 'service_tier', 'metadata'],
    ...['safety_identifier', 'prompt_cache_key'],
  ],
  properties: {
    id: string,
    object: { const: 'response' },
    created_at: integer,
    completed_at: nullable(integer),
    status: string,
    model: string,
    previous_response_id: nullable(string),
    instructions: nullable(string),
    output: { type: 'array' },
    tools: { type: 'array' },
    truncation: { enum: ['auto', 'disabled'] },
    parallel_tool_calls: { type: 'boolean' },
    text: { type: 'object', required: ['format'] },
    top_p: number,
    presence_penalty: number,
    frequency_penalty: number,
    top_logprobs: integer,
    temperature: number,
    reasoning: nullable({ type: 'object' }),
    user: nullable(string),
    usage: nullable({
      type: 'object',
      required: ['input_tokens', 'output_tokens', 'total_tokens', 'input_tokens_details', 'output_tokens_details'],
    }),
    max_output_tokens: nullable(integer),
    max_tool_calls: nullable(integer),
    store: { type: 'boolean' },
    background: { type: 'boolean' },
    service_tier: string,
    metadata: { type: 'object' },
    safety_identifier: nullable(string),
    prompt_cache_key: nullable(string),
  },
};
const resource = new Validator(RESPONSE_RESOURCE, '2020-12', false);
const problems = (value: unknown): string[] =>
  resource.validate(value).errors.map((error) => `${error.instanceLocation}: ${error.error}`);

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Get the current weather for a location',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' } },
    required: ['location'],
  },
};
/** A 2 × 2 PNG, red. */
const RED_PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg==';

/** The compliance suite's scenarios, in its words' spirit: what each sends, and whether it streams. */
const SCENARIOS: { name: string; stream: boolean; body: Record<string, unknown>; calls?: boolean }[] = [
  { name: 'basic', stream: false, body: { input: [{ type: 'message', role: 'user', content: 'Say hello.' }] } },
  { name: 'streaming', stream: true, body: { input: [{ type: 'message', role: 'user', content: 'Count to 5.' }] } },
  {
    name: 'system prompt',
    stream: false,
    body: {
      input: [
        { type: 'message', role: 'system', content: 'You are a pirate.' },
        { type: 'message', role: 'user', content: 'Say hello.' },
      ],
    },
  },
  {
    name: 'tool calling',
    stream: false,
    calls: true,
    body: { input: 'What is the weather like in Paris?', tools: [weather], tool_choice: 'required' },
  },
  {
    name: 'tool calling, streamed',
    stream: true,
    calls: true,
    body: { input: 'What is the weather like in Paris?', tools: [weather], tool_choice: 'required' },
  },
  {
    name: 'image input',
    stream: false,
    body: {
      input: [
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'What do you see?' },
            { type: 'input_image', image_url: RED_PNG },
          ],
        },
      ],
    },
  },
  {
    name: 'multi-turn',
    stream: false,
    body: {
      input: [
        { type: 'message', role: 'user', content: 'My name is Alice.' },
        { type: 'message', role: 'assistant', content: 'Hello Alice!' },
        { type: 'message', role: 'user', content: 'What is my name?' },
      ],
    },
  },
];

let handler: Handler;
let client: SdkClient['client'];
let other: SdkClient['client'];
let key: string;

beforeAll(async () => {
  // The suite sends its scenarios at once: more than the default 4 per key (a local operator raises it; see below).
  const lantern = await sdkClient({
    handler: { onServerError: () => {}, rateLimits: { concurrentGenerations: 16 } },
    client: { maxRetries: 0 },
  });
  ({ client, handler, key } = lantern);
  other = openaiClient(handler, (await lantern.keys.issue('another app')).key, { maxRetries: 0 });
});

const post = (path: string, body: unknown, apiKey = key) =>
  handler(
    new Request(`${BASE}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );

/** A stream's events, parsed. */
async function events(response: Response): Promise<Record<string, unknown>[]> {
  const parsed: Record<string, unknown>[] = [];
  const parser = createParser({ onEvent: (event) => parsed.push(JSON.parse(event.data) as Record<string, unknown>) });
  const decoder = new TextDecoder();
  for await (const chunk of response.body!) parser.feed(decoder.decode(chunk, { stream: true }));
  return parsed;
}

/**
 * Sends the suite's scenarios at once, as the suite does, through `send` (a POST of a JSON body to a path under the
 * API's base), and holds every answer and streamed event to the response object's required fields.
 */
async function checkScenarios(send: (path: string, body: unknown) => Promise<Response>) {
  const answers = await Promise.all(
    SCENARIOS.map(async ({ name, stream, body }) => {
      const response = await send('/responses', { model, max_output_tokens: 24, ...body, stream });
      expect(response.status, `${name}: ${response.status === 200 ? '' : await response.clone().text()}`).toBe(200);
      if (!stream) return { name, final: (await response.json()) as Record<string, unknown>, streamed: [] };
      const streamed = await events(response);
      return { name, final: streamed.at(-1)!.response as Record<string, unknown>, streamed };
    }),
  );
  for (const { name, final, streamed } of answers) {
    expect(problems(final), name).toEqual([]);
    expect(final.status, name).toMatch(/^(completed|incomplete)$/);
    expect((final.output as unknown[]).length, name).toBeGreaterThan(0);
    expect(final).toMatchObject({
      presence_penalty: 0,
      frequency_penalty: 0,
      max_tool_calls: null,
      safety_identifier: null,
      prompt_cache_key: null,
      user: null,
    });
    for (const event of streamed) {
      expect(typeof event.sequence_number, `${name}: ${String(event.type)}`).toBe('number');
      if ('response' in event) expect(problems(event.response), `${name}: ${String(event.type)}`).toEqual([]);
    }
    const scenario = SCENARIOS.find((s) => s.name === name)!;
    if (scenario.calls) {
      expect(
        (final.output as { type: string }[]).some((item) => item.type === 'function_call'),
        name,
      ).toBe(true);
    }
    if (scenario.calls && scenario.stream) {
      const types = streamed.map((event) => event.type);
      expect(types).toEqual(
        expect.arrayContaining([
          'response.output_item.added',
          'response.function_call_arguments.delta',
          'response.function_call_arguments.done',
          'response.output_item.done',
        ]),
      );
    }
  }
}

describe('Open Responses: the response object', () => {
  it("answers the suite's scenarios, sent at once, with every required field in bodies and in every event", async () => {
    await checkScenarios((path, body) => post(path, body));
  });

  it('echoes the penalties, the tool-call limit, the safety identifier and the cache key it was given', async () => {
    const body = {
      model,
      input: 'Count to 10.',
      max_output_tokens: 8,
      presence_penalty: 0.5,
      frequency_penalty: -0.25,
      max_tool_calls: 3,
      safety_identifier: 'user-1234',
      prompt_cache_key: 'counting',
    };
    const echoed = {
      presence_penalty: 0.5,
      frequency_penalty: -0.25,
      max_tool_calls: 3,
      safety_identifier: 'user-1234',
      prompt_cache_key: 'counting',
    };
    const response = await client.responses.create(body);
    expect(response).toMatchObject(echoed);
    expect(problems(response)).toEqual([]);
    const streamed = await events(await post('/responses', { ...body, stream: true }));
    for (const event of streamed.filter((e) => 'response' in e)) expect(event.response).toMatchObject(echoed);
    // The penalties reach the sampler: a penalised greedy reply differs from the plain one.
    const plain = await client.responses.create({
      model,
      input: 'Count to 10.',
      temperature: 0,
      max_output_tokens: 24,
    });
    // Not in openai-node's request type (Open Responses has it; OpenAI's API echoes it): sent as the body says.
    const penalisedBody = { model, input: 'Count to 10.', temperature: 0, max_output_tokens: 24, frequency_penalty: 2 };
    const penalised = await client.responses.create(penalisedBody);
    expect(penalised.output_text).not.toBe(plain.output_text);
  });

  it('refuses a safety identifier over 64 characters, and a negative tool-call limit', async () => {
    const long = await sdkRefusal(client.responses.create({ model, input: 'Hi', safety_identifier: 'x'.repeat(65) }));
    expect(long).toMatchObject({ status: 400, param: 'safety_identifier' });
    const negative = await sdkRefusal(client.responses.create({ model, input: 'Hi', max_tool_calls: -1 } as never));
    expect(negative).toMatchObject({ status: 400, param: 'max_tool_calls' });
  });

  it('says which limit refused a request, and how its operator raises it', async () => {
    const strict = await sdkClient({
      handler: { onServerError: () => {}, rateLimits: { concurrentGenerations: 1 } },
      client: { maxRetries: 0 },
    });
    const first = strict.client.responses.create({ model, input: 'Count to 10.', max_output_tokens: 16 });
    const refused = await sdkRefusal(strict.client.responses.create({ model, input: 'Hi', max_output_tokens: 4 }));
    await first;
    expect(refused.status).toBe(429);
    expect(refused.message).toMatch(/the limit is 1 generations or embeddings at once/);
    expect(refused.message).toMatch(/rateLimits\.concurrentGenerations.*LANTERN_CONCURRENT_GENERATIONS/);
  });
});

describe('POST /v1/responses/input_tokens', () => {
  it('counts what the same request reports as its input tokens: plain, with instructions and tools, continued', async () => {
    const plain = { model, input: 'Count to 10.' };
    const tooled = {
      model,
      instructions: 'Answer briefly.',
      input: 'What is the weather like in Paris?',
      tools: [weather],
    };
    for (const body of [plain, tooled]) {
      const counted = await client.responses.inputTokens.count(body as never);
      const answered = await client.responses.create({ ...body, max_output_tokens: 4 } as never);
      expect(counted).toEqual({ object: 'response.input_tokens', input_tokens: answered.usage!.input_tokens });
    }
    const first = await client.responses.create({ model, input: 'My name is Alice.', max_output_tokens: 8 });
    const next = { model, previous_response_id: first.id, input: 'What is my name?' };
    const counted = await client.responses.inputTokens.count(next);
    const answered = await client.responses.create({ ...next, max_output_tokens: 4 });
    expect(counted.input_tokens).toBe(answered.usage!.input_tokens);
    // Without input, the stored conversation alone is counted.
    const alone = await client.responses.inputTokens.count({ model, previous_response_id: first.id });
    expect(alone.input_tokens).toBeGreaterThan(0);
    expect(alone.input_tokens).toBeLessThan(counted.input_tokens);
  });

  it('refuses a body without a model, and another key sees none of this key’s responses', async () => {
    const noModel = await sdkRefusal(client.responses.inputTokens.count({ input: 'Hi' }));
    expect(noModel).toMatchObject({ status: 400, param: 'model' });
    const first = await client.responses.create({ model, input: 'Hi', max_output_tokens: 4 });
    const foreign = await sdkRefusal(other.responses.inputTokens.count({ model, previous_response_id: first.id }));
    expect(foreign).toMatchObject({ status: 400, param: 'previous_response_id' });
  });
});

describe('POST /v1/responses/compact', () => {
  it('keeps the user messages and one compaction item, which the next response reads as its context', async () => {
    const first = await client.responses.create({ model, input: 'My name is Alice.', max_output_tokens: 16 });
    const second = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: 'I live in Paris.',
      max_output_tokens: 16,
    });
    const compacted = await client.responses.compact({ model, previous_response_id: second.id });
    expect(compacted).toMatchObject({ object: 'response.compaction', id: expect.stringMatching(/^resp_/) });
    expect(compacted.usage.input_tokens).toBeGreaterThan(0);
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'message', 'compaction']);
    const [alice, paris, compaction] = compacted.output as unknown as [
      { role: string; content: { type: string; text: string }[] },
      { role: string; content: { type: string; text: string }[] },
      { id: string; encrypted_content: string },
    ];
    expect(alice).toMatchObject({ role: 'user', content: [{ type: 'input_text', text: 'My name is Alice.' }] });
    expect(paris).toMatchObject({ role: 'user', content: [{ type: 'input_text', text: 'I live in Paris.' }] });
    expect(compaction.id).toMatch(/^cmp_/);

    // The next turn, as the Agents SDK's compaction session sends it: the compacted items, then the new message.
    const input = [...compacted.output, { role: 'user', content: 'What is my name?' }];
    const next = await client.responses.create({ model, input: input as never, max_output_tokens: 8 });
    expect(next.status).toMatch(/^(completed|incomplete)$/);
    // It is read as the summary it carries: the prompt is the summary's, not the replies' it replaced.
    const counted = await client.responses.inputTokens.count({ model, input: input as never });
    expect(counted.input_tokens).toBe(next.usage!.input_tokens);

    // A compaction of a compacted conversation keeps one compaction item.
    const again = await client.responses.compact({ model, input: input as never });
    expect(again.output.map((item) => item.type)).toEqual(['message', 'message', 'message', 'compaction']);
  });

  it("refuses a body without a model, a compaction item it did not make, and another key's response", async () => {
    const noModel = await sdkRefusal(client.responses.compact({ input: 'Hi' } as never));
    expect(noModel).toMatchObject({ status: 400, param: 'model' });
    const forged = await sdkRefusal(
      client.responses.create({
        model,
        input: [
          { type: 'compaction', encrypted_content: 'gAAAAABnot-ours' },
          { role: 'user', content: 'Hi' },
        ] as never,
      }),
    );
    expect(forged).toMatchObject({ status: 400, param: 'input[0].encrypted_content' });
    const mine = await client.responses.create({ model, input: 'Hi', max_output_tokens: 4 });
    const foreign = await sdkRefusal(other.responses.compact({ model, previous_response_id: mine.id }));
    expect(foreign).toMatchObject({ status: 400, param: 'previous_response_id' });
  });
});

/**
 * The OpenAI Agents SDK's `OpenAIResponsesCompactionSession` (its default: compact after every turn the hook allows),
 * here told to compact after each turn: it calls `responses.compact` with the last response's id, replaces the
 * session's items with the compacted ones, and sends them as the next turn's input.
 */
describe('OpenAI Agents SDK: OpenAIResponsesCompactionSession', () => {
  it('compacts after each turn, and the next turn runs on the compacted items', async () => {
    const compacts: number[] = [];
    const responses: number[] = [];
    const recording = openaiClient(handler, key, {
      maxRetries: 0,
      fetch: async (url, init) => {
        const response = await handler(new Request(url, init));
        if (String(url).endsWith('/responses/compact')) compacts.push(response.status);
        else if (String(url).endsWith('/responses')) responses.push(response.status);
        return response;
      },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: recording, useResponses: true }),
      tracingDisabled: true,
    });
    const session = new OpenAIResponsesCompactionSession({
      client: recording,
      model: 'gpt-4o-mini',
      shouldTriggerCompaction: () => true,
    });
    const agent = new Agent({
      name: 'assistant',
      instructions: 'Answer briefly.',
      model: 'gpt-4o-mini',
      modelSettings: { temperature: 0, maxTokens: 16 },
    });
    for (const question of ['My name is Alice.', 'I live in Paris.', 'What is my name?']) {
      const result = await runner.run(agent, question, { session });
      expect(typeof result.finalOutput).toBe('string');
    }
    expect(responses).toEqual([200, 200, 200]);
    expect(compacts).toEqual([200, 200, 200]);
    const items = (await session.getItems()) as { type: string; role?: string }[];
    // The user's three messages, and one compaction item for everything else.
    expect(items.filter((item) => item.type === 'compaction')).toHaveLength(1);
    expect(items.filter((item) => item.role === 'user')).toHaveLength(3);
  });
});

/**
 * The same against `npm run serve:node`, over HTTP, as the compliance suite runs: its per-key limit raised from the
 * environment so that the scenarios, sent at once, all run (the default 4 at once would refuse three with a 429 that
 * names LANTERN_CONCURRENT_GENERATIONS); and a limit that is not a number stops the server before it serves.
 */
describe('npm run serve:node', () => {
  let served: ServedNode;
  beforeAll(async () => {
    served = await serveNode({ LANTERN_CONCURRENT_GENERATIONS: '32', LANTERN_MAX_GENERATIONS: '64' });
  }, 120_000);
  afterAll(async () => {
    await served?.close();
  });

  it("answers the suite's scenarios sent at once, compaction and counts, over HTTP", async () => {
    const send = (path: string, body: unknown) =>
      fetch(`${served.baseURL}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${served.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    await checkScenarios(send);
    const remote = new OpenAI({ apiKey: served.key, baseURL: served.baseURL, maxRetries: 0 });
    const first = await remote.responses.create({ model, input: 'My name is Alice.', max_output_tokens: 8 });
    const compacted = await remote.responses.compact({ model, previous_response_id: first.id });
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'compaction']);
    const counted = await remote.responses.inputTokens.count({ model, input: 'Count to 10.' });
    const answered = await remote.responses.create({ model, input: 'Count to 10.', max_output_tokens: 2 });
    expect(counted.input_tokens).toBe(answered.usage!.input_tokens);
  }, 120_000);

  it('refuses to start with a limit that is not a whole number, saying which', async () => {
    const child = spawn(process.execPath, ['node_modules/tsx/dist/cli.mjs', 'scripts/serve.ts'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, PORT: '0', LANTERN_CONCURRENT_GENERATIONS: 'many' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let said = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (said += text));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(said).toContain('LANTERN_CONCURRENT_GENERATIONS must be a whole number of at least 1, not "many"');
  }, 60_000);
});
