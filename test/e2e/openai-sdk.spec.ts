import { readFileSync } from 'node:fs';
import { expect, PORTABLE, test } from './browsers.ts';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * The official openai SDK, bundled into a page, against the real service worker and engine worker: in every project,
 * Firefox included (see browsers.ts).
 */
interface ChatReference {
  messages: { role: 'user'; content: string }[];
  input_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
}
const refs: ChatReference[] = JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8'));
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;

let key: string;

// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

/**
 * The webgpu project runs what differs there: the device found, one greedy chat streamed token by token against the
 * PyTorch reference, a prediction verified (several positions a pass, some masked), and embeddings. The rest is the
 * service worker's wire (models.list, the SDK's error classes) or the same decoding again, which the wasm project
 * covers; prefix-reuse.spec.ts runs n = 2 (two rows of GPU buffers) on WebGPU.
 */
const WASM_COVERS = 'the same wire on either device: the wasm project covers it';
/**
 * Firefox and WebKit run what the browser takes part in: the service worker's answers, streams, the decoders. What
 * happens inside the engine worker's generation (choices, stop sequences, speculation) is the same JavaScript there.
 */
const ENGINE_COVERS =
  "the engine's decoding, not the browser's: the wasm and llama.cpp projects cover it; the streamed test runs here";

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

