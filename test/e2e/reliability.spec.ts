import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { ENDLESS, HELLO_REPLY, issueKey, openHarness, openPage, sayHello } from './harness-page.ts';
import { startServer } from './servers.ts';

/**
 * Faults: an engine worker terminated mid-stream, a model that cannot load until its files arrive, a service worker
 * stopped mid-stream, the host tab closed mid-stream. Each answer is a clear error where one is due, and the next
 * request succeeds.
 */

/**
 * Starts an endless stream in `page`, runs `fault` once three chunks have arrived, and resolves with how the stream
 * ended for the SDK: the message of the error it threw, or 'ended' if it ended quietly.
 */
async function streamThrough(page: Tab, key: string, fault: () => Promise<unknown>, n = 1): Promise<string> {
  type Stream = { faultNow?: boolean; streamEnded?: string };
  // Started, not awaited: a WebDriver tab (WebKit) runs one evaluation at a time, and the fault must come mid-stream.
  await page.evaluate(
    ({ k, request, choices }) => {
      const state = window as unknown as Stream;
      void (async () => {
        try {
          const stream = await window.harness.client(k).chat.completions.create({
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
        }
      })();
    },
    { k: key, request: ENDLESS, choices: n },
  );
  await page.waitForFunction(() => (window as unknown as Stream).faultNow === true);
  await fault();
  await page.waitForFunction(() => (window as unknown as Stream).streamEnded !== undefined);
  return page.evaluate(() => (window as unknown as Stream).streamEnded!);
}

test(
  'an engine worker terminated mid-stream: an SSE error event, then a fresh worker answers',
  { tag: PORTABLE },
  async ({ tab }) => {
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
  async ({ tab }) => {
    const server = await startServer(4185);
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
}) => {
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
  async ({ tabs }) => {
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
