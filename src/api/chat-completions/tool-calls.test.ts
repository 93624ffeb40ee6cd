import OpenAI from 'openai';
import { beforeEach, describe, expect, it } from 'vitest';
import { FakeEngine } from '../../../test/support/fake-engine.ts';
import type { ChatEvent, ChatRequest, ChatResult } from '../../engine-interface/index.ts';
import { KeyRing } from '../../keys/index.ts';
import { createHandler, type Handler } from '../create-handler.ts';
import type { ChatCompletion, ChatCompletionChunk } from '../wire.ts';

/**
 * Tool calls on the wire, from engine events to OpenAI's shapes: the completion's message and the chunk sequence,
 * field by field, and the openai SDK's stream helper accumulating them unmodified.
 */
let engine: FakeEngine;
let handler: Handler;
let key: string;

const tools = [
  {
    type: 'function' as const,
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
];

/** Each choice: `text` (optional), then the calls, each streamed as its start and two argument fragments. */
function calling(reply: { text?: string; calls: { name: string; arguments: string }[] }) {
  return async (request: ChatRequest, options: { onEvent?: (e: ChatEvent) => void }): Promise<ChatResult> => {
    for (let choice = 0; choice < request.n; choice++) {
      if (reply.text) options.onEvent?.({ type: 'delta', choice, text: reply.text });
      reply.calls.forEach((call, index) => {
        options.onEvent?.({ type: 'tool_call', choice, index, name: call.name });
        const half = Math.floor(call.arguments.length / 2);
        options.onEvent?.({ type: 'tool_arguments', choice, index, text: call.arguments.slice(0, half) });
        options.onEvent?.({ type: 'tool_arguments', choice, index, text: call.arguments.slice(half) });
      });
      options.onEvent?.({ type: 'finish', choice, reason: 'tool_calls' });
    }
    const choice = { text: reply.text ?? '', toolCalls: reply.calls, finishReason: 'tool_calls' as const };
    return {
      choices: Array.from({ length: request.n }, () => choice),
      usage: { promptTokens: 5, completionTokens: 9 },
    };
  };
}

beforeEach(async () => {
  engine = new FakeEngine();
  const keys = new KeyRing();
  key = (await keys.issue('tools')).key;
  handler = createHandler({ engine, keys });
});

const post = (body: Record<string, unknown>) =>
  handler(
    new Request('http://lantern.test/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-model', messages: [{ role: 'user', content: 'Weather?' }], tools, ...body }),
    }),
  );

async function chunksOf(response: Response): Promise<ChatCompletionChunk[]> {
  const events = (await response.text()).split('\n\n').filter(Boolean);
  expect(events.at(-1)).toBe('data: [DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)) as ChatCompletionChunk);
}

const weather = { name: 'get_weather', arguments: '{"city": "Paris"}' };
const time = { name: 'get_time', arguments: '{}' };

describe('tool calls on the wire', () => {
  it('answers a reply that only calls tools with content null, tool_calls and finish_reason "tool_calls"', async () => {
    engine.onChat = calling({ calls: [weather, time] });
    const body = (await (await post({})).json()) as ChatCompletion;
    const [choice] = body.choices;
    expect(choice).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          { id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: 'function', function: weather },
          { id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: 'function', function: time },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    expect(choice!.message.tool_calls![0]!.id).not.toBe(choice!.message.tool_calls![1]!.id);
    expect(engine.chats[0]!.request).toMatchObject({ constraint: { type: 'tools', choice: 'auto', parallel: true } });
  });

  it('keeps text said beside the calls as content', async () => {
    engine.onChat = calling({ text: 'Let me look.', calls: [weather] });
    const body = (await (await post({})).json()) as ChatCompletion;
    expect(body.choices[0]!.message).toMatchObject({ content: 'Let me look.', tool_calls: [{ function: weather }] });
  });

  it('streams as OpenAI does: the call opens the choice with role, content null, id, type, name and empty arguments', async () => {
    engine.onChat = calling({ calls: [weather, time] });
    const chunks = await chunksOf(await post({ stream: true }));
    const deltas = chunks.map((c) => [c.choices[0]!.delta, c.choices[0]!.finish_reason]);
    const [first, second] = chunks
      .flatMap((c) => c.choices[0]!.delta.tool_calls ?? [])
      .filter((call) => call.id)
      .map((call) => call.id!);
    expect(deltas).toEqual([
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: first, type: 'function', function: { name: 'get_weather', arguments: '' } }],
        },
        null,
      ],
      [{ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: ' "Paris"}' } }] }, null],
      [
        { tool_calls: [{ index: 1, id: second, type: 'function', function: { name: 'get_time', arguments: '' } }] },
        null,
      ],
      [{ tool_calls: [{ index: 1, function: { arguments: '{' } }] }, null],
      [{ tool_calls: [{ index: 1, function: { arguments: '}' } }] }, null],
      [{}, 'tool_calls'],
    ]);
    expect(first).toMatch(/^call_/);
    expect(second).not.toBe(first);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
  });

  it('is accumulated by the openai SDK stream helper unmodified, text before the calls included', async () => {
    engine.onChat = calling({ text: 'Checking.', calls: [weather, time] });
    const client = new OpenAI({
      apiKey: key,
      baseURL: 'http://lantern.test/v1',
      fetch: (url, init) => handler(new Request(url, init)),
    });
    const stream = client.chat.completions.stream({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    });
    const done: string[] = [];
    stream.on('tool_calls.function.arguments.done', (event) => done.push(`${event.name} ${event.arguments}`));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message).toMatchObject({
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [
        { type: 'function', function: weather },
        { type: 'function', function: time },
      ],
    });
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(done).toEqual([`get_weather ${weather.arguments}`, `get_time ${time.arguments}`]);
  });

  it('opens every choice of n = 2 with its role, each calling on its own', async () => {
    engine.onChat = calling({ calls: [weather] });
    const chunks = await chunksOf(await post({ stream: true, n: 2 }));
    for (const index of [0, 1]) {
      const mine = chunks.flatMap((c) => c.choices).filter((c) => c.index === index);
      expect(mine[0]!.delta.role).toBe('assistant');
      const args = mine.flatMap((c) => c.delta.tool_calls ?? []).map((c) => c.function?.arguments ?? '');
      expect(args.join('')).toBe(weather.arguments);
      expect(mine.at(-1)!.finish_reason).toBe('tool_calls');
    }
  });
});
