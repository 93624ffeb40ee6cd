import { readFileSync } from 'node:fs';
import type { CDPSession } from '@playwright/test';
import { SOAK_KEYS, type SoakInputs } from '../support/soak.ts';
import { expect, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/*
 * Issue 42: memory that stays flat, in Chromium through the service worker. The soak of test/memory-soak.test.ts
 * (test/support/soak.ts: 1,000 mixed requests, four at a time) sent from the harness page with the openai SDK, through
 * the real service worker to the engine worker. The JS memory of each of the three (V8's heap, and the array buffers
 * it holds outside it: the models' keys and values on the CPU) is read over the DevTools protocol after forced
 * collections, after the first 100 requests and after all 1,000: each within 10%, and so is the page's and its
 * workers' memory as the browser attributes it (`performance.measureUserAgentSpecificMemory()`).
 *
 * On the wasm project only, where the soak takes about 40 s on two cores: the memory at stake is the engine's and the
 * handler's, the same code on WebGPU (where SwiftShader would take many minutes for the same work), and Firefox and
 * WebKit have no DevTools protocol to read a worker's heap with.
 */
test.skip(({ device, lanternBrowser }) => device !== 'wasm' || lanternBrowser !== 'chromium', 'wasm project only');

/** Three held-out images of tiny-vision and three clips of tiny-whisper, as Node's soak sends them. */
const INPUTS: SoakInputs = {
  images: ['single00.png', 'single01.png', 'single02.png'].map(
    (file) => `data:image/png;base64,${readFileSync(`test/fixtures/vision/${file}`).toString('base64')}`,
  ),
  clips: ['clip00.wav', 'clip01.wav', 'clip02.wav'].map((name) => ({
    name,
    base64: readFileSync(`test/fixtures/speech/${name}`).toString('base64'),
  })),
};

type Part = 'page' | 'service worker' | 'engine worker';
/** One JS realm's memory after forced collections: V8's heap, and the array buffers' backing stores beside it. */
interface Heap {
  used: number;
  buffers: number;
}

/**
 * The DevTools protocol of each of the page's targets (the page, its service worker, the engine worker), over the
 * browser's own session: Playwright's sessions are attached to pages only, and a service worker is no page's child.
 * Messages go through `Target.sendMessageToTarget`, as Playwright's CDPSession sends no `sessionId`.
 */
class Targets {
  readonly #browser: CDPSession;
  readonly #origin: string;
  readonly #sessions = new Map<string, (method: string) => Promise<unknown>>();
  #id = 0;

  constructor(browser: CDPSession, origin: string) {
    this.#browser = browser;
    this.#origin = origin;
  }

  /** Each part's heap: collected (three full collections, twice, a moment apart), then the least of three readings. */
  async heaps(): Promise<Record<Part, Heap>> {
    const parts = await this.#find();
    const heaps = {} as Record<Part, Heap>;
    for (const [part, call] of Object.entries(parts) as [Part, (method: string) => Promise<unknown>][]) {
      const readings: Heap[] = [];
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 3; i++) await call('HeapProfiler.collectGarbage');
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (round < 2) continue;
        const usage = (await call('Runtime.getHeapUsage')) as { usedSize: number; backingStorageSize: number };
        readings.push({ used: usage.usedSize, buffers: usage.backingStorageSize });
      }
      heaps[part] = readings.reduce((a, b) => (b.used + b.buffers < a.used + a.buffers ? b : a));
    }
    return heaps;
  }

  /** The three targets of this origin, attached to once each (a worker restarted is a new target). */
  async #find(): Promise<Record<Part, (method: string) => Promise<unknown>>> {
    const { targetInfos } = await this.#browser.send('Target.getTargets');
    const of = (type: string, path: RegExp) => {
      const found = targetInfos.filter((t) => t.type === type && t.url.startsWith(this.#origin) && path.test(t.url));
      expect(found, `${type} ${path}`).toHaveLength(1);
      return this.#session(found[0]!.targetId);
    };
    return {
      page: await of('page', /\/harness\.html/),
      'service worker': await of('service_worker', /\/service-worker\.js$/),
      'engine worker': await of('worker', /engine-worker/),
    };
  }

  async #session(targetId: string): Promise<(method: string) => Promise<unknown>> {
    const known = this.#sessions.get(targetId);
    if (known) return known;
    const { sessionId } = await this.#browser.send('Target.attachToTarget', { targetId, flatten: false });
    const pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
    this.#browser.on('Target.receivedMessageFromTarget', (event) => {
      if (event.sessionId !== sessionId) return;
      const message = JSON.parse(event.message) as { id?: number; result?: unknown; error?: { message: string } };
      const waiting = message.id === undefined ? undefined : pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id!);
      if (message.error) waiting.reject(new Error(message.error.message));
      else waiting.resolve(message.result);
    });
    const call = (method: string) =>
      new Promise<unknown>((resolve, reject) => {
        const id = ++this.#id;
        pending.set(id, { resolve, reject });
        const message = JSON.stringify({ id, method, params: {} });
        this.#browser.send('Target.sendMessageToTarget', { sessionId, message }).catch(reject);
      });
    this.#sessions.set(targetId, call);
    return call;
  }
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

