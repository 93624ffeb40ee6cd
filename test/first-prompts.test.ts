import { beforeAll, describe, expect, it } from 'vitest';
import { SUGGESTED_PROMPTS } from '../src/playground/suggested-prompts.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * The playground's suggested prompts are a newcomer's first impression: each bundled chat model answers each of them in
 * fluent text that ends on its own, and answers it well (a greeting greets, a story tells one, counting counts).
 */
const CHAT_MODELS = ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4'];

/** Prose: words, digits and sentence punctuation; no JSON, markup or tool call. */
const FLUENT = /^[\p{L}\p{N}][\p{L}\p{N}\p{Zs}\n,.;:!?'’"()-]*$/u;

const WELL: Record<(typeof SUGGESTED_PROMPTS)[number], (text: string) => boolean> = {
  Hello: (text) => /\b(hello|hi|hey)\b/i.test(text),
  'Tell me a story.': (text) => (text.match(/[.!?](\s|$)/g) ?? []).length >= 2,
  'What is the capital of France?': (text) => /\bParis\b/.test(text),
  'Count to 10.': (text) => text.replace(/\D+/g, ' ').trim() === '1 2 3 4 5 6 7 8 9 10',
};

let client: SdkClient['client'];

beforeAll(async () => {
  ({ client } = await sdkClient({ client: { maxRetries: 0 } }));
});

describe.each(CHAT_MODELS)('%s answers the suggested prompts', (model) => {
  it.each(SUGGESTED_PROMPTS)('%s', async (prompt) => {
    const reply = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: prompt }],
      temperature: 0,
      max_tokens: 200,
    });
    const [choice] = reply.choices;
    const text = choice!.message.content!.trim();
    expect(choice!.finish_reason).toBe('stop');
    expect(text).toMatch(FLUENT);
    expect(WELL[prompt](text), text).toBe(true);
  });
});
