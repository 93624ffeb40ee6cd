import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateText, streamText } from 'ai';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '../src/index.ts';
import { referenceValidator } from './support/grammar-walk.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * Reasoning on real inference, through unmodified clients: the bundled profile's `amber-phoenix-4` is tiny-think, a
 * fixture trained with Qwen3's template to think in `<think>…</think>` before it answers (scripts/fixtures/
 * think_corpus.py), and thinks by default (`defaultReasoningEffort: 'medium'`); `crimson-falcon-4` (tiny-chat) has no
 * thinking mode. The thought must come back apart from the answer (chat: `reasoning_content`, and `reasoning`, the name
 * the OpenAI Agents SDK, Ollama and OpenRouter use; Responses: a `reasoning` item), counted in usage, with constraints,
 * calls and stop sequences applied to the answer only.
 */
const model = 'amber-phoenix-4';
const BASE = 'http://lantern.test/v1';
const QUESTION = 'What is 3 plus 4?';
const THOUGHT = 'The user asks for 3 plus 4. 3 plus 4 is 7.';
const ANSWER = '3 plus 4 is 7.';
const WEATHER_TOOL: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

let handler: Handler;
let client: SdkClient['client'];
let key: string;

beforeAll(async () => {
  ({ client, handler, key } = await sdkClient({ client: { maxRetries: 0 } }));
});

const fetchVia = (url: string | URL | Request, init?: RequestInit) => handler(new Request(url, init));

/** What reasoning servers add to a message and a delta, which the SDK's types do not declare. */
type Thinking = { reasoning_content?: string; reasoning?: string };
type Details = { completion_tokens_details?: { reasoning_tokens?: number } };

const ask = (body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> & Record<string, unknown> = {}) =>
  client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: QUESTION }],
    temperature: 0,
    ...body,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);

