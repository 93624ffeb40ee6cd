import type { BrowserContext, Page, TestInfo } from '@playwright/test';
import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { ENDLESS, HELLO_REPLY, issueKey, openHarness, openPage, sayHello } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * Faults: an engine worker terminated mid-stream, a model that cannot load until its files arrive, a service worker
 * stopped mid-stream, the host tab closed mid-stream. Each answer is a clear error where one is due, and the next
 * request succeeds.
 */

/**
 * The faults that are not the GPU's run on the wasm project only: a worker terminated, a model's files missing, a
 * service worker stopped or a host tab closed are the same on either device (the engine's abort and restart are the
 * same code), and SwiftShader makes each take half a minute. The webgpu project runs the fault that is its own, the
 * GPU process crashed, and the fresh worker after it.
 */
const WASM_COVERS = 'the fault is not the device’s: the wasm project covers it; the GPU crash test covers WebGPU';

/**
 * Starts an endless stream in `page`, runs `fault` once three chunks have arrived, and resolves with how the stream
 * ended for the SDK: the message of the error it threw, or 'ended' if it ended quietly (its code, if any, is left in
 * `window.streamCode`). `lanternFetch`: the SDK fetches through `lantern.fetch`.
 */
async function streamThrough(
  page: Tab,
  key: string,
  fault: () => Promise<unknown>,
  n = 1,
  lanternFetch = false,
): Promise<string> {
  type Stream = { faultNow?: boolean; streamEnded?: string; streamCode?: string };
  // Started, not awaited: a WebDriver tab (WebKit) runs one evaluation at a time, and the fault must come mid-stream.
  await page.evaluate(
    ({ k, request, choices, viaLantern }) => {
      const state = window as unknown as Stream;
      void (async () => {
        try {
          const stream = await window.harness.client(k, { lanternFetch: viaLantern }).chat.completions.create({
            model: 'crimson-falcon-4',
            stream: true,
            n: choices,
            ...request,
          });
          let received = 0;
          for await (const _chunk of stream) if (++received === 3) state.faultNow = true;
          state.streamEnded = 'ended';
        } catch (error) {
          state.streamEnded = (error as Error).message;
          state.streamCode = (error as { code?: string }).code;
        }
      })();
    },
    { k: key, request: ENDLESS, choices: n, viaLantern: lanternFetch },
  );
  await page.waitForFunction(() => (window as unknown as Stream).faultNow === true);
  await fault();
  await page.waitForFunction(() => (window as unknown as Stream).streamEnded !== undefined);
  return page.evaluate(() => (window as unknown as Stream).streamEnded!);
}

test(
  'an engine worker terminated mid-stream: an SSE error event, then a fresh worker answers',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    await openHarness(tab);
    const key = await issueKey(tab);
    const outcome = await streamThrough(tab, key, () =>
      tab.evaluate(() => window.harness.lantern.restartEngine('terminated by the test')),
    );
    expect(outcome).toMatch(/The engine went away while this request was running/);
    expect(await sayHello(tab, key)).toBe(HELLO_REPLY);
  },
);

test(
  'a model that cannot load: a clear 500 the SDK does not retry, and recovery once its files arrive',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    const server = await startServer(workerPort(4185));
    try {
      server.withhold = true;
      await openHarness(tab, 'late=amber-phoenix-4', server.origin);
      const key = await issueKey(tab);
      const failure = await tab.evaluate(async (k) => {
        try {
          await window.harness.client(k).chat.completions.create({
            model: 'amber-phoenix-4',
            messages: [{ role: 'user', content: 'Hello' }],
          });
          return null;
        } catch (error) {
          const e = error as { message: string; headers?: Headers };
          return {
            name: window.harness.describeError(error),
            message: e.message,
            retry: e.headers?.get('x-should-retry'),
          };
        }
      }, key);
      expect(failure).toEqual({
        name: 'InternalServerError model_load_failed',
        message: expect.stringMatching(
          /Model `amber-phoenix-4` could not be loaded on this device\. Tried .*late-chat/,
        ),
        retry: 'false',
      });

      server.withhold = false; // the files are there now
      await expect.poll(() => sayHello(tab, key, 'amber-phoenix-4')).toBe(HELLO_REPLY);
    } finally {
      await server.close();
    }
  },
);

