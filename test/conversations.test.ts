import { Agent, Runner } from '@openai/agents-core';
import { OpenAIConversationsSession, OpenAIProvider } from '@openai/agents-openai';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { memoryRecordStore, type Handler } from '../src/index.ts';
import { openaiClient, sdkClient, type SdkClient } from './support/lantern.ts';

/**
 * The Conversations API through the openai SDK (`client.conversations`, `.items`) and through the Agents SDK's
 * `OpenAIConversationsSession`, and `conversation` on `POST /v1/responses`, on real inference (the bundled tiny chat
 * model). Each key has its own conversations: another key's are 404s.
 */
const model = 'crimson-falcon-4';

let handler: Handler;
let key: string;
let client: SdkClient['client'];
let other: SdkClient['client'];
let calls: SdkClient['calls'];

beforeAll(async () => {
  const lantern = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
  ({ client, handler, key, calls } = lantern);
  other = openaiClient(handler, (await lantern.keys.issue('another app')).key, { maxRetries: 0 });
});

const texts = (items: { type: string; content?: unknown }[]) =>
  items.map((item) =>
    item.type === 'message' ? (item.content as { text?: string }[]).map((part) => part.text).join('') : item.type,
  );

describe('openai SDK: conversations', () => {
  it('creates one with items and metadata, retrieves, updates and deletes it', async () => {
    const conversation = await client.conversations.create({
      items: [
        { type: 'message', role: 'user', content: 'Hello' },
        { type: 'message', role: 'assistant', content: 'Hi there' },
      ],
      metadata: { topic: 'greetings' },
    });
    expect(conversation).toMatchObject({ object: 'conversation', metadata: { topic: 'greetings' } });
    expect(conversation.id).toMatch(/^conv_/);
    expect(typeof conversation.created_at).toBe('number');
    expect(await client.conversations.retrieve(conversation.id)).toEqual(conversation);

    const updated = await client.conversations.update(conversation.id, { metadata: { topic: 'farewells' } });
    expect(updated).toEqual({ ...conversation, metadata: { topic: 'farewells' } });

    const items = await client.conversations.items.list(conversation.id, { order: 'asc' });
    expect(texts(items.data)).toEqual(['Hello', 'Hi there']);
    expect(items.data[0]).toMatchObject({
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: 'Hello' }],
    });
    expect(items.data[1]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: 'Hi there' }] });
    expect(items.data[0]!.id).toMatch(/^msg_/);

    expect(await client.conversations.delete(conversation.id)).toEqual({
      id: conversation.id,
      object: 'conversation.deleted',
      deleted: true,
    });
    await expect(client.conversations.retrieve(conversation.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.conversations.delete(conversation.id)).rejects.toMatchObject({ status: 404 });
  });

  it("adds, lists a page at a time in either order, retrieves and deletes items; another key's are 404s", async () => {
    const { id } = await client.conversations.create();
    const added = await client.conversations.items.create(id, {
      items: ['one', 'two', 'three', 'four', 'five'].map((text) => ({ type: 'message', role: 'user', content: text })),
    });
    expect(added).toMatchObject({ object: 'list', has_more: false });
    expect(texts(added.data)).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(added.first_id).toBe(added.data[0]!.id);
    expect(added.last_id).toBe(added.data[4]!.id);

    // Newest first by default.
    const first = await client.conversations.items.list(id, { limit: 2 });
    expect(texts(first.data)).toEqual(['five', 'four']);
    expect(first.has_more).toBe(true);
    const all: string[] = [];
    for await (const item of client.conversations.items.list(id, { limit: 2, order: 'asc' }))
      all.push(...texts([item]));
    expect(all).toEqual(['one', 'two', 'three', 'four', 'five']);
    const after = await client.conversations.items.list(id, { limit: 2, order: 'asc', after: added.data[2]!.id });
    expect(texts(after.data)).toEqual(['four', 'five']);
    expect(after.has_more).toBe(false);

    const two = added.data[1]!;
    expect(await client.conversations.items.retrieve(two.id!, { conversation_id: id })).toEqual(two);
    const conversation = await client.conversations.items.delete(two.id!, { conversation_id: id });
    expect(conversation).toMatchObject({ id, object: 'conversation' });
    await expect(client.conversations.items.retrieve(two.id!, { conversation_id: id })).rejects.toMatchObject({
      status: 404,
    });
    expect(texts((await client.conversations.items.list(id, { order: 'asc' })).data)).toEqual([
      'one',
      'three',
      'four',
      'five',
    ]);

    const notFound = { status: 404, error: { message: `Conversation with id '${id}' not found.` } };
    await expect(other.conversations.retrieve(id)).rejects.toMatchObject(notFound);
    await expect(other.conversations.items.list(id)).rejects.toMatchObject(notFound);
    await expect(
      other.conversations.items.create(id, { items: [{ role: 'user', content: 'x' }] }),
    ).rejects.toMatchObject(notFound);
    await expect(other.conversations.update(id, { metadata: {} })).rejects.toMatchObject(notFound);
    await expect(other.conversations.delete(id)).rejects.toMatchObject(notFound);
    await expect(other.conversations.items.retrieve(added.data[0]!.id!, { conversation_id: id })).rejects.toMatchObject(
      notFound,
    );
    await expect(
      other.responses.create({ model, conversation: id, input: 'Hi', max_output_tokens: 4 }),
    ).rejects.toMatchObject({ status: 404, error: { param: 'conversation' } });
    // Still all there for its own key.
    expect((await client.conversations.items.list(id)).data).toHaveLength(4);
  });

  it("keeps a message's text and images as parts, in their order", async () => {
    const png =
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const content = [
      { type: 'input_text' as const, text: 'Look:' },
      { type: 'input_image' as const, image_url: png, detail: 'low' as const },
      { type: 'input_text' as const, text: 'What is it?' },
    ];
    const { id } = await client.conversations.create({ items: [{ role: 'user', content }] });
    const [item] = (await client.conversations.items.list(id)).data;
    expect(item).toMatchObject({
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: 'Look:' },
        { type: 'input_image', image_url: png, detail: 'low' },
        { type: 'input_text', text: 'What is it?' },
      ],
    });
  });

  it('refuses more than 20 items at a time, item references, and bad metadata', async () => {
    const many = Array.from({ length: 21 }, () => ({ role: 'user' as const, content: 'x' }));
    await expect(client.conversations.create({ items: many })).rejects.toMatchObject({ status: 400 });
    await expect(
      client.conversations.create({ items: [{ type: 'item_reference', id: 'msg_1' }] }),
    ).rejects.toMatchObject({ status: 400, error: { param: 'items[0]' } });
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await expect(client.conversations.create({ metadata: tooMany })).rejects.toMatchObject({ status: 400 });
  });
});