describe('chat completions (openai SDK)', () => {
  it('thinks by default, and returns the thought as reasoning_content, apart from the answer, counted in usage', async () => {
    const reply = await ask();
    const message = reply.choices[0]!.message as (typeof reply.choices)[0]['message'] & Thinking;
    expect(message.reasoning_content).toBe(THOUGHT);
    // And as `reasoning`: the only name the Agents SDK's chat-completions model reads (`message.reasoning`).
    expect(message.reasoning).toBe(THOUGHT);
    expect(message.content).toBe(ANSWER);
    const usage = reply.usage as OpenAI.CompletionUsage & Details;
    const thought = usage.completion_tokens_details!.reasoning_tokens;
    expect(thought).toBeGreaterThan(5);
    expect(thought).toBeLessThan(usage.completion_tokens);
  });

  it('answers at once with reasoning_effort none (or enable_thinking false), and nothing of a thought is left', async () => {
    for (const off of [{ reasoning_effort: 'none' as const }, { chat_template_kwargs: { enable_thinking: false } }]) {
      const reply = await ask(off);
      const message = reply.choices[0]!.message as Thinking & { content: string | null };
      expect(message.content).toBe(ANSWER);
      expect(message.reasoning_content).toBeUndefined();
      expect(message.reasoning).toBeUndefined();
      expect((reply.usage as Details).completion_tokens_details?.reasoning_tokens ?? 0).toBe(0);
    }
    // Every effort above minimal thinks.
    for (const effort of ['low', 'medium', 'high'] as const) {
      const reply = await ask({ reasoning_effort: effort });
      expect((reply.choices[0]!.message as Thinking).reasoning_content).toBe(THOUGHT);
    }
  });

  it('streams the thought as reasoning_content deltas before the first content', async () => {
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: QUESTION }],
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const parts: { kind: 'thought' | 'text'; text: string }[] = [];
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as (OpenAI.ChatCompletionChunk.Choice.Delta & Thinking) | undefined;
      // Each piece under both names: the Agents SDK's stream reader takes `delta.reasoning` only.
      expect(delta?.reasoning).toBe(delta?.reasoning_content);
      if (delta?.reasoning_content) parts.push({ kind: 'thought', text: delta.reasoning_content });
      if (delta?.content) parts.push({ kind: 'text', text: delta.content });
      if (chunk.usage) usage = chunk.usage;
    }
    const firstText = parts.findIndex((p) => p.kind === 'text');
    expect(parts.slice(0, firstText).every((p) => p.kind === 'thought')).toBe(true);
    expect(parts.slice(firstText).every((p) => p.kind === 'text')).toBe(true);
    expect(
      parts
        .filter((p) => p.kind === 'thought')
        .map((p) => p.text)
        .join(''),
    ).toBe(THOUGHT);
    expect(
      parts
        .filter((p) => p.kind === 'text')
        .map((p) => p.text)
        .join(''),
    ).toBe(ANSWER);
    expect(usage!.completion_tokens_details!.reasoning_tokens).toBeGreaterThan(5);
  });

  it('applies stop sequences, log probabilities and max_tokens as OpenAI does: to the answer, max_tokens to both', async () => {
    // "plus" is in the thought too: only the answer is cut there.
    const stopped = await ask({ stop: [' plus'] });
    expect((stopped.choices[0]!.message as Thinking).reasoning_content).toBe(THOUGHT);
    expect(stopped.choices[0]!.message.content).toBe('3');
    const logprobs = await ask({ logprobs: true, top_logprobs: 2 });
    expect(logprobs.choices[0]!.logprobs!.content!.map((t) => t.token).join('')).toBe(ANSWER);
    // Cut while thinking (at `max` effort, which leaves the thought all of max_tokens): all of it is thought, no answer.
    const cut = await ask({ max_tokens: 6, reasoning_effort: 'max' });
    expect(cut.choices[0]!.finish_reason).toBe('length');
    expect(cut.choices[0]!.message.content).toBe('');
    expect(THOUGHT.startsWith((cut.choices[0]!.message as Thinking).reasoning_content!)).toBe(true);
    expect(cut.usage!.completion_tokens).toBe(6);
  });

  it('holds the answer after the thought to a JSON schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    const reply = await ask({
      messages: [{ role: 'user', content: 'Reply with JSON: a person.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema, strict: true } },
    });
    const message = reply.choices[0]!.message as Thinking & { content: string };
    expect(message.reasoning_content).toBe('The user wants JSON.');
    expect(referenceValidator()(schema, message.content)).toBeUndefined();
  });

  it('calls a tool after thinking, and answers from its result after thinking again', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await ask({ messages, tools: [WEATHER_TOOL] });
    const call = first.choices[0]!.message;
    expect((call as Thinking).reasoning_content).toBe('The user wants the weather in Paris. I will call get_weather.');
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(
      call.tool_calls!.map((c) => c.type === 'function' && [c.function.name, JSON.parse(c.function.arguments)]),
    ).toEqual([['get_weather', { city: 'Paris' }]]);
    messages.push(
      { ...call, reasoning_content: (call as Thinking).reasoning_content } as OpenAI.ChatCompletionMessageParam,
      { role: 'tool', tool_call_id: call.tool_calls![0]!.id, content: '{"temperature": 18, "condition": "sunny"}' },
    );
    const second = await ask({ messages, tools: [WEATHER_TOOL] });
    expect((second.choices[0]!.message as Thinking).reasoning_content).toBe('I have the weather in Paris.');
    expect(second.choices[0]!.message.content).toMatch(/^It is 18 degrees and \w+ in Paris\.$/);
  });

  it('ends its thought on its own and calls a forced tool it never saw (issue 48), with no thought budget', async () => {
    // LangChain's withStructuredOutput(schema, { method: 'functionCalling' }) tools, and prompts the fixture never
    // learned; effort `max` sets no budget but max_tokens, so the thought must end by itself.
    const string = { type: 'string' };
    const tools = [
      { name: 'Joke', prompt: 'Tell me a joke about penguins.', properties: { setup: string, punchline: string } },
      { name: 'Person', prompt: 'Jane is 31 and loves tennis.', properties: { name: string, age: { type: 'number' } } },
      {
        name: 'ResponseFormatter',
        prompt: 'Why is the ocean blue?',
        properties: { answer: string, followup_question: string },
      },
    ];
    for (const { name, prompt, properties } of tools) {
      const parameters = { type: 'object', properties, required: Object.keys(properties), additionalProperties: false };
      const reply = await ask({
        messages: [{ role: 'user', content: prompt }],
        tools: [{ type: 'function', function: { name, parameters } }],
        tool_choice: { type: 'function', function: { name } },
        reasoning_effort: 'max' as 'high',
        max_tokens: 256,
      });
      const choice = reply.choices[0]!;
      expect(choice.finish_reason, name).toBe('tool_calls');
      const call = choice.message.tool_calls![0]!;
      expect(call.type === 'function' && call.function.name).toBe(name);
      const args = JSON.parse(call.type === 'function' ? call.function.arguments : '{}') as Record<string, unknown>;
      expect(referenceValidator()(parameters, JSON.stringify(args)), name).toBeUndefined();
      expect((choice.message as Thinking).reasoning_content, name).toBeTruthy();
      expect((reply.usage as Details).completion_tokens_details!.reasoning_tokens, name).toBeLessThanOrEqual(24);
    }
  });

  it('thinks briefly and answers prompts it never saw', async () => {
    for (const content of ['Could you spin a tale about a brave mouse?', 'Good morning to you!', 'Tell me a joke.']) {
      const reply = await ask({
        messages: [{ role: 'user', content }],
        reasoning_effort: 'max' as 'high',
        max_tokens: 256,
      });
      const choice = reply.choices[0]!;
      expect(choice.finish_reason, content).toBe('stop');
      expect((choice.message as Thinking).reasoning_content, content).toMatch(/^\S.*\.$/);
      expect(choice.message.content, content).toMatch(/\w/);
      expect(choice.message.content, content).not.toMatch(/^[{[]/);
      expect((reply.usage as Details).completion_tokens_details!.reasoning_tokens, content).toBeLessThanOrEqual(24);
    }
  });

  it('is ignored by a model without a thinking mode', async () => {
    const reply = await ask({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Count to 10.' }],
      reasoning_effort: 'high',
    });
    expect((reply.choices[0]!.message as Thinking).reasoning_content).toBeUndefined();
    expect(reply.choices[0]!.message.content).toMatch(/1, 2, 3/);
  });
});

