import { readFileSync } from 'node:fs';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { HumanMessage, type AIMessage, type BaseMessage } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import type OpenAI from 'openai';
import { zodFunction } from 'openai/helpers/zod';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { Handler } from '../src/index.ts';
import { aiSdkToolLoopTests } from './support/ai-sdk-tool-loops.ts';
import { BUNDLED_MODELS, sdkClient, type SdkClient } from './support/lantern.ts';
import { chatTool, GET_TIME, GET_WEATHER } from './support/tools.ts';

/**
 * Tool calling through the official openai SDK on the bundled tiny chat model, with real inference: it was trained to
 * decide (scripts/fixtures/tool_corpus.py), so `auto` is tested on real decisions, through its own chat template.
 */
const model = 'crimson-falcon-4';
const BASE = 'http://lantern.test/v1';
let handler: Handler;
let key: string;
let client: SdkClient['client'];
const fetchVia = (url: string | URL | Request, init?: RequestInit) => handler(new Request(url, init));

/** Tool prompts and tiny-chat's greedy replies to them, computed in PyTorch by scripts/fixtures/generate.py. */
interface ToolReference {
  messages: OpenAI.ChatCompletionMessageParam[];
  tools: OpenAI.ChatCompletionFunctionTool[] | null;
  input_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
}
const toolRefs: ToolReference[] = JSON.parse(
  readFileSync(`${BUNDLED_MODELS}/tiny-chat/tool-reference.json`, 'utf8'),
) as ToolReference[];

/** A reply as the model wrote it: its text, then each call as its chat template writes calls. */
function asWritten(message: OpenAI.ChatCompletionMessage): string {
  const calls = (message.tool_calls ?? []).map((c) => {
    const fn = (c as OpenAI.ChatCompletionMessageFunctionToolCall).function;
    return `<tool_call>\n{"name": "${fn.name}", "arguments": ${fn.arguments}}\n</tool_call>`;
  });
  return [message.content ?? '', ...calls].filter(Boolean).join('\n');
}

beforeAll(async () => {
  ({ client, handler, key } = await sdkClient());
});

const getWeather: OpenAI.ChatCompletionFunctionTool = chatTool(GET_WEATHER);
const getTime: OpenAI.ChatCompletionFunctionTool = chatTool(GET_TIME);
const ask = (content: string) => ({ role: 'user' as const, content });

/** Every call names a declared tool and its arguments parse as an object with the expected city. */
function expectCalls(message: OpenAI.ChatCompletionMessage, expected: [string, Record<string, unknown>][]) {
  const calls = (message.tool_calls ?? []).map((c) => {
    expect(c.type).toBe('function');
    expect(c.id).toMatch(/^call_/);
    const fn = (c as OpenAI.ChatCompletionMessageFunctionToolCall).function;
    return [fn.name, JSON.parse(fn.arguments) as Record<string, unknown>];
  });
  expect(calls).toEqual(expected);
}

