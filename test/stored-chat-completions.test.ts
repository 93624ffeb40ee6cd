import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { openaiClient, sdkClient, type SdkClient } from './support/lantern.ts';

/**
 * Stored chat completions through the openai SDK (`client.chat.completions.list`, `retrieve`, `update`, `delete`,
 * `messages.list`) on real inference (the bundled tiny chat model): `store: true` keeps a completion, streamed or not,
 * with its metadata and messages; without it nothing is kept. Each key has its own: another key's are 404s.
 */
const model = 'crimson-falcon-4';

let client: SdkClient['client'];
let other: SdkClient['client'];

beforeAll(async () => {
  const lantern = await sdkClient({ handler: { onServerError: () => {} }, client: { maxRetries: 0 } });
  ({ client } = lantern);
  other = openaiClient(lantern.handler, (await lantern.keys.issue('another app')).key, { maxRetries: 0 });
});

const ask = (content: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content },
    ],
    temperature: 0,
    max_tokens: 4,
    ...extra,
  });

const listIds = async (params: OpenAI.Chat.ChatCompletionListParams = {}) => {
  const ids: string[] = [];
  for await (const completion of client.chat.completions.list(params)) ids.push(completion.id);
  return ids;
};

describe('openai SDK: stored chat completions', () => {
  it('keeps a completion with store: true, retrieves it, lists its messages, updates its metadata, deletes it', async () => {
    const completion = await ask('Count to 10.', { store: true, metadata: { run: 'one' } });
    const kept = await client.chat.completions.retrieve(completion.id);
    expect(kept).toEqual({ ...completion, metadata: { run: 'one' } });

    const messages = await client.chat.completions.messages.list(completion.id);
    expect(messages.data).toEqual([
      { id: `${completion.id}-0`, role: 'system', content: 'You are terse.', content_parts: null },
      { id: `${completion.id}-1`, role: 'user', content: 'Count to 10.', content_parts: null },
    ]);
    const newest = await client.chat.completions.messages.list(completion.id, { order: 'desc', limit: 1 });
    expect(newest.data.map((m) => m.id)).toEqual([`${completion.id}-1`]);
    expect(newest.has_more).toBe(true);

    const updated = await client.chat.completions.update(completion.id, { metadata: { run: 'two' } });
    // openai-node's `ChatCompletion` type has no `metadata`; the stored object has it, as OpenAI's does.
    const metadataOf = (object: object) => (object as { metadata?: unknown }).metadata;
    expect(metadataOf(updated)).toEqual({ run: 'two' });
    expect(metadataOf(await client.chat.completions.retrieve(completion.id))).toEqual({ run: 'two' });

    await expect(other.chat.completions.retrieve(completion.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.chat.completions.messages.list(completion.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.chat.completions.update(completion.id, { metadata: {} })).rejects.toMatchObject({ status: 404 });
    await expect(other.chat.completions.delete(completion.id)).rejects.toMatchObject({ status: 404 });
    expect((await other.chat.completions.list()).data).toEqual([]);

    expect(await client.chat.completions.delete(completion.id)).toEqual({
      id: completion.id,
      object: 'chat.completion.deleted',
      deleted: true,
    });
    await expect(client.chat.completions.retrieve(completion.id)).rejects.toMatchObject({ status: 404 });
  });

  it('keeps nothing without store, and a streamed completion assembled', async () => {
    const before = await listIds();
    const unkept = await ask('Hi');
    await expect(client.chat.completions.retrieve(unkept.id)).rejects.toMatchObject({ status: 404 });

    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Count to 10.' }] }],
      temperature: 0,
      max_tokens: 6,
      stream: true,
      store: true,
    });
    let id = '';
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      id = chunk.id;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    const kept = await client.chat.completions.retrieve(id);
    expect(kept).toMatchObject({
      id,
      object: 'chat.completion',
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }],
      metadata: {},
    });
    expect(kept.usage?.completion_tokens).toBeGreaterThan(0);
    const [message] = (await client.chat.completions.messages.list(id)).data;
    expect(message).toEqual({
      id: `${id}-0`,
      role: 'user',
      content: 'Count to 10.',
      content_parts: [{ type: 'text', text: 'Count to 10.' }],
    });
    expect(await listIds()).toEqual([...before, id]);
  });

  it('lists oldest first by default, a page at a time, filtered by metadata and model', async () => {
    const made: string[] = [];
    for (const [i, team] of ['red', 'blue', 'red', 'red'].entries()) {
      made.push((await ask(`Say ${i}.`, { store: true, metadata: { team, batch: 'list' } })).id);
    }
    const batch = { metadata: { batch: 'list' } };
    expect(await listIds(batch)).toEqual(made);
    expect(await listIds({ ...batch, order: 'desc' })).toEqual([...made].reverse());
    const page = await client.chat.completions.list({ ...batch, limit: 2 });
    expect(page.data.map((c) => c.id)).toEqual(made.slice(0, 2));
    expect(page.has_more).toBe(true);
    const next = await client.chat.completions.list({ ...batch, limit: 2, after: made[1] });
    expect(next.data.map((c) => c.id)).toEqual(made.slice(2));
    expect(next.has_more).toBe(false);
    expect(await listIds({ metadata: { batch: 'list', team: 'red' } })).toEqual([made[0], made[2], made[3]]);
    expect(await listIds({ ...batch, model })).toEqual(made);
    expect(await listIds({ ...batch, model: 'some-other-model' })).toEqual([]);
  });

  it('refuses bad metadata on create and update', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await expect(ask('Hi', { store: true, metadata: tooMany })).rejects.toMatchObject({ status: 400 });
    const { id } = await ask('Hi', { store: true });
    await expect(client.chat.completions.update(id, { metadata: tooMany })).rejects.toMatchObject({ status: 400 });
  });
});