describe('limits', () => {
  it("refuses an addition past the key's bytes with conversation_full, and keeps the conversation as it was", async () => {
    const small = await sdkClient({
      handler: { onServerError: () => {}, conversations: memoryRecordStore({ maxBytes: 4096 }) },
      client: { maxRetries: 0 },
    });
    const { id } = await small.client.conversations.create({ items: [{ role: 'user', content: 'Hello' }] });
    await expect(
      small.client.conversations.items.create(id, { items: [{ role: 'user', content: 'x'.repeat(5000) }] }),
    ).rejects.toMatchObject({ status: 400, error: { code: 'conversation_full' } });
    expect(texts((await small.client.conversations.items.list(id)).data)).toEqual(['Hello']);
  });
});

describe('openai SDK: responses in a conversation', () => {
  it('gives two responses in a row the conversation as context, and adds each turn to it', async () => {
    const { id } = await client.conversations.create({
      items: [{ type: 'message', role: 'system', content: 'You are terse.' }],
    });
    const first = await client.responses.create({
      model,
      conversation: id,
      input: 'Count to 10.',
      temperature: 0,
      max_output_tokens: 12,
    });
    expect(first.status).not.toBe('failed');
    expect((first as { conversation?: unknown }).conversation).toEqual({ id });
    expect(calls.at(-1)!.request.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You are terse.'],
      ['user', 'Count to 10.'],
    ]);

    const second = await client.responses.create({
      model,
      conversation: { id },
      input: [{ role: 'user', content: 'Again.' }],
      temperature: 0,
      max_output_tokens: 8,
    });
    expect(calls.at(-1)!.request.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You are terse.'],
      ['user', 'Count to 10.'],
      ['assistant', first.output_text],
      ['user', 'Again.'],
    ]);

    const items = await client.conversations.items.list(id, { order: 'asc' });
    expect(texts(items.data)).toEqual([
      'You are terse.',
      'Count to 10.',
      first.output_text,
      'Again.',
      second.output_text,
    ]);
    // The response's output items are kept as they were answered.
    expect(items.data[2]).toEqual(first.output[0]);

    // The second response's input items: the conversation it answered, newest first.
    const input = await client.responses.inputItems.list(second.id);
    expect(texts(input.data)).toEqual(['Again.', first.output_text, 'Count to 10.', 'You are terse.']);
    const page = await client.responses.inputItems.list(second.id, { order: 'asc', limit: 3 });
    expect(texts(page.data)).toEqual(['You are terse.', 'Count to 10.', first.output_text]);
    expect(page.has_more).toBe(true);
    await expect(other.responses.inputItems.list(second.id)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the turn of a streamed response too', async () => {
    const { id } = await client.conversations.create();
    const stream = await client.responses.create({
      model,
      conversation: id,
      input: 'Count to 10.',
      temperature: 0,
      max_output_tokens: 6,
      stream: true,
    });
    let done: OpenAI.Responses.Response | undefined;
    for await (const event of stream)
      if (event.type === 'response.completed' || event.type === 'response.incomplete') done = event.response;
    const items = await client.conversations.items.list(id, { order: 'asc' });
    expect(texts(items.data)).toEqual(['Count to 10.', done!.output_text]);
  });

  it('refuses `conversation` with `previous_response_id`, and an unknown conversation', async () => {
    const { id } = await client.conversations.create();
    const previous = await client.responses.create({ model, input: 'Hi', max_output_tokens: 2 });
    await expect(
      client.responses.create({ model, conversation: id, previous_response_id: previous.id, input: 'Hi' }),
    ).rejects.toMatchObject({ status: 400, error: { code: 'mutually_exclusive_parameters' } });
    await expect(
      client.responses.create({ model, conversation: 'conv_nothing', input: 'Hi', max_output_tokens: 2 }),
    ).rejects.toMatchObject({
      status: 404,
      error: { message: "Conversation with id 'conv_nothing' not found.", param: 'conversation' },
    });
  });
});

