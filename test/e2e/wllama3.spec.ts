import { expect, test } from '@playwright/test';
import { HELLO_REPLY } from './harness-page.ts';

/**
 * llama.cpp on wllama 3 in Chromium (wllama3-runtime.ts in a page of its own, wllama3-page.ts): which device it is
 * given, and a plan run natively: greedy chat that matches what Lantern's llama.cpp gives on wllama 2, streamed a token
 * at a time, two rows at once, a GBNF grammar, an abort that frees its sequence, and the context's limit answered as
 * a 400. Chromium's WebGPU here is SwiftShader (a CPU emulation) without shader-f16, which llama.cpp's WebGPU backend
 * needs: the device check says so, and the runtime runs on the CPU build of wllama 3.
 */

test.beforeEach(async ({ page }) => {
  await page.goto('/test/e2e/wllama3.html');
  await page.waitForFunction(() => 'wllama3' in window);
});

test('llama.cpp is given WebGPU only where the adapter has shader-f16', async ({ page }, info) => {
  const { chosen, adapterFeatures } = await page.evaluate(() => window.wllama3.device());
  if (info.project.name === 'webgpu') {
    expect(adapterFeatures).toBeDefined();
    expect(chosen).toEqual(
      adapterFeatures!.includes('shader-f16')
        ? { runtime: 'wllama3', device: 'webgpu' }
        : { runtime: 'wllama2', device: 'wasm', reason: expect.stringMatching(/shader-f16/) },
    );
  } else {
    expect(chosen).toEqual({ runtime: 'wllama2', device: 'wasm', reason: 'no WebGPU adapter' });
  }
});

test('wllama 3 runs a plan whole and streams it back', async ({ page }, info) => {
  test.skip(info.project.name !== 'webgpu', 'the runtime is for WebGPU; its CPU build runs the same in either project');
  const loaded = await page.evaluate(() => window.wllama3.load('wasm'));
  expect(loaded).toMatchObject({ contextLength: 512, rows: 2, runsOn: { device: 'wasm', threads: 1 } });

  // Greedy: what Lantern's llama.cpp (wllama 2, every token decided by the generation core) and transformers.js reply.
  const hello = await page.evaluate(() => window.wllama3.run('Hello'));
  expect(hello.text).toBe(HELLO_REPLY);
  expect(hello.texts.length).toBeGreaterThan(3); // streamed a token or so at a time
  expect(hello.end).toMatchObject({ reason: 'stop', completionTokens: expect.any(Number) });
  // Every piece carries llama.cpp's counts so far (a row the core stops early is counted from them).
  expect(hello.counts[0]).toMatchObject({ completionTokens: 1, promptTokens: hello.end!.promptTokens });
  expect(hello.counts.at(-2)).toMatchObject({ completionTokens: hello.texts.length - 1 });

  // The same prompt again starts from what the first left (one scope so far).
  const again = await page.evaluate(() => window.wllama3.run('Hello', {}, undefined));
  expect(again.text).toBe(HELLO_REPLY);
  expect(again.end!.cachedTokens).toBeGreaterThan(0);

  // Two rows at once, as a request's two choices.
  const both = await page.evaluate(() => window.wllama3.both('Hello'));
  expect(both.map((row) => row.text)).toEqual([HELLO_REPLY, HELLO_REPLY]);

  // A token limit; and a bias that bans the end tokens (<|endoftext|> 0, <|im_end|> 2), so the reply runs to it.
  const short = await page.evaluate(() => window.wllama3.run('Hello', { maxTokens: 3 }));
  expect(short.end).toMatchObject({ reason: 'length', completionTokens: 3 });
  const endless = await page.evaluate(() =>
    window.wllama3.run('Hello', { maxTokens: 24, logitBias: { 0: -100, 2: -100 } }),
  );
  expect(endless.text.startsWith(HELLO_REPLY)).toBe(true);
  expect(endless.end).toMatchObject({ reason: 'length', completionTokens: 24 });

  // A hand-written GBNF grammar (the gbnf piece translates JSON schemas into such).
  const grammar = String.raw`root ::= "{\"city\": \"" [A-Za-z ]{1,20} "\"}"`;
  const city = await page.evaluate((g) => window.wllama3.run('Name a city.', { grammar: g }), grammar);
  expect(JSON.parse(city.text)).toEqual({ city: expect.stringMatching(/^[A-Za-z ]{1,20}$/) });

  // An abort is heard at the next token, and frees the row's sequence for the next request.
  const aborted = await page.evaluate(() => window.wllama3.aborted('Hello'));
  expect(aborted.pieces).toHaveLength(1);
  expect(aborted.error).toMatchObject({ kind: 'aborted' });
  expect(aborted.after.text).toBe(HELLO_REPLY);

  // The context's limit, answered before any work, and the model still serves.
  expect(await page.evaluate(() => window.wllama3.tooLong())).toMatchObject({
    kind: 'invalid_request',
    param: 'messages',
  });
  expect(await page.evaluate(() => window.wllama3.refused())).toMatchObject({
    message: expect.stringMatching(/penalties/),
  });
  expect((await page.evaluate(() => window.wllama3.run('Hello'))).text).toBe(HELLO_REPLY);
});
