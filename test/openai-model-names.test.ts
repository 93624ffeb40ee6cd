import { NotFoundError } from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { OPENAI_ALIASES } from '../src/index.ts';
import { reference, sdkClient, type ChatReference, type SdkClient } from './support/lantern.ts';

/**
 * An app written for OpenAI, unmodified: it names OpenAI's models, which the bundled profile (as the default one) takes
 * as aliases of its IDs. Every answer names the ID that served it, as OpenAI answers `gpt-4o-mini` with a dated model;
 * `/v1/models` lists the IDs. Through the official openai SDK, on the bundled models with real inference.
 */
const count = reference<ChatReference[]>('tiny-chat').find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;

let client: SdkClient['client'];
let calls: SdkClient['calls'];

beforeAll(async () => {
  ({ client, calls } = await sdkClient());
});

describe('chat completions by an OpenAI name', () => {
  it('answers gpt-4o-mini with the middle chat model, and names it', async () => {
    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: count.messages,
      temperature: 0,
    });
    expect(completion.model).toBe('indigo-owl-4');
    expect(completion.choices[0]!.message.content).toBe(count.greedy_text);
    expect(calls.at(-1)!.model).toBe('gpt-4o-mini'); // the handler passes the name on; the engine resolves it
  });

  it('names the ID in every chunk of a stream', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-4.1-nano',
      messages: count.messages,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const models = new Set<string>();
    let text = '';
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect([...models]).toEqual(['crimson-falcon-4']);
    expect(text).toBe(count.greedy_text);
  });

  it('refuses an embedding model by its OpenAI name as by its ID: 404 model_not_found', async () => {
    const refusal = (model: string) =>
      client.chat.completions.create({ model, messages: count.messages, max_tokens: 4 }).then(
        () => expect.fail(`${model} answered`),
        (error: unknown) => error as NotFoundError,
      );
    const [byAlias, byId] = await Promise.all([refusal('text-embedding-3-small'), refusal('jade-mole-4')]);
    expect(byAlias).toBeInstanceOf(NotFoundError);
    expect([byAlias.status, byAlias.code, byAlias.type, byAlias.param]).toEqual([
      byId.status,
      byId.code,
      byId.type,
      byId.param,
    ]);
    expect(byAlias.code).toBe('model_not_found');
    expect(byAlias.message).toContain('`text-embedding-3-small`');
  });
});

describe('the other endpoints by an OpenAI name', () => {
  it('embeds with text-embedding-3-small, the vectors of the embedding model, under its ID', async () => {
    const input = ['a cat', 'a kitten'];
    const [aliased, direct] = await Promise.all([
      client.embeddings.create({ model: 'text-embedding-3-small', input }),
      client.embeddings.create({ model: 'jade-mole-4', input }),
    ]);
    expect(aliased.model).toBe('jade-mole-4');
    expect(aliased.data).toEqual(direct.data);
  });

  it('continues text with gpt-3.5-turbo under the smallest chat model', async () => {
    const completion = await client.completions.create({ model: 'gpt-3.5-turbo', prompt: 'Count', max_tokens: 3 });
    expect(completion.model).toBe('crimson-falcon-4');
  });

  it('answers a Responses request for gpt-4.1 under the middle chat model, streamed or not', async () => {
    const response = await client.responses.create({ model: 'gpt-4.1', input: 'Count to 10.', temperature: 0 });
    expect(response.model).toBe('indigo-owl-4');
    const events = await client.responses.create({
      model: 'gpt-4.1',
      input: 'Count to 10.',
      temperature: 0,
      stream: true,
    });
    const named = new Set<string>();
    for await (const event of events) if ('response' in event) named.add(event.response.model);
    expect([...named]).toEqual(['indigo-owl-4']);
  });
});

describe('/v1/models', () => {
  it('lists the IDs only', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual([
      'crimson-falcon-4',
      'indigo-owl-4',
      'amber-phoenix-4',
      'jade-mole-4',
      'teal-finch-4',
      'ochre-lark-4',
    ]);
  });

  it('retrieves a model by an alias, answered with its ID', async () => {
    for (const [id, names] of Object.entries(OPENAI_ALIASES)) {
      for (const name of names) expect((await client.models.retrieve(name)).id).toBe(id);
    }
    await expect(client.models.retrieve('gpt-4o-2024-08-06')).rejects.toBeInstanceOf(NotFoundError);
  });
});