describe('Agents SDK: OpenAIConversationsSession', () => {
  it('runs an agent for two turns, the second given the first from the session', async () => {
    const sent: { input: unknown }[] = [];
    const recording = openaiClient(handler, key, {
      maxRetries: 0,
      fetch: async (url, init) => {
        if (String(url).endsWith('/responses')) sent.push(JSON.parse(String(init?.body)));
        return handler(new Request(url, init));
      },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: recording, useResponses: true }),
      tracingDisabled: true,
    });
    const session = new OpenAIConversationsSession({ client: recording });
    const agent = new Agent({
      name: 'counter',
      instructions: 'You are terse.',
      model,
      modelSettings: { temperature: 0, maxTokens: 8 },
    });

    const first = await runner.run(agent, 'Count to 10.', { session });
    expect(typeof first.finalOutput).toBe('string');
    const second = await runner.run(agent, 'Again.', { session });
    expect(typeof second.finalOutput).toBe('string');

    // The second turn's request carries the first turn, from the conversation, before its own input.
    expect(JSON.stringify(sent[1]!.input)).toContain('Count to 10.');
    expect(JSON.stringify(sent[1]!.input)).toContain(JSON.stringify(first.finalOutput).slice(1, -1));
    expect(calls.at(-1)!.request.messages.map((m) => m.content)).toEqual([
      'You are terse.',
      'Count to 10.',
      first.finalOutput,
      'Again.',
    ]);

    const conversationId = await session.getSessionId();
    const items = await client.conversations.items.list(conversationId, { order: 'asc' });
    expect(texts(items.data)).toEqual(['Count to 10.', first.finalOutput, 'Again.', second.finalOutput]);
    expect((await session.getItems()).length).toBe(4);
    // Another key does not see the session's conversation.
    await expect(other.conversations.items.list(conversationId)).rejects.toMatchObject({ status: 404 });
  });
});
