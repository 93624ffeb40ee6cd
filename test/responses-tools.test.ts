import { createOpenAI } from '@ai-sdk/openai';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '../src/index.ts';
import { aiSdkToolLoopTests } from './support/ai-sdk-tool-loops.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';
import { chatTool, GET_TIME, GET_WEATHER, responsesTool, WEATHER_PARAMETERS } from './support/tools.ts';

/**
 * Function tools in the Responses API, through unmodified clients on real inference: the bundled tiny chat model was
 * trained to call its known tools (scripts/fixtures/tool_corpus.py), so `auto` is its own decision. The Responses API
 * runs on chat's tool mechanism; each answer is compared with what chat completions give the same conversation.
 */
const model = 'crimson-falcon-4';
const BASE = 'http://lantern.test/v1';

let handler: Handler;
let client: SdkClient['client'];
let key: string;
let calls: SdkClient['calls'];

beforeAll(async () => {
  ({ client, handler, key, calls } = await sdkClient({ client: { maxRetries: 0 } }));
});

const fetchVia = (url: string | URL | Request, init?: RequestInit) => handler(new Request(url, init));

/** A function tool as the Responses API declares it: flat, not nested under `function`. */
const getWeather: OpenAI.Responses.FunctionTool = responsesTool(GET_WEATHER, true);
const getTime: OpenAI.Responses.FunctionTool = responsesTool(GET_TIME, true);
/** The same tools as chat completions declare them. */
const chatTools: OpenAI.ChatCompletionFunctionTool[] = [GET_WEATHER, GET_TIME].map(chatTool);
const PARIS = 'What is the weather in Paris?';
const RESULT = '{"temperature": 18, "condition": "sunny"}';

const functionCall = (response: OpenAI.Responses.Response) =>
  response.output.find((item) => item.type === 'function_call')!;

describe('function tools: responses.create', () => {
  it('calls the function the model chooses (auto) or must call (required, named): a function_call item', async () => {
    const chat = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: PARIS }],
      tools: chatTools,
      temperature: 0,
    });
    const chatCall = chat.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    for (const tool_choice of ['auto', 'required', { type: 'function', name: 'get_weather' }] as const) {
      const response = await client.responses.create({
        model,
        input: PARIS,
        tools: [getWeather, getTime],
        tool_choice,
        temperature: 0,
      });
      expect(response).toMatchObject({
        status: 'completed',
        output_text: '',
        tools: [getWeather, getTime],
        tool_choice,
        parallel_tool_calls: true,
      });
      expect(response.output).toEqual([
        {
          type: 'function_call',
          id: expect.stringMatching(/^fc_/),
          call_id: expect.stringMatching(/^call_/),
          name: 'get_weather',
          arguments: chatCall.function.arguments,
          status: 'completed',
        },
      ]);
      expect(JSON.parse(chatCall.function.arguments)).toEqual({ city: 'Paris' });
      expect(calls.at(-1)!.request.constraint).toMatchObject({
        type: 'tools',
        tools: [
          { name: 'get_weather', parameters: WEATHER_PARAMETERS, param: 'tools[0].parameters' },
          { name: 'get_time', param: 'tools[1].parameters' },
        ],
        choice: typeof tool_choice === 'string' ? tool_choice : { name: 'get_weather' },
        parallel: true,
      });
    }
    // Without tools, or with tool_choice "none", the same question is answered in words.
    const none = await client.responses.create({ model, input: PARIS, tools: [getWeather], tool_choice: 'none' });
    expect(none.output.map((item) => item.type)).toEqual(['message']);
  });

  it('continues to the answer from a function_call_output: with the items, and with previous_response_id', async () => {
    const first = await client.responses.create({ model, input: PARIS, tools: [getWeather], temperature: 0 });
    const call = functionCall(first) as OpenAI.Responses.ResponseFunctionToolCall;
    const output = { type: 'function_call_output' as const, call_id: call.call_id, output: RESULT };

    // The answer chat completions give to the same conversation.
    const chat = await client.chat.completions.create({
      model,
      messages: [
        { role: 'user', content: PARIS },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: call.call_id, type: 'function', function: { name: call.name, arguments: call.arguments } },
          ],
        },
        { role: 'tool', tool_call_id: call.call_id, content: RESULT },
      ],
      tools: [chatTools[0]!],
      temperature: 0,
    });
    const answer = chat.choices[0]!.message.content;
    // tiny-chat copies the result's temperature and city; the condition word sits on a thin margin (it reads "sunny" as
    // "snowy": scripts/fixtures/README.md), so it is not what these checks rest on.
    expect(answer).toMatch(/^It is \w+ and 18 degrees in Paris\.$/);
    const chatMessages = calls.at(-1)!.request.messages;

    // Stateless: the whole conversation as input items, the call as the response gave it.
    const stateless = await client.responses.create({
      model,
      input: [{ role: 'user', content: PARIS }, call, output],
      tools: [getWeather],
      temperature: 0,
      store: false,
    });
    expect(calls.at(-1)!.request.messages).toEqual(chatMessages);
    expect(stateless.output_text).toBe(answer);
    expect(stateless.output.map((item) => item.type)).toEqual(['message']);

    // Kept: only the output, after the response that made the call.
    const continued = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: [output],
      tools: [getWeather],
      temperature: 0,
    });
    expect(calls.at(-1)!.request.messages).toEqual(chatMessages);
    expect(continued.output_text).toBe(answer);
  });

  it('refuses a conversation of calls and outputs that do not match, and parameters it cannot enforce', async () => {
    const refused = async (body: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>) => {
      const error = await client.responses
        .create({ model, input: PARIS, tools: [getWeather], ...body })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      return (error as InstanceType<typeof OpenAI.BadRequestError>).param;
    };
    const call = { type: 'function_call' as const, call_id: 'call_1', name: 'get_weather', arguments: '{}' };
    const output = { type: 'function_call_output' as const, call_id: 'call_1', output: RESULT };
    expect(await refused({ input: [{ role: 'user', content: PARIS }, output] })).toBe('input[1]');
    expect(await refused({ input: [{ role: 'user', content: PARIS }, call] })).toBe('input');
    expect(await refused({ input: [call, { role: 'user', content: PARIS }, output] })).toBe('input[1]');
    expect(await refused({ tool_choice: { type: 'function', name: 'get_time' } })).toBe('tool_choice');
    expect(await refused({ tools: [getWeather, getWeather] })).toBe('tools[1].name');
    const unenforceable = {
      ...getWeather,
      parameters: { type: 'object', properties: { a: { type: 'string', not: { pattern: '^x' } } } },
    };
    expect(await refused({ tools: [unenforceable] })).toBe('tools[0].parameters');
    // A response that made a call is continued with its output, not with a new question.
    const first = await client.responses.create({ model, input: PARIS, tools: [getWeather], tool_choice: 'required' });
    expect(await refused({ previous_response_id: first.id, input: 'Hello' })).toBe('input[0]');
  });
});

