import type { Page, Worker } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { expect, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/**
 * wllama 2's own sampler drawing greedy plans with a bias and penalties (WLLAMA2_SAMPLING), in Chromium, on the bundled
 * chat model's GGUF (llama.cpp alone): each reply is the one the logits path gives the same request (a request for
 * logprobs takes it), token for token, and no distribution crosses from wllama's worker for it, as the actions that
 * worker runs show.
 */
const story = (
  JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8')) as {
    messages: { content: string }[];
    greedy_ids: number[];
    greedy_text: string;
  }[]
).find((r) => r.messages.at(-1)!.content === 'Tell me a story.')!;
const { eos_token_id: EOS } = JSON.parse(readFileSync('public/models/tiny-chat/config.json', 'utf8')) as {
  eos_token_id: number;
};

test.skip(({ device }) => device !== 'wasm', "wllama's sampler is WebAssembly's on either project: runs on wasm");

/** The actions wllama's worker runs (its `wllama.action` messages, by name): each call gives those since the last. */
async function countActions(page: Page): Promise<() => Promise<Record<string, number>>> {
  // wllama's worker: the engine worker's, started from a blob of wllama's code, which answers messages.
  const listed = page.workers();
  const isWllama = (worker: Worker) =>
    worker.url().startsWith('blob:') && worker.evaluate(() => typeof self.onmessage === 'function');
  let found: Worker | undefined;
  for (const worker of listed) if (await isWllama(worker)) found = worker;
  expect(found, `wllama's worker among ${listed.map((w) => w.url()).join(', ')}`).toBeDefined();
  const worker = found!;
  await worker.evaluate(() => {
    const scope = self as unknown as { onmessage: (e: MessageEvent) => unknown; actions: Record<string, number> };
    const handle = scope.onmessage;
    scope.actions = {};
    scope.onmessage = (e) => {
      const data = e.data as { verb?: string; args?: unknown[] } | undefined;
      if (data?.verb === 'wllama.action')
        scope.actions[String(data.args![0])] = (scope.actions[String(data.args![0])] ?? 0) + 1;
      return handle(e);
    };
  });
  return () =>
    worker.evaluate(() => {
      const scope = self as unknown as { actions: Record<string, number> };
      const counted = scope.actions;
      scope.actions = {};
      return counted;
    });
}

test("wllama's sampler draws greedy plans with logit bias and penalties as the logits path does", async ({ tab }) => {
  await openHarness(tab, 'engines=llama.cpp');
  const key = await issueKey(tab);
  const ask = (request: Record<string, unknown>) =>
    tab.evaluate(
      async ({ k, body }) => {
        const reply = await window.harness.client(k).chat.completions.create({
          model: 'crimson-falcon-4',
          messages: [{ role: 'user', content: 'Tell me a story.' }],
          temperature: 0,
          max_tokens: 64,
          ...body,
        });
        const [choice] = reply.choices;
        return { text: choice!.message.content, finish: choice!.finish_reason };
      },
      { k: key, body: request },
    );
  const plain = await ask({});
  expect(story.greedy_text.startsWith(plain.text!)).toBe(true);
  const actions = await countActions(tab as Page);

  const requests = [
    { logit_bias: { [story.greedy_ids[0]!]: -100, [story.greedy_ids[3]!]: 2 } },
    // The tiny model is sure of its story: only strong penalties move it.
    { presence_penalty: 2, frequency_penalty: 2 },
    { logit_bias: { [story.greedy_ids[5]!]: -100 }, frequency_penalty: 1 },
  ];
  for (const request of requests) {
    const native = await ask(request);
    const drawn = await actions();
    expect(drawn.get_logits ?? 0).toBe(0);
    expect(drawn.sampling_sample).toBe(drawn.decode);
    // The same request on the logits path: every token's distribution read from wllama's worker.
    const logits = await ask({ ...request, logprobs: true });
    expect(logits).toEqual(native);
    expect(native.text).not.toBe(plain.text);
    expect((await actions()).get_logits).toBeGreaterThan(0);
  }
  // Any token is biased, the end token included: an empty reply.
  expect(await ask({ logit_bias: { [EOS]: 100 } })).toEqual({ text: '', finish: 'stop' });
  expect((await actions()).get_logits ?? 0).toBe(0);
});
