import { createOpenAI } from '@ai-sdk/openai';
import { generateText, Output, streamText, type ModelMessage } from 'ai';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { Handler } from '../src/index.ts';
import { openaiClient, reference, sdkClient, type ChatReference, type SdkClient } from './support/lantern.ts';
import { sdkRefusal } from './support/api-error.ts';

/**
 * The Responses API through unmodified clients on real inference (the bundled tiny chat model): the openai SDK's
 * `responses.create`, `responses.stream` and `responses.parse`, and the AI SDK's default OpenAI provider, which calls
 * the Responses API. Expected texts come from the fixture's PyTorch reference, or from the same conversation asked
 * through chat completions.
 */
const refs = reference<ChatReference[]>('tiny-chat');
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;
const model = 'crimson-falcon-4';
const BASE = 'http://lantern.test/v1';

let handler: Handler;
let client: SdkClient['client'];
let other: SdkClient['client'];
let key: string;
let calls: SdkClient['calls'];

beforeAll(async () => {
  const lantern = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
  ({ client, handler, key, calls } = lantern);
  other = openaiClient(handler, (await lantern.keys.issue('another app')).key, { maxRetries: 0 });
});

const fetchVia = (url: string | URL | Request, init?: RequestInit) => handler(new Request(url, init));

/** The reply chat completions give to the same conversation, greedy. */
async function chatReply(messages: OpenAI.ChatCompletionMessageParam[], max_tokens?: number) {
  const reply = await client.chat.completions.create({ model, messages, temperature: 0, max_tokens });
  return reply.choices[0]!.message.content!;
}

describe('openai SDK: responses.create', () => {
  it('answers a string input with one output message, its usage, and keeps it for GET', async () => {
    const response = await client.responses.create({ model, input: 'Count to 10.', temperature: 0 });
    expect(response).toMatchObject({
      object: 'response',
      status: 'completed',
      model,
      error: null,
      incomplete_details: null,
      previous_response_id: null,
      store: true,
      temperature: 0,
      text: { format: { type: 'text' } },
      tools: [],
      usage: {
        input_tokens: count.input_ids.length,
        output_tokens: count.greedy_ids.length,
        total_tokens: count.input_ids.length + count.greedy_ids.length,
      },
    });
    expect(response.id).toMatch(/^resp_[0-9a-f]{32}$/);
    expect(response.output).toEqual([
      {
        id: expect.stringMatching(/^msg_/),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: count.greedy_text, annotations: [], logprobs: [] }],
      },
    ]);
    expect(response.output_text).toBe(count.greedy_text);
    expect(await client.responses.retrieve(response.id)).toEqual(response);
  });

  it('takes input items and instructions as chat completions take messages and a system message', async () => {
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'user', content: 'Tell me a story.' },
      {
        type: 'message',
        id: 'msg_earlier',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Once upon a time.', annotations: [] }],
      },
      { role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Count' },
          { type: 'input_text', text: 'to 10.' },
        ],
      },
    ];
    const response = await client.responses.create({ model, input, instructions: 'You count.', temperature: 0 });
    expect(calls.at(-1)!.request.messages).toEqual([
      { role: 'system', content: 'You count.' },
      { role: 'user', content: 'Tell me a story.' },
      { role: 'assistant', content: 'Once upon a time.' },
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Count\nto 10.' },
    ]);
    expect(response.output_text).toBe(
      await chatReply([
        { role: 'system', content: 'You count.' },
        { role: 'user', content: 'Tell me a story.' },
        { role: 'assistant', content: 'Once upon a time.' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Count\nto 10.' },
      ]),
    );
  });

  it('ends incomplete at max_output_tokens, streamed with response.incomplete', async () => {
    const response = await client.responses.create({
      model,
      input: 'Count to 10.',
      temperature: 0,
      max_output_tokens: 4,
    });
    expect(response).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      max_output_tokens: 4,
      usage: { output_tokens: 4 },
    });
    expect(response.output[0]).toMatchObject({ status: 'incomplete' });
    expect(count.greedy_text.startsWith(response.output_text)).toBe(true);

    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    const stream = client.responses.stream({ model, input: 'Count to 10.', temperature: 0, max_output_tokens: 4 });
    for await (const event of stream) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete' } });
    expect((await stream.finalResponse()).output_text).toBe(response.output_text);
  });

  it('reports log probabilities with include: ["message.output_text.logprobs"]', async () => {
    const response = await client.responses.create({
      model,
      input: 'Count to 10.',
      temperature: 0,
      include: ['message.output_text.logprobs'],
      top_logprobs: 2,
    });
    const part = (response.output[0] as OpenAI.Responses.ResponseOutputMessage)
      .content[0] as OpenAI.Responses.ResponseOutputText;
    expect(part.logprobs).toHaveLength(count.greedy_ids.length - 1);
    expect(part.logprobs!.map((t) => t.token).join('')).toBe(count.greedy_text);
    for (const t of part.logprobs!) {
      expect(t.top_logprobs).toHaveLength(2);
      expect(t.top_logprobs[0]!.logprob).toBe(t.logprob);
    }
    expect(response.top_logprobs).toBe(2);
  });
});