describe('Responses API (openai SDK)', () => {
  it('returns a reasoning item before the message, with its text, and counts its tokens', async () => {
    const response = await client.responses.create({ model, input: QUESTION, temperature: 0 });
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const reasoning = response.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.content).toEqual([{ type: 'reasoning_text', text: THOUGHT }]);
    expect(reasoning.summary).toEqual([]);
    expect(reasoning.id).toMatch(/^rs_/);
    expect(response.output_text).toBe(ANSWER);
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(5);
    const off = await client.responses.create({
      model,
      input: QUESTION,
      temperature: 0,
      reasoning: { effort: 'none' },
    });
    expect(off.output.map((item) => item.type)).toEqual(['message']);
    expect(off.usage!.output_tokens_details.reasoning_tokens).toBe(0);
  });

  it('streams the reasoning events in order, and the summary when one is asked for', async () => {
    const stream = client.responses.stream({ model, input: QUESTION, temperature: 0, reasoning: { summary: 'auto' } });
    const types: string[] = [];
    let summary = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.reasoning_summary_text.delta') summary += event.delta;
    }
    const final = await stream.finalResponse();
    expect(summary).toBe(THOUGHT);
    expect((final.output[0] as OpenAI.Responses.ResponseReasoningItem).summary).toEqual([
      { type: 'summary_text', text: THOUGHT },
    ]);
    const reasoningEvents = types.slice(
      types.indexOf('response.output_item.added'),
      types.indexOf('response.output_item.done') + 1,
    );
    expect(reasoningEvents[0]).toBe('response.output_item.added');
    expect(reasoningEvents[1]).toBe('response.reasoning_summary_part.added');
    expect(reasoningEvents).toContain('response.reasoning_text.delta');
    expect(reasoningEvents.slice(-4)).toEqual([
      'response.reasoning_text.done',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
    ]);
    expect(final.output_text).toBe(ANSWER);
  });

  it('takes reasoning items back as input, and continues a stored response that thought', async () => {
    const first = await client.responses.create({ model, input: QUESTION, temperature: 0 });
    const again = await client.responses.create({
      model,
      input: [
        { role: 'user', content: QUESTION },
        ...first.output,
        { role: 'user', content: 'Say hello.' },
      ] as OpenAI.Responses.ResponseInput,
      temperature: 0,
    });
    expect(again.output_text).toBe('Hello!');
    const continued = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: 'Say hello.',
      temperature: 0,
    });
    expect(continued.output_text).toBe('Hello!');
  });
});

