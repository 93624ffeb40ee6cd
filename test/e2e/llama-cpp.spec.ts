import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { HELLO_REPLY, issueKey, openHarness } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * llama.cpp in each browser (wllama in the engine worker, WebAssembly): the bundled models' GGUF copies serve chat,
 * a streamed reply, a JSON schema and embeddings, as transformers.js serves them from the same weights. The whole
 * shared suite runs on llama.cpp in Chromium (the `llama.cpp` project); this is the part every browser runs.
 */

/** A greedy hello, a streamed one, a city under a JSON schema, and two embeddings, through the SDK in the page. */
function answers(tab: Tab, key: string) {
  return tab.evaluate(async (k) => {
    const client = window.harness.client(k);
    const hello = [{ role: 'user' as const, content: 'Hello' }];
    const reply = await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, temperature: 0 });
    let streamed = '';
    const stream = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: hello,
      temperature: 0,
      stream: true,
    });
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    const json = await client.chat.completions.create({
      model: 'indigo-owl-4',
      messages: [{ role: 'user', content: 'Name a city.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: {
            type: 'object',
            properties: { city: { type: 'string', maxLength: 20 } },
            required: ['city'],
            additionalProperties: false,
          },
        },
      },
    });
    // wllama holds one sequence: n choices are generated in turn, each seeded from the request's seed and its index.
    const sampled = async () =>
      (
        await client.chat.completions.create({
          model: 'crimson-falcon-4',
          messages: [{ role: 'user', content: 'Tell me a story.' }],
          temperature: 1.5,
          seed: 7,
          n: 3,
          max_tokens: 12,
        })
      ).choices.map((c) => [c.index, c.message.content]);
    const seeded = [await sampled(), await sampled()];
    const embedded = await client.embeddings.create({ model: 'jade-mole-4', input: ['a cat', 'a lantern'] });
    // Where the loaded chat model runs, as wllama reported it: lantern.models() by key, /v1/models by public name.
    const chosen = (await window.harness.lantern.models()).find((m) => m.id === 'crimson-falcon-4')!;
    const card = (await client.models.retrieve('crimson-falcon-4')) as { runs_on?: Record<string, unknown> };
    return {
      runsOn: Object.values(chosen.runsOn),
      runsOnWire: Object.values(card.runs_on ?? {}),
      reply: reply.choices[0]!.message.content,
      servedBy: (reply as { served_by?: string }).served_by ?? null,
      streamed,
      city: JSON.parse(json.choices[0]!.message.content!) as unknown,
      dimensions: embedded.data.map((d) => d.embedding.length),
      seeded,
    };
  }, key);
}

const EXPECTED = {
  runsOn: [{ device: 'wasm', threads: 1 }],
  runsOnWire: [{ device: 'wasm', threads: 1 }],
  reply: HELLO_REPLY,
  streamed: HELLO_REPLY,
  city: { city: expect.any(String) },
  dimensions: [64, 64],
};

test(
  'llama.cpp in this browser: the GGUF copies answer chat, streams, JSON schemas and embeddings',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', 'llama.cpp runs on WebAssembly on either project: runs on wasm');
    await openHarness(tab, 'engines=llama.cpp');
    const key = await issueKey(tab);
    const answered = await answers(tab, key);
    expect(answered).toMatchObject(EXPECTED);
    // n = 3 on one sequence: three choices, in order, and the same again for the same seed.
    const [first, again] = answered.seeded;
    expect(first!.map(([index]) => index)).toEqual([0, 1, 2]);
    expect(again).toEqual(first);
  },
);

test("llama.cpp's multi-threaded build where the page is cross-origin isolated", async ({ tab }, info) => {
  test.skip(info.project.name !== 'wasm', 'SharedArrayBuffer is the browser’s, the same on either Chromium project');
  const server = await startServer(workerPort(4197), {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
  });
  try {
    await openHarness(tab, 'engines=llama.cpp&threads=2', server.origin);
    expect(await tab.evaluate(() => self.crossOriginIsolated)).toBe(true);
    const key = await issueKey(tab);
    // wllama's multi-threaded build, on the candidate's threads: what loaded says so.
    const threaded = [{ device: 'wasm', threads: 2 }];
    expect(await answers(tab, key)).toMatchObject({ ...EXPECTED, runsOn: threaded, runsOnWire: threaded });
  } finally {
    await server.close();
  }
});
