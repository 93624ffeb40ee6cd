import { expect, test, type Page } from '@playwright/test';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * A real web-llm model, downloaded from the Hugging Face hub and run on a real GPU. It runs only where both exist;
 * elsewhere (CI, SwiftShader, no network) it is skipped, and the reason is printed.
 */
async function huggingFaceReachable(): Promise<boolean> {
  try {
    const response = await fetch('https://huggingface.co/api/models/mlc-ai/Qwen3-0.6B-q4f32_1-MLC', {
      signal: AbortSignal.timeout(5000),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** Skips the test unless this is the webgpu project on a real GPU with the hub reachable; opens the default profile. */
async function realGPU(page: Page, project: string): Promise<void> {
  test.skip(project !== 'webgpu', 'web-llm needs WebGPU: it runs in the webgpu project only');
  const network = await huggingFaceReachable();
  if (!network)
    console.log('[web-llm test] skipped: huggingface.co is not reachable from here, so no model can be downloaded');
  test.skip(!network, 'huggingface.co is not reachable: no web-llm model can be downloaded');

  await openHarness(page, 'profile=default');
  await engineDevice(page);
  const adapter = await page.evaluate(() => window.harness.lantern.device!.adapter);
  const software = !adapter || adapter.isFallbackAdapter;
  if (software) console.log('[web-llm test] skipped: the WebGPU adapter is a fallback (software) one, not a GPU');
  test.skip(
    software,
    'the WebGPU adapter is a fallback (software) one, such as SwiftShader: a real model would take hours',
  );
  test.setTimeout(20 * 60_000);
}

test('a real web-llm model answers through /v1', async ({ page }, info) => {
  await realGPU(page, info.project.name);
  const key = await issueKey(page);
  const reply = await page.evaluate(async (k) => {
    const completion = await window.harness.client(k).chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Say hello in one word.' }],
      max_tokens: 16,
    });
    return completion.choices[0]!.message.content;
  }, key);
  expect(reply?.length).toBeGreaterThan(0);
  const progress = await page.evaluate(() => window.harness.progress.filter((p) => p.model === 'crimson-falcon-4'));
  expect(progress.find((p) => p.status === 'ready')).toMatchObject({ resolved: expect.stringMatching(/^web-llm:/) });
  // web-llm's three passes (fetch, load from cache, compile shaders) as one rising progress, each phase named.
  const totals = progress.flatMap((p) => (p.status === 'progress_total' ? [p.progress] : []));
  expect(totals).toEqual([...totals].sort((a, b) => a - b));
  expect(totals.at(-1)).toBe(100);
  const phases = progress.flatMap((p) => (p.status === 'initiate' ? [p.file] : []));
  expect(phases).toEqual(['fetch-weights', 'load-weights', 'compile-shaders']);

  // What the adapter sends web-llm is what the real library takes (the fake follows it in Node).
  const checks = await page.evaluate(async (k) => {
    const client = window.harness.client(k);
    const ask = (body: Record<string, unknown>) =>
      client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Name a colour.' }],
        max_tokens: 8,
        reasoning_effort: 'none',
        ...body,
      } as never);
    // llama.cpp's random seed, -1: web-llm refuses a negative one; Lantern sends the same residue, reproducibly.
    const seeded = [await ask({ seed: -1, temperature: 1 }), await ask({ seed: -1, temperature: 1 })];
    // A system message mid-conversation: web-llm takes one, first.
    const system = await ask({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'How are you?' },
      ],
    });
    // Thinking off: max_tokens bounds the reply, not web-llm's empty thinking block.
    const short = await ask({ max_tokens: 2, messages: [{ role: 'user', content: 'Count from 1 to 20.' }] });
    // Greedy log probabilities at temperature 1, exact bytes, never -Infinity (null on the wire).
    const logprobs = await ask({
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
      messages: [{ role: 'user', content: 'Write the word café.' }],
    });
    // A prompt past web-llm's prebuilt 4,096 tokens: the candidate's window is given as chat options.
    const long = await ask({ messages: [{ role: 'user', content: `${'lantern '.repeat(4500)}\nSay ok.` }] });
    return { seeded, system, short, logprobs, long };
  }, key);
  expect(checks.seeded[0]!.choices[0]!.message.content).toBe(checks.seeded[1]!.choices[0]!.message.content);
  expect(checks.system.choices[0]!.message.content?.length).toBeGreaterThan(0);
  expect(checks.short.usage!.completion_tokens).toBe(2);
  const entries = checks.logprobs.choices[0]!.logprobs!.content!;
  for (const entry of entries.flatMap((e) => [e, ...e.top_logprobs])) expect(typeof entry.logprob).toBe('number');
  expect(entries[0]!.logprob).toBeLessThan(0); // at temperature 1, not web-llm's 0
  const bytes = Uint8Array.from(entries.flatMap((e) => e.bytes ?? []));
  expect(new TextDecoder().decode(bytes)).toBe(checks.logprobs.choices[0]!.message.content);
  expect(checks.long.usage!.prompt_tokens).toBeGreaterThan(4096);
});

/**
 * web-llm's own prefix reuse through Lantern, on a real GPU: the next turn of a conversation is prefilled from web-llm's
 * KV cache (usage reports the cached tokens), and its time to first token is printed beside that of the same request
 * after another conversation took the cache (a full prefill). Only printed: timing is for the bench, not a test.
 */
test('a real web-llm model reuses its KV cache on the next turn of a conversation', async ({ page }, info) => {
  await realGPU(page, info.project.name);
  const key = await issueKey(page);
  const result = await page.evaluate(async (k) => {
    type Message = { role: 'system' | 'user' | 'assistant'; content: string };
    const client = window.harness.client(k);
    const history = Array.from({ length: 120 }, (_, i) => `Fact ${i}: the lantern number ${i} is lit.`).join(' ');
    const timed = async (messages: Message[], maxTokens = 24) => {
      const started = performance.now();
      let first = NaN;
      let text = '';
      let usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } | undefined;
      const stream = await client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages,
        max_tokens: maxTokens,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of stream) {
        const piece = chunk.choices[0]?.delta.content;
        if (piece && Number.isNaN(first)) first = performance.now() - started;
        text += piece ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      return { first, text, usage: usage! };
    };
    const messages: Message[] = [
      { role: 'system', content: `Remember these facts. ${history}` },
      { role: 'user', content: 'Which lantern is number 7? Answer in a few words.' },
    ];
    // Room to end on its own: web-llm does not keep a reply cut by max_tokens.
    const turn1 = await timed(messages, 256);
    messages.push({ role: 'assistant', content: turn1.text }, { role: 'user', content: 'And number 8?' });
    const reused = await timed(messages);
    await timed([{ role: 'user', content: 'Say hello.' }]); // another conversation: web-llm's cache now holds it
    const recomputed = await timed(messages);
    return { turn1, reused, recomputed };
  }, key);
  console.log(
    `[web-llm reuse] second turn of ${result.reused.usage.prompt_tokens} prompt tokens, first token: ` +
      `${result.reused.first.toFixed(0)} ms with web-llm's cache ` +
      `(${result.reused.usage.prompt_tokens_details?.cached_tokens} cached), ` +
      `${result.recomputed.first.toFixed(0)} ms prefilled from scratch`,
  );
  expect(result.reused.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(result.turn1.usage.prompt_tokens);
  expect(result.recomputed.usage.prompt_tokens_details).toBeUndefined();
  expect(result.reused.usage.prompt_tokens).toBeGreaterThan(result.turn1.usage.prompt_tokens);
});
