import { BadRequestError } from 'openai';
import { describe, expect, it } from 'vitest';
import type { ModelProfile, TransformersCandidate } from '../src/index.ts';
import { BUNDLED_MODELS, reference, sdkClient, type ChatReference } from './support/lantern.ts';

/**
 * A transformers.js candidate's `contextWindow` caps its model's own (`max_position_embeddings`: 1,024 tokens for the
 * bundled tiny-chat), as the registry's Qwen3 candidates cap Qwen3's 40,960 at 8,192.
 */
const count = reference<ChatReference[]>('tiny-chat').find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;
const tinyChat = (contextWindow?: number): TransformersCandidate => ({
  engine: 'transformers',
  model: `${BUNDLED_MODELS}/tiny-chat`,
  dtype: 'fp32',
  device: 'cpu',
  ...(contextWindow !== undefined && { contextWindow }),
});
const only = (candidate: TransformersCandidate): ModelProfile => ({
  'tiny-chat': { task: 'chat', created: 0, candidates: [candidate] },
});

describe("a candidate's context window", () => {
  it('refuses a prompt and max_tokens over it, naming it, where the model itself would take them', async () => {
    const window = count.input_ids.length + 8;
    const asker = async (candidate: TransformersCandidate) => {
      const { client } = await sdkClient({ profile: only(candidate), client: { maxRetries: 0 } });
      return (max_tokens: number) =>
        client.chat.completions
          .create({ model: 'tiny-chat', messages: count.messages, max_tokens, temperature: 0 })
          .catch((error: unknown) => error as BadRequestError);
    };

    const capped = await asker(tinyChat(window));
    await expect(capped(8)).resolves.toMatchObject({ model: 'tiny-chat', choices: [{ finish_reason: 'length' }] });
    const refused = (await capped(9)) as BadRequestError;
    expect(refused).toBeInstanceOf(BadRequestError);
    expect(refused).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'messages' });
    expect(refused.message).toContain(`maximum context length is ${window} tokens`);

    // Without one, or with one over the model's own, the model's own applies: 1,024 tokens.
    for (const candidate of [tinyChat(), tinyChat(4096)]) {
      const ask = await asker(candidate);
      await expect(ask(window)).resolves.toMatchObject({ model: 'tiny-chat' });
      expect(((await ask(1024)) as BadRequestError).message).toContain('maximum context length is 1024 tokens');
    }
  });
});