test('a service worker stopped mid-stream: the stream fails, the orphaned generation stops, the next request works', async ({
  page,
  context,
}, info) => {
  test.skip(info.project.name === 'webgpu', WASM_COVERS);
  await openHarness(page);
  const key = await issueKey(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send('ServiceWorker.enable');
  // Eight choices of 1,000 tokens: seconds of work, far longer than the silence that gives a dead caller away.
  const outcome = await streamThrough(page, key, () => cdp.send('ServiceWorker.stopAllWorkers'), 8);
  expect(outcome).not.toBe('ended'); // the SDK sees the stream break
  // The worker stops hearing from its caller and aborts the generation (CALLER_SILENCE_MS), short of its tokens.
  await expect
    .poll(() => page.evaluate(() => window.harness.runs.map((r) => r.outcome)), { timeout: 60_000 })
    .toEqual(['aborted']);
  expect(await page.evaluate(() => window.harness.runs[0]!.events)).toBeLessThan(8 * 1000);
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
});

test(
  'the host tab closed mid-stream: the other tab gets a clear error, takes over, and answers',
  { tag: PORTABLE },
  async ({ tabs, engines }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    test.skip(
      engines === 'llama.cpp',
      "the hand-over between tabs is the host's, whatever the engine: the wasm project runs it; llama.cpp's fresh worker is the terminated worker's test above",
    );
    const host = await openPage(tabs);
    await expect.poll(() => host.evaluate(() => window.harness.lantern.isHost)).toBe(true);
    const other = await openPage(tabs);
    const key = await issueKey(other);
    const outcome = await streamThrough(other, key, () => host.close());
    expect(outcome).toMatch(/The engine went away while this request was running/);
    await expect.poll(() => other.evaluate(() => window.harness.lantern.isHost)).toBe(true);
    expect(await sayHello(other, key)).toBe(HELLO_REPLY);
  },
);

test("the GPU process crashed mid-stream: Lantern's retryable device-lost error, a fresh worker, nothing downloaded again", async ({
  page,
  browser,
  device,
}) => {
  test.skip(device !== 'webgpu', 'a GPU process to crash: the webgpu project only');
  await openHarness(page);
  const key = await issueKey(page);
  expect(await sayHello(page, key)).toBe(HELLO_REPLY); // the model is loaded on WebGPU
  expect(await page.evaluate(() => window.harness.lantern.device?.device)).toBe('webgpu');
  // Every request from now on that reached the network rather than the service worker's copies.
  const fetched: string[] = [];
  page.context().on('requestfinished', async (request) => {
    const response = await request.response();
    if (request.serviceWorker() || !response?.fromServiceWorker()) fetched.push(request.url());
  });
  let crashed = 0;
  const outcome = await streamThrough(page, key, async () => {
    crashed = Date.now();
    await (await browser.newBrowserCDPSession()).send('Browser.crashGpuProcess');
  });
  const heardAfter = Date.now() - crashed;
  expect(outcome).toMatch(/^The GPU device was lost \(.+\): the engine restarts; retry the request\.$/);
  expect(await page.evaluate(() => (window as unknown as { streamCode?: string }).streamCode)).toBe('gpu_device_lost');
  await expect
    .poll(() => page.evaluate(() => window.harness.restarts))
    .toEqual([expect.stringMatching(/^The GPU device was lost/)]);
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
  expect(fetched).toEqual([]);
  test.info().annotations.push({ type: 'stream ended after the crash', description: `${heardAfter} ms: ${outcome}` });
});

/**
 * Where Chromium runs the service worker decides who can tell a stream that its host tab's renderer crashed. It starts
 * it in the process of the page that registered it: when that is the host's, the crash stops it too, mid-answer, and
 * only the page's `lantern.fetch` is left to end the stream; in another tab's, it outlives the host and learns of the
 * crash from the host's lock, which the browser releases (see hostLock). Returns the crash's CDP session and the
 * service worker's running statuses from now on.
 */
async function watchCrash(context: BrowserContext, host: Page, other: Page) {
  const cdp = await context.newCDPSession(other);
  const statuses: string[] = [];
  cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) =>
    versions.forEach((v: { runningStatus: string }) => statuses.push(v.runningStatus)),
  );
  await cdp.send('ServiceWorker.enable');
  const crash = await context.newCDPSession(host);
  let crashed = 0;
  return {
    crash: async () => {
      crashed = Date.now();
      void crash.send('Page.crash').catch(() => {}); // answered by no one: the page is gone
    },
    report: (info: TestInfo) =>
      info.annotations.push({
        type: 'the service worker',
        description: `${statuses.includes('stopped') ? 'stopped with the host' : 'outlived the host'}; the stream ended ${Date.now() - crashed} ms after the crash or less`,
      }),
  };
}

test("the host tab's renderer crashed mid-stream, the service worker in its process: lantern.fetch ends the other tab's stream with the retryable error; that tab takes over", async ({
  context,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'a renderer crash is the same on either project: runs once');
  const host = await context.newPage();
  await openHarness(host); // registers the service worker, which runs in its process
  await expect.poll(() => host.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  const other = await context.newPage();
  await openHarness(other);
  const key = await issueKey(other);
  const watch = await watchCrash(context, host, other);
  const outcome = await streamThrough(other, key, watch.crash, 1, true);
  watch.report(info);
  expect(outcome).toMatch(/^The engine went away while this request was running/);
  expect(await other.evaluate(() => (window as unknown as { streamCode?: string }).streamCode)).toBe(
    'engine_unavailable',
  );
  await expect.poll(() => other.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  expect(await sayHello(other, key)).toBe(HELLO_REPLY);
});

test("the host tab's renderer crashed mid-stream, the service worker in another tab's process: that tab's stream ends with the retryable error; the next host answers", async ({
  context,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'a renderer crash is the same on either project: runs once');
  const reader = await context.newPage();
  await openHarness(reader); // registers the service worker, which runs in its process
  const host = await context.newPage();
  await openHarness(host);
  await reader.evaluate(() => window.harness.lantern.close()); // the other tab hosts
  await expect.poll(() => host.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  const key = await issueKey(reader);
  expect(await sayHello(reader, key)).toBe(HELLO_REPLY);
  const watch = await watchCrash(context, host, reader);
  const outcome = await streamThrough(reader, key, watch.crash); // the SDK's own fetch
  watch.report(info);
  expect(outcome).toMatch(/^The engine went away while this request was running/);
  expect(await reader.evaluate(() => (window as unknown as { streamCode?: string }).streamCode)).toBe(
    'engine_unavailable',
  );
  const next = await context.newPage();
  await openHarness(next);
  await expect.poll(() => next.evaluate(() => window.harness.lantern.isHost)).toBe(true);
  expect(await sayHello(reader, key)).toBe(HELLO_REPLY);
});