describe('openai SDK: responses.stream', () => {
  it("sends OpenAI's events in order, numbered from 0, named in `event:` lines, and no [DONE]", async () => {
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    const stream = client.responses.stream({ model, input: 'Count to 10.', temperature: 0 });
    for await (const event of stream) events.push(event);
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...deltas.map(() => 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    // One event per token but the last, which ends the reply and has no text.
    expect(deltas).toHaveLength(count.greedy_ids.length - 1);
    expect(deltas.map((e) => e.delta).join('')).toBe(count.greedy_text);
    expect(events[0]).toMatchObject({ response: { status: 'in_progress', output: [], usage: null } });
    const final = await stream.finalResponse();
    expect(final).toMatchObject({ status: 'completed', output_text: count.greedy_text });
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { id: final.id } });
    expect(await client.responses.retrieve(final.id)).toEqual(
      events.at(-1)!.type === 'response.completed' &&
        (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response,
    );

    const raw = await fetchVia(`${BASE}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: 'Count to 10.', temperature: 0, stream: true }),
    });
    const frames = (await raw.text()).trim().split('\n\n');
    for (const frame of frames) {
      const [event, data] = frame.split('\n');
      expect(JSON.parse(data!.slice('data: '.length)).type).toBe(event!.slice('event: '.length));
    }
    expect(frames).toHaveLength(events.length);
  });

  it('refuses a prompt over the context window with its own status, before any event', async () => {
    const error = await client.responses
      .create({ model, input: 'hi '.repeat(2000), stream: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
  });

  it('stops generating when the client aborts, and keeps nothing', async () => {
    const abort = new AbortController();
    const stream = await client.responses.create(
      { model, input: 'Tell me a story.', temperature: 1, stream: true },
      { signal: abort.signal },
    );
    let id = '';
    // The SDK ends the iteration quietly on its own abort.
    for await (const event of stream) {
      if (event.type === 'response.created') id = event.response.id;
      if (event.type === 'response.output_text.delta') abort.abort();
    }
    await expect(calls.at(-1)!.outcome).resolves.toMatchObject({ kind: 'aborted' });
    await expect(client.responses.retrieve(id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('stored responses', () => {
  it('continues a conversation across two requests with previous_response_id, as chat does with the history', async () => {
    const first = await client.responses.create({
      model,
      input: 'Tell me a story.',
      instructions: 'Be kind.',
      temperature: 0,
      max_output_tokens: 12,
    });
    const second = await client.responses.create({
      model,
      previous_response_id: first.id,
      input: 'Count to 10.',
      temperature: 0,
    });
    expect(second.previous_response_id).toBe(first.id);
    // Instructions are not carried over (as OpenAI does); the earlier turn and its answer are.
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Tell me a story.' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'Count to 10.' },
    ];
    expect(calls.at(-1)!.request.messages).toEqual(history);
    // The kept conversation continues from the engine's prefix cache: the first turn is not prefilled again.
    expect(second.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(first.usage!.input_tokens / 2);
    expect(second.output_text).toBe(await chatReply(history));

    // Streamed, a third turn continues the second, whose history it holds.
    const third = await client.responses
      .stream({ model, previous_response_id: second.id, input: 'Send a wave.', temperature: 0, max_output_tokens: 8 })
      .finalResponse();
    expect(calls.at(-1)!.request.messages).toEqual([
      ...history,
      { role: 'assistant', content: second.output_text },
      { role: 'user', content: 'Send a wave.' },
    ]);
    expect(third.previous_response_id).toBe(second.id);
  });

  it('resolves item_reference to an item of a kept response', async () => {
    const first = await client.responses.create({
      model,
      input: 'Tell me a story.',
      temperature: 0,
      max_output_tokens: 6,
    });
    await client.responses.create({
      model,
      input: [
        { role: 'user', content: 'Tell me a story.' },
        { type: 'item_reference', id: first.output[0]!.id! },
        { role: 'user', content: 'More.' },
      ],
      temperature: 0,
      max_output_tokens: 2,
    });
    expect(calls.at(-1)!.request.messages[1]).toEqual({ role: 'assistant', content: first.output_text });
    const missing = await client.responses
      .create({ model, input: [{ type: 'item_reference', id: 'msg_nope' }] })
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 400, param: 'input[0]' });
  });

  it('keeps nothing with store: false, and deletes a kept response', async () => {
    const unkept = await client.responses.create({ model, input: 'hi', store: false, max_output_tokens: 2 });
    expect(unkept).toMatchObject({ store: false }); // the API's field, which openai-node's type leaves out
    await expect(client.responses.retrieve(unkept.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const continued = await client.responses
      .create({ model, input: 'hi', previous_response_id: unkept.id })
      .catch((e: unknown) => e);
    expect(continued).toMatchObject({
      status: 400,
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });

    const kept = await client.responses.create({ model, input: 'hi', max_output_tokens: 2 });
    await client.responses.delete(kept.id);
    await expect(client.responses.retrieve(kept.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.delete(kept.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("keeps each key's responses to that key", async () => {
    const kept = await client.responses.create({ model, input: 'hi', max_output_tokens: 2 });
    await expect(other.responses.retrieve(kept.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.delete(kept.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.create({ model, input: 'hi', previous_response_id: kept.id })).rejects.toMatchObject({
      code: 'previous_response_not_found',
    });
    expect((await client.responses.retrieve(kept.id)).id).toBe(kept.id);
  });
});

const Weather = z.object({
  city: z.enum(['Paris', 'Oslo', 'Lima']),
  celsius: z.number().int().min(-30).max(45),
  raining: z.boolean(),
});

describe('text.format: structured output', () => {
  it('responses.parse() with zodTextFormat returns output_parsed, streamed too', async () => {
    const parsed = await client.responses.parse({
      model,
      input: 'What is the weather? Answer in JSON.',
      text: { format: zodTextFormat(Weather, 'weather') },
      temperature: 0,
    });
    expect(parsed.status).toBe('completed');
    expect(parsed.output_parsed).toEqual(Weather.parse(JSON.parse(parsed.output_text)));
    expect(calls.at(-1)!.request.constraint).toEqual({
      type: 'json',
      schema: expect.objectContaining({ type: 'object' }),
      param: 'text.format',
    });

    const streamed = await client.responses
      .stream({
        model,
        input: 'What is the weather? Answer in JSON.',
        text: { format: zodTextFormat(Weather, 'weather') },
        temperature: 1,
      })
      .finalResponse();
    expect(streamed.output_parsed).toEqual(Weather.parse(JSON.parse(streamed.output_text)));
  });

  it('json_object holds the answer to a JSON object (the constraint of chat completions)', async () => {
    // Greedy, tiny-chat's free object goes on (its likeliest keys nest, {"config":{"confidence":…}}): the answer is cut.
    const response = await client.responses.create({
      model,
      input: 'Answer in JSON.',
      text: { format: { type: 'json_object' } },
      temperature: 0,
      max_output_tokens: 12,
    });
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(response.output_text).toMatch(/^\{"/);
    expect(calls.at(-1)!.request.constraint).toEqual({ type: 'json', schema: null, param: 'text.format' });
  });
});

describe('refusals', () => {
  it('answers what it cannot do with a 400 naming the parameter, and the next request still works', async () => {
    const refused = async (body: Record<string, unknown>) => {
      const { status, param } = await sdkRefusal(
        client.responses.create({ model, input: 'hi', ...body } as OpenAI.Responses.ResponseCreateParamsNonStreaming),
      );
      expect(status).toBe(400);
      return param;
    };
    expect(await refused({ tools: [{ type: 'web_search' }] })).toBe('tools[0].type');
    expect(await refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:' }] }] })).toBe(
      'input[0].content[0].image_url',
    );
    expect(await refused({ input: [{ type: 'computer_call', id: 'cu_1' }] })).toBe('input[0].type');
    expect(await refused({ background: true, store: false })).toBe('background');
    // A conversation by id or `{ id }` (test/conversations.test.ts); nothing else.
    expect(await refused({ conversation: 42 })).toBe('conversation');
    expect(await refused({ truncation: 'auto' })).toBe('truncation');
    expect(await refused({ max_output_tokens: 0 })).toBe('max_output_tokens');
    expect(await refused({ text: { format: { type: 'json_schema', name: 'bad name!', schema: {} } } })).toBe(
      'text.format.name',
    );
    expect(await refused({ input: undefined })).toBe('input');
    // A schema the constraint cannot enforce: the engine's refusal, named as this API names the format.
    const unenforceable = { type: 'object', properties: { a: { type: 'string', not: { pattern: '^x' } } } };
    expect(await refused({ text: { format: { type: 'json_schema', name: 'w', schema: unenforceable } } })).toBe(
      'text.format',
    );
    expect(
      await client.responses.create({ model: 'jade-mole-4', input: 'hi' }).catch((e: unknown) => e),
    ).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await client.responses.create({ model, input: 'hi', max_output_tokens: 1 })).status).toBe('incomplete');
  });
});

describe('AI SDK: the default OpenAI provider (createOpenAI), which calls the Responses API', () => {
  const provider = () => createOpenAI({ baseURL: BASE, apiKey: key, fetch: fetchVia });

  it('generateText and streamText', async () => {
    const openai = provider();
    const generated = await generateText({ model: openai(model), prompt: 'Count to 10.', temperature: 0 });
    expect(generated.text).toBe(count.greedy_text);
    expect(generated.finishReason).toBe('stop');
    expect(generated.usage).toMatchObject({
      inputTokens: count.input_ids.length,
      outputTokens: count.greedy_ids.length,
    });

    const streamed = streamText({ model: openai(model), prompt: 'Count to 10.', temperature: 0 });
    let text = '';
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe(count.greedy_text);
    expect(await streamed.finishReason).toBe('stop');
  });

  it('continues with the messages it returned (item references to the kept answer), and system prompts', async () => {
    const openai = provider();
    const first = await generateText({
      model: openai(model),
      prompt: 'Tell me a story.',
      temperature: 0,
      maxOutputTokens: 8,
    });
    const messages: ModelMessage[] = [
      { role: 'user', content: 'Tell me a story.' },
      ...first.response.messages,
      { role: 'user', content: 'Count to 10.' },
    ];
    const second = await generateText({ model: openai(model), system: 'You count.', messages, temperature: 0 });
    const history: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You count.' },
      { role: 'user', content: 'Tell me a story.' },
      { role: 'assistant', content: first.text },
      { role: 'user', content: 'Count to 10.' },
    ];
    expect(calls.at(-1)!.request.messages).toEqual(history);
    expect(second.text).toBe(await chatReply(history));
  });

  it('structured output with Output.object (text.format json_schema)', async () => {
    const openai = provider();
    const { output } = await generateText({
      model: openai(model),
      prompt: 'What is the weather? Answer in JSON.',
      output: Output.object({ schema: Weather }),
      temperature: 0,
    });
    expect(Weather.parse(output)).toEqual(output);
  });
});