test(
  'runs on the device the browser offers (WebGPU with an adapter, WebAssembly without), under the service worker',
  { tag: PORTABLE },
  async ({ tab, device, baseURL }) => {
    expect(await engineDevice(tab)).toBe(device);
    expect(await tab.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(
      `${baseURL}/service-worker.js`,
    );
  },
);

test('models.list returns the public models the profile serves', { tag: PORTABLE }, async ({ tab, engines }, info) => {
  test.skip(info.project.name === 'webgpu', WASM_COVERS);
  const ids = await tab.evaluate(async (k) => {
    const models = [];
    for await (const model of window.harness.client(k).models.list()) models.push(model.id);
    return models;
  }, key);
  // All six; on llama.cpp alone, all but the speech models (Whisper and a StyleTTS 2 are no llama.cpp models).
  const all = ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4', 'jade-mole-4', 'teal-finch-4', 'ochre-lark-4'];
  expect(ids).toEqual(engines === 'llama.cpp' ? all.slice(0, 4) : all);
});

test('chat, non-streamed: the greedy reply of the PyTorch reference', { tag: PORTABLE }, async ({ tab }, info) => {
  test.skip(info.project.name === 'webgpu', 'the streamed test below decodes the same reply on WebGPU');
  const completion = await tab.evaluate(
    async ({ k, messages }) =>
      window.harness.client(k).chat.completions.create({ model: 'crimson-falcon-4', messages, temperature: 0 }),
    { k: key, messages: count.messages },
  );
  expect(completion.choices[0]!.message.content).toBe(count.greedy_text);
  expect(completion.choices[0]!.finish_reason).toBe('stop');
  expect(completion.usage).toMatchObject({
    prompt_tokens: count.input_ids.length,
    completion_tokens: count.greedy_ids.length,
    total_tokens: count.input_ids.length + count.greedy_ids.length,
  });
});

test(
  'chat with a prediction: the same reply, in fewer passes where the engine speculates',
  { tag: PORTABLE },
  async ({ tab, engines, lanternBrowser }) => {
    test.skip(lanternBrowser !== 'chromium', ENGINE_COVERS);
    const completion = await tab.evaluate(
      async ({ k, messages, prediction }) =>
        window.harness.client(k).chat.completions.create({
          model: 'crimson-falcon-4',
          messages,
          temperature: 0,
          prediction: { type: 'content', content: prediction },
        }),
      { k: key, messages: count.messages, prediction: count.greedy_text },
    );
    expect(completion.choices[0]!.message.content).toBe(count.greedy_text);
    const accepted = completion.usage!.completion_tokens_details?.accepted_prediction_tokens;
    // wllama gives a pass's last position only: llama.cpp in browsers does not speculate.
    if (engines === 'llama.cpp') expect(accepted).toBeUndefined();
    else expect(accepted).toBeGreaterThan(count.greedy_ids.length / 2);
  },
);

test('chat, streamed with include_usage: token by token, usage at the end', { tag: PORTABLE }, async ({ tab }) => {
  const result = await tab.evaluate(
    async ({ k, messages }) => {
      const stream = window.harness.client(k).chat.completions.stream({
        model: 'indigo-owl-4',
        messages,
        temperature: 0,
        stream_options: { include_usage: true },
      });
      const deltas: string[] = [];
      stream.on('content', (delta) => deltas.push(delta));
      const final = await stream.finalChatCompletion();
      return { deltas, content: final.choices[0]!.message.content, usage: final.usage };
    },
    { k: key, messages: count.messages },
  );
  expect(result.content).toBe(count.greedy_text);
  expect(result.deltas.join('')).toBe(count.greedy_text);
  expect(result.deltas).toHaveLength(count.greedy_ids.length - 1);
  expect(result.usage?.completion_tokens).toBe(count.greedy_ids.length);
});

test('chat with n = 2 and a stop sequence', { tag: PORTABLE }, async ({ tab, lanternBrowser }, info) => {
  test.skip(info.project.name === 'webgpu', `${WASM_COVERS}; prefix-reuse.spec.ts runs n = 2 on WebGPU`);
  test.skip(lanternBrowser !== 'chromium', ENGINE_COVERS);
  const choices = await tab.evaluate(
    async ({ k, messages }) => {
      const completion = await window.harness.client(k).chat.completions.create({
        model: 'indigo-owl-4',
        messages,
        temperature: 0,
        n: 2,
        stop: [', 5'],
      });
      return completion.choices.map((c) => [c.index, c.message.content, c.finish_reason]);
    },
    { k: key, messages: count.messages },
  );
  expect(choices).toEqual([
    [0, '1, 2, 3, 4', 'stop'],
    [1, '1, 2, 3, 4', 'stop'],
  ]);
});

test('embeddings: the SDK default (base64) decodes to the float vectors', { tag: PORTABLE }, async ({ tab }) => {
  const result = await tab.evaluate(async (k) => {
    const client = window.harness.client(k);
    const input = ['The cat sat on the mat.', 'hello world'];
    const base64 = await client.embeddings.create({ model: 'jade-mole-4', input });
    const float = await client.embeddings.create({ model: 'jade-mole-4', input, encoding_format: 'float' });
    return { base64: base64.data.map((d) => d.embedding), float: float.data.map((d) => d.embedding) };
  }, key);
  expect(result.float).toHaveLength(2);
  expect(result.float[0]).toHaveLength(64);
  expect(result.base64).toEqual(result.float);
});

test('errors arrive as the SDK error classes', { tag: PORTABLE }, async ({ tab }, info) => {
  test.skip(info.project.name === 'webgpu', WASM_COVERS);
  const errors = await tab.evaluate(async (k) => {
    const { client, describeError } = window.harness;
    const name = async (promise: Promise<unknown>) => {
      try {
        await promise;
        return 'no error';
      } catch (error) {
        return describeError(error);
      }
    };
    const hello = [{ role: 'user' as const, content: 'Hello' }];
    return {
      auth: await name(client('lt_not-a-key-of-this-origin-000').models.list()),
      notFound: await name(client(k).chat.completions.create({ model: 'gpt-4o-2024-08-06', messages: hello })),
      badRequest: await name(
        client(k).chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 3 }),
      ),
      // Five at once against the default limit of four concurrent generations per key: one is refused.
      rateLimit: await Promise.all(
        Array.from({ length: 5 }, () =>
          name(
            client(k).chat.completions.create({
              model: 'crimson-falcon-4',
              messages: hello,
              max_tokens: 8,
              logit_bias: { 0: -100, 2: -100 },
            }),
          ),
        ),
      ),
    };
  }, key);
  expect(errors.auth).toBe('AuthenticationError invalid_api_key');
  expect(errors.notFound).toBe('NotFoundError model_not_found');
  expect(errors.badRequest).toBe('BadRequestError invalid_value');
  expect(errors.rateLimit.filter((e) => e === 'RateLimitError rate_limit_exceeded')).toHaveLength(1);
  expect(errors.rateLimit.filter((e) => e === 'no error')).toHaveLength(4);
});
