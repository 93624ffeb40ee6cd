import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { HELLO_REPLY, issueKey, openHarness } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * Offline from the first visit (issue 42): a visitor opens the app, Lantern says it is ready to work offline, and the
 * network goes before any model ran. A reload then starts Lantern from the caches alone, and chat streams and
 * embeddings answer: the page, the workers, this device's onnxruntime-web build and the bundled models were all stored
 * in the background of the first visit.
 */

/** A streamed greedy "Hello" and two embeddings, through the SDK in the page. */
function chatAndEmbed(tab: Tab, key: string): Promise<{ streamed: string; chunks: number; vectors: number }> {
  return tab.evaluate(async (k) => {
    const client = window.harness.client(k);
    const stream = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Hello' }],
      temperature: 0,
      stream: true,
    });
    let streamed = '';
    let chunks = 0;
    for await (const chunk of stream) {
      streamed += chunk.choices[0]?.delta.content ?? '';
      chunks += 1;
    }
    const embedded = await client.embeddings.create({ model: 'jade-mole-4', input: ['offline', 'first visit'] });
    return { streamed, chunks, vectors: embedded.data.length };
  }, key);
}

test(
  'a first visit that runs no model is enough: once offlineReady resolves, a reload without the network streams a chat and embeds',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(
      info.project.name === 'webgpu',
      'the precache is the same on either device: the wasm project covers it; onnx-runtime.spec.ts reloads offline on WebGPU',
    );
    const server = await startServer(workerPort(4194));
    try {
      await openHarness(tab, '', server.origin);
      const key = await issueKey(tab);
      // As soon as Lantern says so; no model has run.
      const status = await tab.evaluate(() => window.harness.lantern.offlineReady);
      console.log(`[offline] first visit: ${JSON.stringify(status)}`);
      expect(status.ready).toBe(true);
      expect(status.models).toEqual(expect.arrayContaining(['crimson-falcon-4', 'jade-mole-4']));
      expect(await tab.evaluate(() => window.harness.runs.length)).toBe(0);

      await server.close();
      await expect(fetch(`${server.origin}/`)).rejects.toThrow(); // the network really is gone
      await tab.reload();
      await tab.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });
      const answered = await chatAndEmbed(tab, key);
      expect(answered.streamed).toBe(HELLO_REPLY);
      expect(answered.chunks).toBeGreaterThan(2);
      expect(answered.vectors).toBe(2);
      // Offline, the status is still ready: everything it needs is stored.
      expect((await tab.evaluate(() => window.harness.lantern.offlineReady)).ready).toBe(true);
    } finally {
      await server.close();
    }
  },
);

test(
  "onnxruntime-web's runtime not stored yet, the network gone: the chain goes on to llama.cpp's GGUF copy, which answers",
  { tag: PORTABLE },
  async ({ tab, engines }) => {
    test.skip(engines === 'llama.cpp', 'a profile of llama.cpp alone never needs onnxruntime-web');
    const server = await startServer(workerPort(4198));
    try {
      server.withholdRuntime = true;
      await openHarness(tab, '', server.origin);
      const key = await issueKey(tab);
      const answered = await tab.evaluate(async (k) => {
        const { data, response } = await window.harness
          .client(k)
          .chat.completions.create({
            model: 'crimson-falcon-4',
            messages: [{ role: 'user', content: 'Hello' }],
            temperature: 0,
          })
          .withResponse();
        return { content: data.choices[0]!.message.content, backend: response.headers.get('x-lantern-backend') };
      }, key);
      expect(answered).toEqual({ content: HELLO_REPLY, backend: 'llama.cpp:tiny-chat/gguf/tiny-chat-f32.gguf' });
    } finally {
      await server.close();
    }
  },
);

test(
  'a network that goes before the runtime is stored: a clear retryable error, and the download resumes once it is back',
  { tag: PORTABLE },
  async ({ tab, engines }, info) => {
    // The runtime stored apart is onnxruntime-web's; llama.cpp's (wllama's binary, 2.7 MB) is precached with the app.
    test.skip(engines === 'llama.cpp', "llama.cpp's runtime is precached with the app: nothing is stored apart");
    test.skip(info.project.name === 'webgpu', 'the same retry on either device: the wasm project covers it');
    const server = await startServer(workerPort(4195));
    try {
      server.withholdRuntime = true; // onnxruntime-web's binary answers 503, as an unreachable network would
      // transformers.js' candidates alone: the bundled chains end with llama.cpp's GGUF copies, whose runtime is
      // precached with the app, and which answer (as the next test shows) when onnxruntime-web's is not stored.
      await openHarness(tab, 'engines=transformers', server.origin);
      const key = await issueKey(tab);
      const status = await tab.evaluate(() => window.harness.lantern.offlineStatus());
      expect(status.ready).toBe(false);
      expect(status.reason).toMatch(/runtime for this device .* is still being stored/);
      const failed = await tab.evaluate(async (k) => {
        try {
          await window.harness.client(k).chat.completions.create({
            model: 'crimson-falcon-4',
            messages: [{ role: 'user', content: 'Hello' }],
          });
          return 'answered';
        } catch (error) {
          return { status: (error as { status?: number }).status, message: (error as Error).message };
        }
      }, key);
      console.log(`[offline] runtime withheld: ${JSON.stringify(failed)}`);
      expect(failed).toMatchObject({ status: 503, message: expect.stringMatching(/Connect to the network/) });

      server.withholdRuntime = false;
      const answered = await chatAndEmbed(tab, key); // the next call downloads it
      expect(answered.streamed).toBe(HELLO_REPLY);
      expect((await tab.evaluate(() => window.harness.lantern.offlineReady)).ready).toBe(true);
    } finally {
      await server.close();
    }
  },
);
