import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { HELLO_REPLY } from './harness-page.ts';
import { startServer, type TestServer } from './servers.ts';

/**
 * Lantern in Firefox (Debian's firefox-esr; Playwright cannot drive a stock Firefox, so puppeteer-core drives it over
 * WebDriver BiDi), through the real service worker and engine worker. Firefox has no WebGPU on Linux: the wasm path.
 * One browser and one server for the file; each test opens its own browser context (its own service worker, caches
 * and IndexedDB); the offline test closes the server, last.
 */
const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
const PORT = 4196;

interface ChatReference {
  messages: { role: 'user'; content: string }[];
  greedy_text: string;
}
const refs: ChatReference[] = JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8'));
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;

test.describe.configure({ mode: 'serial' });

let browser: Browser;
let server: TestServer;

test.beforeAll(async () => {
  server = await startServer(PORT);
  browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true });
});

test.afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** A tab with the harness open in `context`, controlled by Lantern's service worker; resolves with it and a key. */
async function openTab(context: Awaited<ReturnType<Browser['createBrowserContext']>>): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => console.log(`[firefox page error] ${String(error)}`));
  await page.goto(`${server.origin}/test/e2e/harness.html`);
  await page.waitForFunction(() => window.harness !== undefined, { timeout: 60_000 });
  return page;
}

const issueKey = (page: Page) => page.evaluate(async () => (await window.harness.lantern.keys.issue('firefox')).key);

/** One greedy "Hello" through the SDK; the reply, or the SDK error's class and code. */
const sayHello = (page: Page, key: string) =>
  page.evaluate(async (k) => {
    try {
      const completion = await window.harness.client(k).chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Hello' }],
        temperature: 0,
      });
      return completion.choices[0]!.message.content;
    } catch (error) {
      return window.harness.describeError(error);
    }
  }, key);

const embed = (page: Page, key: string, input: string[]) =>
  page.evaluate(
    async ({ k, texts }) => {
      const client = window.harness.client(k);
      const base64 = await client.embeddings.create({ model: 'jade-mole-4', input: texts });
      const float = await client.embeddings.create({ model: 'jade-mole-4', input: texts, encoding_format: 'float' });
      return { base64: base64.data.map((d) => d.embedding), float: float.data.map((d) => d.embedding) };
    },
    { k: key, texts: input },
  );

test('models, chat (streamed and not) and embeddings, on the wasm path through the service worker', async () => {
  const context = await browser.createBrowserContext();
  const page = await openTab(context);
  const key = await issueKey(page);
  expect(await page.evaluate(() => navigator.serviceWorker.controller?.scriptURL)).toBe(
    `${server.origin}/service-worker.js`,
  );

  const ids = await page.evaluate(async (k) => {
    const models = [];
    for await (const model of window.harness.client(k).models.list()) models.push(model.id);
    return models;
  }, key);
  expect(ids).toEqual(['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4', 'jade-mole-4']);
  expect(await page.evaluate(() => window.harness.lantern.device?.device)).toBe('wasm');

  const reply = await page.evaluate(
    async ({ k, messages }) =>
      (await window.harness.client(k).chat.completions.create({ model: 'crimson-falcon-4', messages, temperature: 0 }))
        .choices[0]!,
    { k: key, messages: count.messages },
  );
  expect(reply.message.content).toBe(count.greedy_text);
  expect(reply.finish_reason).toBe('stop');

  const streamed = await page.evaluate(
    async ({ k, messages }) => {
      const stream = await window.harness.client(k).chat.completions.create({
        model: 'indigo-owl-4',
        messages,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      });
      const deltas: string[] = [];
      let usage = null;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta.content;
        if (delta) deltas.push(delta);
        usage = chunk.usage ?? usage;
      }
      return { deltas, usage };
    },
    { k: key, messages: count.messages },
  );
  expect(streamed.deltas.join('')).toBe(count.greedy_text);
  expect(streamed.deltas.length).toBeGreaterThan(5); // token by token, not one block
  expect(streamed.usage?.completion_tokens).toBeGreaterThan(0);

  const vectors = await embed(page, key, ['a cat', 'a kitten']);
  expect(vectors.float).toHaveLength(2);
  expect(vectors.float[0]).toHaveLength(64);
  expect(vectors.base64).toEqual(vectors.float);
  await context.close();
});

test('aborting a stream stops the generation within a token', async () => {
  const context = await browser.createBrowserContext();
  const page = await openTab(context);
  const key = await issueKey(page);
  const report = await page.evaluate(async (k) => {
    const abort = new AbortController();
    const stream = await window.harness.client(k).chat.completions.create(
      {
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Tell me a story.' }],
        stream: true,
        max_tokens: 500,
        logit_bias: { 0: -100, 2: -100 }, // the model cannot end by itself: only the abort can stop it
      },
      { signal: abort.signal },
    );
    let received = 0;
    try {
      for await (const _chunk of stream) if (++received === 3) abort.abort();
    } catch {
      // the SDK may end the iteration with an abort error; either way the request is gone
    }
    while (!window.harness.runs.some((r) => r.outcome !== 'completed')) await new Promise((r) => setTimeout(r, 20));
    return window.harness.runs.at(-1)!;
  }, key);
  expect(report.outcome).toBe('aborted');
  expect(report.eventsAfterAbort).toBeLessThanOrEqual(1);
  expect(report.events).toBeLessThan(100);
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
  await context.close();
});

test('two tabs share one engine, and the second takes over when the first closes', async () => {
  const context = await browser.createBrowserContext();
  const first = await openTab(context);
  await expect.poll(() => first.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  const second = await openTab(context);
  const key = await issueKey(second);
  expect(await sayHello(second, key)).toBe(HELLO_REPLY);
  expect(await second.evaluate(() => window.harness.lantern.isHost)).toBe(false);
  expect(await second.evaluate(() => window.harness.runs.length)).toBe(1); // it hears the host's events

  await first.close();
  await expect.poll(() => second.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  expect(await sayHello(second, key)).toBe(HELLO_REPLY);
  await context.close();
});

test('after a first visit, a reload with the server gone still answers /v1', async () => {
  const context = await browser.createBrowserContext();
  const page = await openTab(context);
  const key = await issueKey(page);
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
  // The precache is complete once the service worker has activated.
  await page.evaluate(async () => void (await navigator.serviceWorker.ready));

  await server.close();
  await expect(fetch(`${server.origin}/`)).rejects.toThrow(); // the network really is gone
  await page.reload();
  await page.waitForFunction(() => window.harness !== undefined, { timeout: 60_000 });
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
  expect((await embed(page, key, ['offline'])).float).toHaveLength(1);
  await context.close();
});