describe('tool calling on tiny-chat (auto: the model decides)', () => {
  it('calls get_weather for a weather question: content null, finish_reason "tool_calls"', async () => {
    const completion = await client.chat.completions.create({
      model,
      messages: [ask('What is the weather in Paris?')],
      tools: [getWeather, getTime],
      temperature: 0,
    });
    const [choice] = completion.choices;
    expect(choice!.finish_reason).toBe('tool_calls');
    expect(choice!.message.content).toBeNull();
    expectCalls(choice!.message, [['get_weather', { city: 'Paris' }]]);
  });

  it('answers a question that needs no tool exactly as it does without tools', async () => {
    const completion = await client.chat.completions.create({
      model,
      messages: [ask('Hello')],
      tools: [getWeather],
      temperature: 0,
    });
    expect(completion.choices[0]!.message.content).toBe('Hello! How can I help you today?');
    expect(completion.choices[0]!.message.tool_calls).toBeUndefined();
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('answers with the tool result it is given, then calls again on the next question (a multi-turn loop)', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [ask('What is the weather in Tokyo?')];
    const tools = [getWeather, getTime];
    const first = await client.chat.completions.create({ model, messages, tools, temperature: 0 });
    expectCalls(first.choices[0]!.message, [['get_weather', { city: 'Tokyo' }]]);
    messages.push(first.choices[0]!.message, {
      role: 'tool',
      tool_call_id: first.choices[0]!.message.tool_calls![0]!.id,
      content: JSON.stringify({ temperature: 25, condition: 'cloudy' }),
    });
    const answer = await client.chat.completions.create({ model, messages, tools, temperature: 0 });
    expect(answer.choices[0]!.message.content).toBe('It is cloudy and 25 degrees in Tokyo.');
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    messages.push(answer.choices[0]!.message, ask('What time is it in Oslo?'));
    const next = await client.chat.completions.create({ model, messages, tools, temperature: 0 });
    expectCalls(next.choices[0]!.message, [['get_time', { city: 'Oslo' }]]);
  });

  it('calls in parallel for two cities, and once with parallel_tool_calls false', async () => {
    const messages = [ask('What is the weather in Paris and Tokyo?')];
    const both = await client.chat.completions.create({ model, messages, tools: [getWeather], temperature: 0 });
    expectCalls(both.choices[0]!.message, [
      ['get_weather', { city: 'Paris' }],
      ['get_weather', { city: 'Tokyo' }],
    ]);
    const one = await client.chat.completions.create({
      model,
      messages,
      tools: [getWeather],
      parallel_tool_calls: false,
      temperature: 0,
    });
    expectCalls(one.choices[0]!.message, [['get_weather', { city: 'Paris' }]]);
    expect(one.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('says it has no tool when the one it needs is not declared, and never calls with tool_choice "none"', async () => {
    const without = await client.chat.completions.create({
      model,
      messages: [ask('Add 2 and 3.')],
      tools: [getWeather],
      temperature: 0,
    });
    expect(without.choices[0]!.message).toMatchObject({ content: 'I do not have a tool for that.' });
    expect(without.choices[0]!.message.tool_calls).toBeUndefined();
    const none = await client.chat.completions.create({
      model,
      messages: [ask('What is the weather in Paris?')],
      tools: [getWeather],
      tool_choice: 'none',
      temperature: 0,
    });
    expect(none.choices[0]!.message.tool_calls).toBeUndefined();
    expect(none.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('the PyTorch reference', () => {
  it.each(toolRefs.map((r) => [JSON.stringify(r.messages.at(-1)!.content), r] as const))(
    'renders the prompt as PyTorch did and replies to %s as it did',
    async (_last, ref) => {
      const completion = await client.chat.completions.create({
        model,
        messages: ref.messages,
        ...(ref.tools && { tools: ref.tools }),
        temperature: 0,
      });
      // The same prompt tokens: transformers.js renders the template (tools, calls, results) as Python did.
      expect(completion.usage!.prompt_tokens).toBe(ref.input_ids.length);
      expect(completion.usage!.completion_tokens).toBe(ref.greedy_ids.length);
      expect(asWritten(completion.choices[0]!.message)).toBe(ref.greedy_text);
    },
  );
});

describe('clients, unmodified', () => {
  it("runs the openai SDK's runTools with zod-defined functions to a final answer", async () => {
    const called: unknown[] = [];
    const runner = client.chat.completions.runTools({
      model,
      messages: [ask('What is the weather in Berlin?')],
      temperature: 0,
      tools: [
        zodFunction({
          name: 'get_weather',
          description: 'Get the current weather in a city.',
          parameters: z.object({ city: z.string() }),
          function: async (args) => {
            called.push(args);
            return { temperature: 12, condition: 'rainy' };
          },
        }),
      ],
    });
    const final = await runner.finalContent();
    expect(called).toEqual([{ city: 'Berlin' }]);
    expect(final).toBe('It is rainy and 12 degrees in Berlin.');
  });

  it('streams a call as OpenAI does, chunk by chunk', async () => {
    const stream = await client.chat.completions.create({
      model,
      messages: [ask('What is the weather in Paris?')],
      tools: [getWeather],
      temperature: 0,
      stream: true,
    });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const deltas = chunks.map((c) => c.choices[0]!);
    // First: role, content null, and the call's id, type, name and empty arguments, all in one delta.
    expect(deltas[0]).toEqual({
      index: 0,
      delta: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            index: 0,
            id: expect.stringMatching(/^call_/),
            type: 'function',
            function: { name: 'get_weather', arguments: '' },
          },
        ],
      },
      logprobs: null,
      finish_reason: null,
    });
    // Then argument fragments only, then the finish.
    const fragments = deltas.slice(1, -1);
    expect(fragments.length).toBeGreaterThan(1);
    for (const d of fragments) {
      expect(d).toEqual({
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: expect.any(String) } }] },
        logprobs: null,
        finish_reason: null,
      });
    }
    const args = fragments.map((d) => d.delta.tool_calls![0]!.function!.arguments).join('');
    expect(JSON.parse(args)).toEqual({ city: 'Paris' });
    expect(deltas.at(-1)).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
  });

  const weatherInput = z.object({ city: z.string().describe('The city.') });
  aiSdkToolLoopTests(
    () => createOpenAICompatible({ name: 'lantern', baseURL: BASE, apiKey: key, fetch: fetchVia })(model),
    (what) => `the AI SDK's ${what}`,
  );

  it("LangChain's bindTools calls the tool; given its result, the model answers", async () => {
    const chat = new ChatOpenAI({
      model,
      temperature: 0,
      apiKey: key,
      configuration: { baseURL: BASE, fetch: fetchVia },
    });
    const getWeather = langchainTool(async () => JSON.stringify({ temperature: 8, condition: 'snowy' }), {
      name: 'get_weather',
      description: 'Get the current weather in a city.',
      schema: weatherInput,
    });
    const bound = chat.bindTools([getWeather]);
    const messages: BaseMessage[] = [new HumanMessage('What is the weather in Oslo?')];
    const call = await bound.invoke(messages);
    expect(call.tool_calls).toMatchObject([{ name: 'get_weather', args: { city: 'Oslo' } }]);
    messages.push(call as AIMessage);
    // Invoked with the call itself, a LangChain tool answers with its ToolMessage.
    for (const toolCall of call.tool_calls ?? []) messages.push(await getWeather.invoke(toolCall));
    const answer = await bound.invoke(messages);
    expect(answer.content).toBe('It is snowy and 8 degrees in Oslo.');
  });

  it("LangChain's withStructuredOutput through function calling returns the arguments, parsed", async () => {
    const chat = new ChatOpenAI({
      model,
      temperature: 0,
      apiKey: key,
      configuration: { baseURL: BASE, fetch: fetchVia },
    });
    const structured = chat.withStructuredOutput(weatherInput, { method: 'functionCalling', name: 'get_weather' });
    expect(await structured.invoke('What is the weather in Lisbon?')).toEqual({ city: 'Lisbon' });
  });
});
