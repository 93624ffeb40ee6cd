import { expect, test, type LanternOptions } from './browsers.ts';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * Prefix reuse in the engine worker, through the service worker and the openai SDK: on wasm its KV caches are CPU
 * tensors, on WebGPU GPU buffers (handed to the next turn whole, or read back to copy a shared prefix). Every answer
 * must equal the one of the same model with reuse off (`?scratch=`), on the same device.
 */
// The two tests share a profile, and one harness (with the model whose reuse is off): one first visit, one load.
test.use({ profileScope: 'shared' });
const QUERY = 'scratch=scratch-chat';

const SYSTEM =
  'You are a careful assistant. You answer in short sentences, you never invent facts, and when a question is ' +
  'unclear you say so and ask for what is missing. You write numbers as digits.';

test('a conversation and a shared system prompt reuse cached prefixes, answering exactly as without', async ({
  page,
}, info) => {
  await openHarness(page, QUERY);
  expect(await engineDevice(page)).toBe((info.project.use as LanternOptions).device);
  const key = await issueKey(page);
  const runs = await page.evaluate(
    async ({ k, system }) => {
      type Message = { role: 'system' | 'user' | 'assistant'; content: string };
      const client = window.harness.client(k);
      const ask = async (model: string, messages: Message[], n = 1) => {
        const completion = await client.chat.completions.create({ model, messages, temperature: 0, max_tokens: 24, n });
        return { texts: completion.choices.map((c) => c.message.content!), usage: completion.usage! };
      };
      const both = async (messages: Message[], n = 1) => ({
        reuse: await ask('crimson-falcon-4', messages, n),
        scratch: await ask('scratch-chat', messages, n),
      });
      const messages: Message[] = [
        { role: 'system', content: system },
        { role: 'user', content: 'Count to 10.' },
      ];
      const first = await both(messages);
      messages.push({ role: 'assistant', content: first.reuse.texts[0]! }, { role: 'user', content: 'Spell cat.' });
      const second = await both(messages);
      // Another conversation with the same system prompt, two choices: the shared prefix is copied into both rows.
      const other = await both(
        [
          { role: 'system', content: system },
          { role: 'user', content: 'Name three fruits.' },
        ],
        2,
      );
      return [first, second, other];
    },
    { k: key, system: SYSTEM },
  );
  for (const { reuse, scratch } of runs) {
    expect(reuse.texts).toEqual(scratch.texts);
    expect(reuse.usage.prompt_tokens).toBe(scratch.usage.prompt_tokens);
    expect(reuse.usage.completion_tokens).toBe(scratch.usage.completion_tokens);
    expect(scratch.usage.prompt_tokens_details).toBeUndefined();
  }
  const [first, second, other] = runs;
  // The second turn started from the first turn's prompt and reply; the other conversation from the system prompt.
  expect(second!.reuse.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThanOrEqual(
    first!.reuse.usage.prompt_tokens,
  );
  expect(other!.reuse.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(16);
});

test("another key of the origin reuses nothing of a key's prompts (issue 41), and the key itself still does", async ({
  page,
}, info) => {
  // Which key may reuse what is decided before the cache is read; the GPU buffers are the test above's.
  test.skip(
    info.project.name === 'webgpu',
    'the caches are kept per key the same on either device: the wasm project covers it',
  );
  await openHarness(page, QUERY);
  const [a, b] = [await issueKey(page, 'a'), await issueKey(page, 'b')];
  const cached = await page.evaluate(
    async ({ keys: [first, second], system }) => {
      const messages = [
        { role: 'system' as const, content: system },
        { role: 'user' as const, content: 'Count to 10.' },
      ];
      const ask = async (k: string) => {
        const client = window.harness.client(k);
        const completion = await client.chat.completions.create({
          model: 'crimson-falcon-4',
          messages,
          temperature: 0,
          max_tokens: 8,
        });
        return completion.usage!.prompt_tokens_details?.cached_tokens ?? 0;
      };
      // Key A's prompt, then key B's identical one, then key A's again, twice.
      return [await ask(first), await ask(second), await ask(first), await ask(first)];
    },
    { keys: [a, b] as const, system: `${SYSTEM} The PIN of the vault is 4829.` },
  );
  expect(cached[1]).toBe(0);
  expect(cached[3]).toBeGreaterThan(16);
  // Key B's prompt left key A's cached where the engine holds several (wllama, llama.cpp in browsers, holds one
  // sequence: B's prompt took it).
  if ((info.project.use as LanternOptions).engines !== 'llama.cpp') expect(cached[2]).toBeGreaterThan(16);
});