test('1,000 mixed requests through the service worker leave each heap within 10% of where 100 left it', async ({
  page,
  browser,
}) => {
  test.setTimeout(360_000);
  // Cross-origin isolated, so that the page can call `performance.measureUserAgentSpecificMemory()`.
  const server = await startServer(workerPort(4198), {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
  });
  try {
    await openHarness(page, '', server.origin);
    const keys: string[] = [];
    for (let i = 0; i < SOAK_KEYS; i++) keys.push(await issueKey(page, `soak ${i}`));
    const targets = new Targets(await browser.newBrowserCDPSession(), server.origin);
    await page.evaluate(
      ({ k, inputs }) => {
        const soak = window.harness.soakPlan(
          k.map((key) => window.harness.client(key)),
          inputs,
          4,
        );
        Object.assign(window, { soak });
      },
      { k: keys, inputs: INPUTS },
    );
    type Soaking = { soak: ReturnType<Window['harness']['soakPlan']> };
    const run = async (until: number) => {
      await page.evaluate(async (n) => {
        await (window as unknown as Soaking).soak.run(n);
        // The harness's own record of every model run (one object each), which is no memory of Lantern's.
        window.harness.runs.length = 0;
      }, until);
      // Measured once nothing runs: an aborted stream's generation stops a moment after its client left.
      await expect.poll(() => page.evaluate(async () => (await window.harness.lantern.engineStatus())?.calls)).toBe(0);
      return { heaps: await targets.heaps(), all: await page.evaluate(() => window.harness.memory()) };
    };

    const started = Date.now();
    const first = await run(100);
    const last = await run(1000);
    const seconds = (Date.now() - started) / 1000;
    const soak = await page.evaluate(() => {
      const { counts, calls, ms, failures } = (window as unknown as Soaking).soak;
      return { counts, calls, ms, failures };
    });

    for (const part of ['page', 'service worker', 'engine worker'] as const) {
      const [a, b] = [first.heaps[part], last.heaps[part]];
      console.log(
        `[memory] chromium ${part} heap after 100: ${mb(a.used)} MiB (+${mb(a.buffers)} MiB array buffers), ` +
          `after 1000: ${mb(b.used)} MiB (+${mb(b.buffers)} MiB)`,
      );
    }
    console.log(
      `[memory] chromium page and workers (measureUserAgentSpecificMemory) after 100: ${mb(first.all ?? 0)} MiB, ` +
        `after 1000: ${mb(last.all ?? 0)} MiB; ${seconds.toFixed(0)} s; ${soak.calls} HTTP requests; ` +
        `ms by kind ${JSON.stringify(soak.ms)}`,
    );
    expect(soak.failures).toEqual([]);
    expect(Object.values(soak.counts).reduce((a, b) => a + b, 0)).toBe(1000);
    for (const part of ['page', 'service worker', 'engine worker'] as const) {
      const [a, b] = [first.heaps[part], last.heaps[part]];
      expect(b.used, `${part}: heap`).toBeLessThanOrEqual(a.used * 1.1);
      expect(b.used + b.buffers, `${part}: heap and array buffers`).toBeLessThanOrEqual((a.used + a.buffers) * 1.1);
    }
    expect(first.all).not.toBeNull();
    expect(last.all!).toBeLessThanOrEqual(first.all! * 1.1);
  } finally {
    await server.close();
  }
});
