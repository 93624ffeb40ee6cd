import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/index.ts';
import { WebLLMChatModel } from '../src/engines/web-llm/web-llm-chat-model.ts';
import { fakeCreate, type FakeWebLLM } from './support/fake-web-llm.ts';
import { openaiClient, sdkClient } from './support/lantern.ts';

/**
 * web-llm's own prefix reuse, through the whole /v1 path (openai SDK → handler → engine → web-llm adapter) against the
 * fake web-llm, whose KV cache follows web-llm's rule: a client that sends the conversation back, as clients do, gets
 * web-llm's cache reused turn after turn, and `usage` still counts the whole prompt.
 */
async function lantern() {
  const create = fakeCreate();
  const engine = createEngine({
    profile: {
      chat: {
        task: 'chat',
        created: 0,
        candidates: [{ engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC' }],
      },
    },
    device: { webgpu: true, shaderF16: false },
    loaders: {
      chat: (candidate, context) => WebLLMChatModel.load(candidate as never, { ...context, create }),
      embeddings: () => Promise.reject(new Error('no embeddings here')),
      transcription: () => Promise.reject(new Error('no speech here')),
      speech: () => Promise.reject(new Error('no speech here')),
    },
  });
  const { client, handler, keys, calls } = await sdkClient({ engine });
  await client.models.list();
  /** A client of the same handler with a key of its own. */
  const otherKey = async () => openaiClient(handler, (await keys.issue('other')).key);
  return { client, otherKey, calls, fake: () => create.engines[0]! as FakeWebLLM };
}

type Message = OpenAI.ChatCompletionMessageParam;

/** Key A's conversation about a secret after its first turn (answered, its reply kept), its next question asked. */
async function vaultConversation(client: OpenAI): Promise<Message[]> {
  const messages: Message[] = [
    { role: 'system', content: 'The PIN of the vault is 4829.' },
    { role: 'user', content: 'Hello there' },
  ];
  const first = await client.chat.completions.create({ model: 'chat', messages, seed: 1 });
  messages.push({ role: 'assistant', content: first.choices[0]!.message.content }, { role: 'user', content: 'Go on' });
  return messages;
}

describe('web-llm prefix reuse through /v1', () => {
  it('reuses web-llm’s cache on every turn of a conversation, streamed or not, and reports the cached tokens', async () => {
    const { client, fake } = await lantern();
    const messages: Message[] = [
      { role: 'system', content: 'You are brief.' },
      { role: 'user', content: 'Hello there' },
    ];
    const cached: number[] = [];
    for (const [i, next] of ['Go on', 'And then?', 'Thanks'].entries()) {
      let reply: string;
      if (i % 2 === 0) {
        const completion = await client.chat.completions.create({ model: 'chat', messages, temperature: 0.7, seed: i });
        reply = completion.choices[0]!.message.content!;
        cached.push(completion.usage!.prompt_tokens_details?.cached_tokens ?? 0);
      } else {
        const stream = client.chat.completions.stream({
          model: 'chat',
          messages,
          stream_options: { include_usage: true },
        });
        const completion = await stream.finalChatCompletion();
        reply = completion.choices[0]!.message.content!;
        cached.push(completion.usage!.prompt_tokens_details?.cached_tokens ?? 0);
      }
      messages.push({ role: 'assistant', content: reply }, { role: 'user', content: next });
    }
    expect(fake().prefills.map((p) => p.reused)).toEqual([false, true, true]);
    expect(cached[0]).toBe(0);
    expect(cached[1]).toBeGreaterThan(0);
    expect(cached[2]).toBeGreaterThan(cached[1]!);
  });

  it('with n = 2, the next turn continuing choice 0 reuses web-llm’s cache', async () => {
    const { client, fake } = await lantern();
    const messages: Message[] = [{ role: 'user', content: 'Hello there' }];
    const first = await client.chat.completions.create({ model: 'chat', messages, n: 2, seed: 3 });
    messages.push({ role: 'assistant', content: first.choices[0]!.message.content }, { role: 'user', content: 'More' });
    const second = await client.chat.completions.create({ model: 'chat', messages });
    expect(fake().prefills.map((p) => p.reused)).toEqual([false, false, true]);
    expect(second.usage!.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
  });

  it("never extends another key's conversation: web-llm starts afresh, and each key's cached_tokens count only its own", async () => {
    const { client, otherKey, fake } = await lantern();
    const other = await otherKey();
    const messages = await vaultConversation(client);
    // Key B sends key A's conversation back, as key A would: web-llm would extend it.
    const copied = await other.chat.completions.create({ model: 'chat', messages, seed: 2 });
    expect(copied.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
    // Key A's own next turn is prefilled whole too (web-llm holds one conversation: key B's now), then reuses again.
    const own = await client.chat.completions.create({ model: 'chat', messages, seed: 2 });
    expect(own.usage!.prompt_tokens).toBe(copied.usage!.prompt_tokens);
    messages.push({ role: 'assistant', content: own.choices[0]!.message.content }, { role: 'user', content: 'Thanks' });
    const next = await client.chat.completions.create({ model: 'chat', messages, seed: 3 });
    expect(next.usage!.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    expect(fake().prefills.map((p) => p.reused)).toEqual([false, false, false, true]);
  });

  it("runs one request at a time: another key's, arriving meanwhile, neither meets nor leaves a conversation", async () => {
    const { client, otherKey, calls, fake } = await lantern();
    const other = await otherKey();
    const messages = await vaultConversation(client);

    // Key A's next turn is held at web-llm's door (its `create`) until key B's request has reached the engine.
    const chat = fake().chat.completions as { create: (request: never) => Promise<unknown> };
    const create = chat.create;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let reached!: () => void;
    const atDoor = new Promise<void>((resolve) => (reached = resolve));
    chat.create = async (request) => {
      chat.create = create;
      reached();
      await gate;
      return create(request);
    };
    const own = client.chat.completions.create({ model: 'chat', messages, seed: 2 });
    await atDoor;
    const beside = other.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'Hi' }],
      seed: 3,
    });
    while (calls.length < 3) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    open();
    const [mine] = await Promise.all([own, beside]);

    // Key A's turn reused its own conversation, and says what web-llm did.
    const prefill = fake().prefills[1]!;
    expect(prefill.reused).toBe(true);
    expect(mine.usage!.prompt_tokens).toBe(prefill.filled);
    expect(mine.usage!.prompt_tokens_details?.cached_tokens).toBe(prefill.filled - prefill.ids.length);
    // Key B's copy of key A's conversation, sent next, reuses nothing of it.
    messages.push({ role: 'assistant', content: mine.choices[0]!.message.content }, { role: 'user', content: 'More' });
    const copied = await other.chat.completions.create({ model: 'chat', messages, seed: 4 });
    expect(copied.usage!.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
    expect(fake().prefills.at(-1)!.reused).toBe(false);
  });
});
