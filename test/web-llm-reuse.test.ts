import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/index.ts';
import { WebLLMChatModel } from '../src/engines/web-llm/web-llm-chat-model.ts';
import { fakeCreate, type FakeWebLLM } from './support/fake-web-llm.ts';
import { sdkClient } from './support/lantern.ts';

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
    },
  });
  const { client } = await sdkClient({ engine });
  await client.models.list();
  return { client, fake: () => create.engines[0]! as FakeWebLLM };
}

type Message = OpenAI.ChatCompletionMessageParam;

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
});
