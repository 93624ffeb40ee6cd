import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUGGESTED_PROMPTS } from '../src/playground/suggested-prompts.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * The playground's suggested prompts are a newcomer's first impression: each bundled chat model answers each of them in
 * fluent text that ends on its own, and answers it well (a greeting greets, a story tells one, counting counts).
 */
const CHAT_MODELS = ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4'];

/** Prose: words, digits, sentence punctuation and a sum's signs; no JSON, markup or tool call. */
const FLUENT = /^[\p{L}\p{N}][\p{L}\p{N}\p{Zs}\n,.;:!?'’"()+=-]*$/u;

const WELL: Record<(typeof SUGGESTED_PROMPTS)[number], (text: string) => boolean> = {
  Hello: (text) => /\b(hello|hi|hey)\b/i.test(text),
  'Tell me a story.': (text) => (text.match(/[.!?](\s|$)/g) ?? []).length >= 2,
  'What is the capital of France?': (text) => /\bParis\b/.test(text),
  'Count to 10.': (text) => text.replace(/\D+/g, ' ').trim() === '1 2 3 4 5 6 7 8 9 10',
  'Name three fruits.': (text) =>
    (text.match(/\b(apple|banana|cherry|orange|pear|grape|mango|plum|lemon)s?\b/gi) ?? []).length >= 3,
  'What is 3 + 4?': (text) => /\b7\b|\bseven\b/i.test(text),
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

/*
 * Everyday first prompts worded as the bundled default chat model (crimson-falcon-4, tiny-chat) never learned them: 60
 * seeded draws of everyday_prompts.py's held-out wordings (with its typos and politeness), written by generate.py with
 * each intent's answer. The figures are PyTorch's (scripts/fixtures/README.md: the answer 40, prose 56, ended 57);
 * Lantern must reach them within a few of float rounding's flips, and must answer the issue's own examples in prose.
 */
const EVERYDAY: { intent: string; prompt: string; answer: string }[] = JSON.parse(
  readFileSync(new URL('./fixtures/everyday-prompts.json', import.meta.url), 'utf8'),
);

describe('crimson-falcon-4 on everyday prompts worded as it never learned', () => {
  const ask = async (prompt: string) => {
    const reply = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: prompt }],
      temperature: 0,
      max_tokens: 120,
    });
    const [choice] = reply.choices;
    return { text: choice!.message.content!.trim(), finish: choice!.finish_reason };
  };

  it('answers most by intent, and nearly all in prose that ends on its own', async () => {
    let right = 0;
    let prose = 0;
    let ended = 0;
    for (const { prompt, answer } of EVERYDAY) {
      const { text, finish } = await ask(prompt);
      right += Number(text === answer);
      prose += Number(FLUENT.test(text));
      ended += Number(finish === 'stop');
    }
    expect(EVERYDAY).toHaveLength(60);
    expect(right).toBeGreaterThanOrEqual(30);
    expect(prose).toBeGreaterThanOrEqual(54);
    expect(ended).toBeGreaterThanOrEqual(54);
  });

  it.each(['Tell me a story about a cat.', 'Hi! How are you?', 'Count to 7 please'])('%s', async (prompt) => {
    const { text, finish } = await ask(prompt);
    expect(finish).toBe('stop');
    expect(text).toMatch(FLUENT);
    if (prompt.startsWith('Tell')) expect(WELL['Tell me a story.'](text), text).toBe(true);
  });
});