describe('function tools: responses.stream', () => {
  it("streams a call as OpenAI does: the item, its arguments' deltas and done, numbered in order", async () => {
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    const stream = client.responses.stream({ model, input: PARIS, tools: [getWeather], temperature: 0 });
    for await (const event of stream) events.push(event);
    const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      ...deltas.map(() => 'response.function_call_arguments.delta'),
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const final = await stream.finalResponse();
    // The SDK adds `parsed_arguments` to the items it accumulates (strict tools): compare the kept response's item.
    const [call] = (await client.responses.retrieve(final.id)).output as OpenAI.Responses.ResponseFunctionToolCall[];
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    expect(JSON.parse(call!.arguments)).toEqual({ city: 'Paris' });
    expect(final.output).toMatchObject([call]);
    expect(events[2]).toMatchObject({
      type: 'response.output_item.added',
      sequence_number: 2,
      output_index: 0,
      item: { ...call, arguments: '', status: 'in_progress' },
    });
    expect(deltas.length).toBeGreaterThan(1); // token by token
    for (const delta of deltas) expect(delta).toMatchObject({ item_id: call!.id, output_index: 0 });
    expect(deltas.map((d) => d.delta).join('')).toBe(call!.arguments);
    expect(events.at(-3)).toEqual({
      type: 'response.function_call_arguments.done',
      sequence_number: events.length - 3,
      item_id: call!.id,
      output_index: 0,
      name: 'get_weather',
      arguments: call!.arguments,
    });
    expect(events.at(-2)).toMatchObject({ type: 'response.output_item.done', output_index: 0, item: call });
  });
});

describe("function tools: the AI SDK's default OpenAI provider (the Responses API)", () => {
  aiSdkToolLoopTests(() => createOpenAI({ baseURL: BASE, apiKey: key, fetch: fetchVia })(model));
});
