import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness, openPage } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * Load and abort storms, through the real service worker and engine worker. Run on the WebAssembly path only: the
 * behaviour under test is the same on both paths, and SwiftShader would take many minutes for the same work. The abort
 * storm runs in Firefox too; the load test reads memory with a Chromium-only API.
 */
const COUNT = '1, 2, 3, 4, 5, 6, 7, 8, 9, 10.';

test.skip(({ device }) => device !== 'wasm', 'load is tested on the wasm path only');

test('50 concurrent chat requests from 3 tabs: each answers correctly or gets a 429 with retry headers', async ({
  context,
}) => {
  // Cross-origin isolation lets the test read the memory of the page and its engine worker.
  const server = await startServer(workerPort(4186), {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
  });
  try {
    const tabs = [
      await openPage(context, '', server.origin),
      await openPage(context, '', server.origin),
      await openPage(context, '', server.origin),
    ];
    await expect.poll(() => tabs[0]!.evaluate(() => window.harness.lantern.isHost)).toBe(true);
    const keys = await Promise.all(tabs.map((tab) => issueKey(tab)));

    const burst = (tabIndex: number, count: number) =>
      tabs[tabIndex]!.evaluate(
        async ({ k, n }) =>
          Promise.all(
            Array.from({ length: n }, async (_, i) => {
              const client = window.harness.client(k);
              const request = {
                model: 'crimson-falcon-4',
                messages: [{ role: 'user' as const, content: 'Count to 10.' }],
                temperature: 0,
              };
              try {
                if (i % 2 === 0) {
                  return (await client.chat.completions.create(request)).choices[0]!.message.content;
                }
                return (await client.chat.completions.stream(request).finalChatCompletion()).choices[0]!.message
                  .content;
              } catch (error) {
                const retryAfter = (error as { headers?: Headers }).headers?.get('retry-after-ms');
                return `${window.harness.describeError(error)} retry-after-ms=${retryAfter}`;
              }
            }),
          ),
        { k: keys[tabIndex]!, n: count },
      );

    // Warm up (the model loads), then read the memory the engine settles at.
    await burst(0, 3);
    const baseline = await tabs[0]!.evaluate(() => window.harness.memory());

    const results = (await Promise.all([burst(0, 17), burst(1, 17), burst(2, 16)])).flat();
    expect(results).toHaveLength(50);
    const answered = results.filter((r) => r === COUNT).length;
    const refused = results.filter((r) =>
      /^RateLimitError (rate_limit_exceeded|engine_busy) retry-after-ms=\d+$/.test(r!),
    );
    expect(answered + refused.length).toBe(50);
    expect(answered).toBeGreaterThanOrEqual(12); // 4 at once per key, 3 keys
    console.log(`[load] 50 requests from 3 tabs: ${answered} answered, ${refused.length} refused with 429`);

    await expect
      .poll(() => tabs[0]!.evaluate(async () => (await window.harness.lantern.engineStatus())?.calls))
      .toBe(0);
    const after = await tabs[0]!.evaluate(() => window.harness.memory());
    expect(baseline).not.toBeNull();
    console.log(`[load] memory of the host tab and its engine worker: ${baseline} bytes before, ${after} after`);
    // Back to where it started: no request leaves its tensors or buffers behind (25 % for the heap's own noise).
    expect(after!).toBeLessThan(baseline! * 1.25);
  } finally {
    await server.close();
  }
});

test(
  'an abort storm: 100 requests aborted at random points leave the engine idle and whole',
  { tag: PORTABLE },
  async ({ tab }) => {
    const server = await startServer(workerPort(4187));
    try {
      await openHarness(tab, '', server.origin);
      const keys: string[] = [];
      for (let i = 0; i < 10; i++) keys.push(await issueKey(tab));
      const outcomes = await tab.evaluate(async (k) => {
        const counts: Record<string, number> = {};
        const count = (what: string) => (counts[what] = (counts[what] ?? 0) + 1);
        // Ten waves of ten, one key each, so that the requests are admitted and then aborted at random points:
        // queued, in prefill, mid-stream, or already done. Each wave starts once the engine is idle again.
        for (let wave = 0; wave < 10; wave++) {
          while ((await window.harness.lantern.engineStatus())!.calls > 0) await new Promise((r) => setTimeout(r, 10));
          await Promise.all(
            Array.from({ length: 10 }, async (_, i) => {
              const client = window.harness.client(k[i]!, { lanternFetch: true });
              const abort = new AbortController();
              setTimeout(() => abort.abort(), Math.random() * 300);
              const request = {
                model: 'crimson-falcon-4',
                messages: [{ role: 'user' as const, content: 'Tell me a story.' }],
                max_tokens: 200,
                logit_bias: { 0: -100, 2: -100 },
              };
              try {
                if (i % 2 === 0) {
                  await client.chat.completions.create(request, { signal: abort.signal });
                } else {
                  const stream = await client.chat.completions.create(
                    { ...request, stream: true },
                    { signal: abort.signal },
                  );
                  for await (const _chunk of stream);
                }
                count(abort.signal.aborted ? 'aborted' : 'completed');
              } catch (error) {
                count(abort.signal.aborted ? 'aborted' : window.harness.describeError(error));
              }
            }),
          );
        }
        return counts;
      }, keys);
      console.log(`[abort storm] 100 requests: ${JSON.stringify(outcomes)}`);
      // Each was aborted, finished first, or was refused while earlier waves still held their slots: nothing else.
      const expected = /^(aborted|completed|RateLimitError (rate_limit_exceeded|engine_busy))$/;
      expect(Object.keys(outcomes).filter((o) => !expected.test(o))).toEqual([]);

      // Nothing keeps running for the aborted requests, and what comes next is whole (no lock held, no empty output).
      await expect.poll(() => tab.evaluate(async () => (await window.harness.lantern.engineStatus())?.calls)).toBe(0);
      const runs = await tab.evaluate(() => window.harness.runs.map((r) => r.outcome));
      expect(runs.filter((o) => o === 'aborted').length).toBeGreaterThan(0);
      const [greedy, streamed] = await tab.evaluate(async (k) => {
        const client = window.harness.client(k);
        const request = {
          model: 'crimson-falcon-4',
          messages: [{ role: 'user' as const, content: 'Count to 10.' }],
          temperature: 0,
        };
        return [
          (await client.chat.completions.create(request)).choices[0]!.message.content,
          (await client.chat.completions.stream(request).finalChatCompletion()).choices[0]!.message.content,
        ];
      }, keys[0]!);
      expect(greedy).toBe(COUNT);
      expect(streamed).toBe(COUNT);
    } finally {
      await server.close();
    }
  },
);