describe('AI SDK', () => {
  it('reads the thought as reasoning through the OpenAI-compatible provider (chat completions), streamed and not', async () => {
    const provider = createOpenAICompatible({ name: 'lantern', baseURL: BASE, apiKey: key, fetch: fetchVia });
    const result = await generateText({ model: provider(model), prompt: QUESTION, temperature: 0 });
    expect(result.reasoningText).toBe(THOUGHT);
    expect(result.text).toBe(ANSWER);
    const stream = streamText({ model: provider(model), prompt: QUESTION, temperature: 0 });
    let reasoning = '';
    for await (const part of stream.fullStream) if (part.type === 'reasoning-delta') reasoning += part.text;
    expect(reasoning).toBe(THOUGHT);
    expect(await stream.text).toBe(ANSWER);
  });

  it('reads reasoning summaries through the default OpenAI provider (Responses API), asked for by an OpenAI name', async () => {
    // The AI SDK sends `reasoning` only for models it knows reason: `o4-mini` is an alias of amber-phoenix-4. It also
    // leaves out `temperature` for them, so the thought is sampled: it is checked against the response itself.
    const provider = createOpenAI({ baseURL: BASE, apiKey: key, fetch: fetchVia });
    const result = await generateText({
      model: provider.responses('o4-mini'),
      prompt: QUESTION,
      providerOptions: { openai: { reasoningSummary: 'auto' } },
    });
    const body = result.response.body as OpenAI.Responses.Response;
    expect(body.model).toBe(model);
    const item = body.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(item.summary).toHaveLength(1);
    expect(result.reasoningText).toBe(item.summary[0]!.text);
    expect(result.reasoningText!.length).toBeGreaterThan(10);
    expect(result.text).toBe(body.output_text);
  });
});

/**
 * The OpenAI Agents SDK in chat-completions mode reads a thought only as `reasoning` (`message.reasoning` in
 * OpenAIChatCompletionsModel.getResponse, `delta.reasoning` in convertChatCompletionsStreamToResponses) and shows it as
 * a reasoning item. It is no dependency of the project: this runs where `@openai/agents-core` and
 * `@openai/agents-openai` are installed (0.12.x, the last on openai 6; later ones need openai 7, hence Node 22), and is
 * skipped otherwise.
 */
const AGENTS_SDK = ['@openai/agents-core', '@openai/agents-openai'];
const agentsSdk = await Promise.all(AGENTS_SDK.map((name) => import(/* @vite-ignore */ name))).catch(() => undefined);

describe.skipIf(!agentsSdk)('OpenAI Agents SDK (chat completions)', () => {
  it('shows the thought as a reasoning item before the answer, streamed and not', async () => {
    const [core, openai] = agentsSdk!;
    core.setTracingDisabled(true);
    openai.setDefaultOpenAIClient(client);
    openai.setOpenAIAPI('chat_completions');
    core.setDefaultModelProvider(new openai.OpenAIProvider()); // what importing @openai/agents does
    const agent = new core.Agent({ name: 'calculator', model, modelSettings: { temperature: 0 } });
    for (const stream of [false, true]) {
      const result = await core.run(agent, QUESTION, { stream });
      if (stream) {
        for await (const _event of result) void _event;
        await result.completed;
      }
      const items = result.newItems as { type: string; rawItem: { rawContent?: { text: string }[] } }[];
      expect(items.map((item) => item.type)).toEqual(['reasoning_item', 'message_output_item']);
      expect(items[0]!.rawItem.rawContent![0]!.text).toBe(THOUGHT);
      expect(result.finalOutput).toBe(ANSWER);
    }
  });
});

describe('LangChain', () => {
  it('ChatOpenAI returns the thought in additional_kwargs.reasoning_content', async () => {
    const chat = new ChatOpenAI({
      model,
      temperature: 0,
      apiKey: key,
      configuration: { baseURL: BASE, fetch: fetchVia },
      maxRetries: 0,
    });
    const message = await chat.invoke(QUESTION);
    expect(message.content).toBe(ANSWER);
    expect(message.additional_kwargs.reasoning_content).toBe(THOUGHT);
    let streamed = '';
    for await (const chunk of await chat.stream(QUESTION))
      streamed += String(chunk.additional_kwargs.reasoning_content ?? '');
    expect(streamed).toBe(THOUGHT);
  });
});
