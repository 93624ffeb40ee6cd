import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from '@playwright/test';
import { BUNDLED_REPOS, startHubServer, TINY_MLC, type HubRequest, type HubServer } from '../support/hub-server.ts';
import { expect, PORTABLE, test, type LanternBrowser, type Tab } from './browsers.ts';
import { HELLO_REPLY, issueKey, openHarness } from './harness-page.ts';
import { workerPort } from './servers.ts';

/**
 * Lantern's own model downloads in real browsers (src/downloads/, src/engines/model-downloads.ts), against the hub
 * stand-in of test/support/hub-server.ts on another origin than the app: a transfer cut at half resumes over HTTP
 * Range from what the browser handed over (see keepsWhatArrived), a stored model answers with the hub gone, a partly
 * stored one says what is missing and resumes, a quota too small passes a candidate over before its weights are
 * fetched (where estimate() tells the quota; Chromium's does not, and the download then fails as it is stored), when
 * nothing fits a 503 says what is needed, `lantern.storage` removes and downloads again, persistent storage is asked
 * for once at the first download, web-llm finds the files placed in its own caches, and a model named by an absolute
 * URL of another origin loads. The same code is tested in Node by test/downloads.test.ts.
 */

/** web-llm's prebuilt model whose repo the hub's synthetic MLC model stands in for (see `webllm` in harness.ts). */
const WEB_LLM_MODEL = 'Qwen3-0.6B-q4f32_1-MLC';
const CHAT_WEIGHTS = 'tiny-chat/resolve/main/onnx/model.onnx';
const CHAT_SIZE = statSync(join(BUNDLED_REPOS['lantern/tiny-chat']!, 'onnx/model.onnx')).size;

let hub: HubServer;
test.beforeAll(async () => {
  hub = await startHubServer({
    port: workerPort(5190),
    repos: BUNDLED_REPOS,
    webLLM: true,
    webLLMRepo: `mlc-ai/${WEB_LLM_MODEL}`,
  });
});
test.afterEach(() => {
  hub.reset();
  hub.offline = false;
});
test.afterAll(() => hub?.close());

/** The harness with crimson-falcon-4 and jade-mole-4 downloaded from the hub, and `extra` params. */
const hubQuery = (extra = '') => `hub=${encodeURIComponent(hub.origin)}${extra}`;

/** The GET requests the hub answered for URL paths ending in `path`. */
const gets = (path: string) => hub.log.filter((r) => r.method === 'GET' && r.path.endsWith(path));

interface Answer {
  content?: string | null;
  backend?: string | null;
  status?: number;
  code?: string | null;
  message?: string;
}

/** A greedy "Hello" through the SDK: the reply and the candidate that answered, or the error's status, code, message. */
function chat(tab: Tab, key: string, model = 'crimson-falcon-4'): Promise<Answer> {
  return tab.evaluate(
    async ({ k, m }) => {
      try {
        const { data, response } = await window.harness
          .client(k)
          .chat.completions.create({ model: m, messages: [{ role: 'user', content: 'Hello' }], temperature: 0 })
          .withResponse();
        return { content: data.choices[0]!.message.content, backend: response.headers.get('x-lantern-backend') };
      } catch (error) {
        const e = error as { status?: number; code?: string | null; message: string };
        return { status: e.status, code: e.code, message: e.message };
      }
    },
    { k: key, m: model },
  );
}

/** One embedding of jade-mole-4 through the SDK: its length, or the error's message. */
function embed(tab: Tab, key: string): Promise<number | string> {
  return tab.evaluate(async (k) => {
    try {
      const response = await window.harness
        .client(k)
        .embeddings.create({ model: 'jade-mole-4', input: 'offline', encoding_format: 'float' });
      return response.data[0]!.embedding.length;
    } catch (error) {
      return (error as Error).message;
    }
  }, key);
}

interface ModelCard {
  candidates: string[];
  stored?: Record<string, string>;
}

/** `/v1/models`' card of `id`: its candidates' public names, first to last, and what is stored of each. */
function modelCard(tab: Tab, key: string, id: string): Promise<ModelCard> {
  return tab.evaluate(
    async ({ k, model }) => {
      const response = await fetch('/v1/models', { headers: { authorization: `Bearer ${k}` } });
      const { data } = (await response.json()) as { data: (ModelCard & { id: string })[] };
      const { candidates, stored } = data.find((m) => m.id === model)!;
      return { candidates, ...(stored && { stored }) };
    },
    { k: key, model: id },
  );
}

/** What `/v1/models` says is stored of the first candidate of `id`'s chain. */
const storedFirst = async (tab: Tab, key: string, id: string) => {
  const card = await modelCard(tab, key, id);
  return card.stored?.[card.candidates[0]!];
};

const prefetch = (tab: Tab, id: string) =>
  tab.evaluate(async (model) => {
    const stored = await window.harness.lantern.storage.prefetch(model);
    return { state: stored.state, bytes: stored.bytes, missing: stored.missing };
  }, id);

/** Where the resumed request for tiny-chat's weights started: the bytes kept of them (0: it started over). */
const resumedFrom = (request: HubRequest | undefined) => Number(/^bytes=(\d+)-$/.exec(request?.range ?? '')?.[1] ?? 0);

/**
 * Whether the browser hands a fetch's body over up to the byte where its connection broke. Firefox does. Chromium
 * drops the bytes it received but the page had not read yet when the error came (a read started 50 ms after a
 * loopback cut gets none of them), so what a cut loses there depends on how busy the reading thread was at that
 * moment: at most what Chromium buffers, negligible for real models but most of the half of tiny-chat's 3.5 MB,
 * which the hub sends at once. WebKitGTK (2.50) handed none of the half over, even to a page reading nothing else.
 * Bytes read before the break are kept in every browser (the next test).
 */
const keepsWhatArrived = (browser: LanternBrowser) => browser === 'firefox';

/**
 * The downloader and the storage are the same on either device: the webgpu project runs only the partly stored model
 * (its chain there tries the GPU's candidate and then the CPU's, which share their files, and answers on WebGPU from
 * the stored files) and web-llm's placement (WebGPU only).
 */
const WASM_COVERS = 'the same downloader and storage on either device: the wasm project covers it';

test(
  'a download cut at half resumes from the bytes the browser handed over (Firefox: 1.0× the file crosses the network)',
  { tag: PORTABLE },
  async ({ tab, lanternBrowser }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    hub.faults.push({ path: CHAT_WEIGHTS, kind: 'cut', at: 0.5 });
    await openHarness(tab, hubQuery());
    expect(await prefetch(tab, 'crimson-falcon-4')).toMatchObject({ state: 'complete', missing: [] });

    const ratio = hub.bytesServed(CHAT_WEIGHTS) / CHAT_SIZE;
    const [cut, rest] = gets(CHAT_WEIGHTS);
    const kept = resumedFrom(rest);
    console.log(
      `[downloads] ${lanternBrowser}: cut at half (${cut?.bytesSent} bytes sent), ${kept} kept, then ` +
        `${rest?.bytesSent} fetched: ${ratio.toFixed(3)}× tiny-chat's weights (${CHAT_SIZE} bytes) served`,
    );
    expect(gets(CHAT_WEIGHTS)).toHaveLength(2);
    // The second request asks for what follows the bytes kept (all of it if none were), and gets just that.
    expect(rest).toMatchObject({ status: kept > 0 ? 206 : 200, bytesSent: CHAT_SIZE - kept });
    expect(kept).toBeLessThanOrEqual(cut!.bytesSent);
    if (keepsWhatArrived(lanternBrowser)) expect(ratio).toBeLessThanOrEqual(1.1);

    // Real inference from the stored model, and /v1/models says it is stored.
    const key = await issueKey(tab);
    expect(await chat(tab, key)).toMatchObject({ content: HELLO_REPLY });
    expect(gets(CHAT_WEIGHTS)).toHaveLength(2); // nothing fetched again to load it
    expect(await storedFirst(tab, key, 'crimson-falcon-4')).toBe('complete');
  },
);

test(
  "a GGUF from the hub on llama.cpp: downloaded into Lantern's store (cut at half, resumed, verified), then loaded from it offline",
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', 'llama.cpp runs on WebAssembly on either project: runs on wasm');
    const weights = 'tiny-chat/resolve/main/gguf/tiny-chat-f32.gguf';
    const size = statSync(join(BUNDLED_REPOS['lantern/tiny-chat']!, 'gguf/tiny-chat-f32.gguf')).size;
    hub.faults.push({ path: weights, kind: 'cut', at: 0.5 });
    await openHarness(tab, hubQuery('&gguf=indigo-owl-4'));
    expect(await prefetch(tab, 'indigo-owl-4')).toMatchObject({ state: 'complete', missing: [] });
    // The cut request, then one for what follows the bytes kept.
    const [cut, rest] = gets(weights);
    expect(cut).toBeDefined();
    expect(rest).toMatchObject({ status: resumedFrom(rest) > 0 ? 206 : 200, bytesSent: size - resumedFrom(rest) });
    const key = await issueKey(tab);
    hub.offline = true;
    try {
      expect(await chat(tab, key, 'indigo-owl-4')).toMatchObject({ content: HELLO_REPLY });
    } finally {
      hub.offline = false;
    }
    expect(gets(weights)).toHaveLength(2); // nothing fetched again to load it
    expect(await storedFirst(tab, key, 'indigo-owl-4')).toBe('complete');
  },
);

test(
  'a connection that breaks after the page read what it sent: every byte read is kept, 1.0× crosses the network',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', 'the same downloader as on the wasm project: runs there');
    // Half the file, then a stall; once the page has read the half, the network goes away under it, and comes back
    // before the downloader tries again. (Started, not awaited: a WebDriver tab runs one evaluation at a time.)
    const half = Math.floor(CHAT_SIZE / 2);
    hub.faults.push({ path: CHAT_WEIGHTS, kind: 'stall', at: 0.5 });
    await openHarness(tab, hubQuery());
    type Prefetched = { prefetched?: string };
    await tab.evaluate(() => {
      void window.harness.lantern.storage.prefetch('crimson-falcon-4').then(
        (stored) => ((window as Prefetched).prefetched = stored.state),
        (error: unknown) => ((window as Prefetched).prefetched = String(error)),
      );
    });
    await expect
      .poll(() =>
        tab.evaluate(
          (bytes) =>
            window.harness.progress.some(
              (p) => p.status === 'progress' && p.file === 'onnx/model.onnx' && p.loaded === bytes,
            ),
          half,
        ),
      )
      .toBe(true);
    hub.offline = true; // drops the stalled connection
    hub.offline = false;
    await expect.poll(() => tab.evaluate(() => (window as Prefetched).prefetched)).toBe('complete');
    const ratio = hub.bytesServed(CHAT_WEIGHTS) / CHAT_SIZE;
    console.log(`[downloads] broken after the half was read: ${ratio.toFixed(3)}× tiny-chat's weights served`);
    expect(ratio).toBeLessThanOrEqual(1.1);
    expect(gets(CHAT_WEIGHTS)[1]).toMatchObject({ range: `bytes=${half}-`, status: 206, bytesSent: CHAT_SIZE - half });
  },
);

test(
  'offline: a partly stored model says what is missing and resumes once the hub is back; stored models answer with it gone',
  { tag: PORTABLE },
  async ({ tab, lanternBrowser, device }) => {
    await openHarness(tab, hubQuery());
    const key = await issueKey(tab);
    expect(await prefetch(tab, 'jade-mole-4')).toMatchObject({ state: 'complete' });

    // The weights' transfer is cut at half; the resumed request stalls, and the network goes away under it.
    hub.faults.push({ path: CHAT_WEIGHTS, kind: 'cut', at: 0.5 }, { path: CHAT_WEIGHTS, kind: 'stall', at: 0 });
    const answer = chat(tab, key); // not awaited: the hub goes offline while it downloads
    await expect.poll(() => gets(CHAT_WEIGHTS).length).toBe(2);
    hub.offline = true;
    const failure = await answer;
    console.log(`[downloads] partly stored, offline: ${failure.status} ${failure.code}: ${failure.message}`);
    expect(failure).toMatchObject({
      status: 503,
      code: 'model_download_failed',
      message: expect.stringMatching(/\d+ of \d+ files are stored \([^)]*\); missing: onnx\/model\.onnx\b/),
    });
    // Each candidate tried (the CPU's; on WebGPU the GPU's too, which shares its files) is partly stored.
    const tried = await tab.evaluate(async () =>
      (await window.harness.lantern.storage.list())
        .find((e) => e.id === 'crimson-falcon-4')!
        .candidates.filter((c) => c.state !== 'none')
        .map(({ state, bytes, missing }) => ({ state, bytes, missing })),
    );
    expect(tried.length).toBeGreaterThan(0);
    for (const partial of tried) {
      expect(partial).toMatchObject({ state: 'partial', missing: ['onnx/model.onnx'] });
      // What arrived before the cut (in Chromium and WebKit, what the page had read of it: see keepsWhatArrived).
      if (keepsWhatArrived(lanternBrowser)) expect(partial.bytes).toBeGreaterThanOrEqual(CHAT_SIZE * 0.4);
    }

    // The network is back: the next request resumes from the stored bytes and answers.
    hub.offline = false;
    const before = hub.log.length;
    expect(await chat(tab, key)).toMatchObject({ content: HELLO_REPLY });
    const resumed = hub.log.slice(before).find((r) => r.method === 'GET' && r.path.endsWith(CHAT_WEIGHTS));
    const from = resumedFrom(resumed);
    expect(resumed).toMatchObject({ status: from > 0 ? 206 : 200, bytesSent: CHAT_SIZE - from });
    if (keepsWhatArrived(lanternBrowser)) expect(from).toBeGreaterThanOrEqual(CHAT_SIZE * 0.45);
    // What the store serves offline is the same on either device (the wasm project's run goes on); SwiftShader would
    // compile both models' shaders again for it.
    if (device === 'webgpu') return;

    // Both models stored: a fresh page answers chat and embeddings with the hub unreachable.
    hub.offline = true;
    const served = hub.log.length;
    await tab.reload();
    await tab.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });
    expect(await chat(tab, key)).toMatchObject({ content: HELLO_REPLY });
    expect(await embed(tab, key)).toBeGreaterThan(0);
    // Whatever was asked of the hub met a network that is off: nothing came from it.
    expect(hub.log.slice(served).every((r) => r.status === 0)).toBe(true);
  },
);

/**
 * Runs `body` with the origin's storage quota set (CDP) to what it stores now, the precache complete, plus 1 MB: less
 * than tiny-chat's 3.6 MB with the download's 1.1× headroom. The quota is reset after.
 */
async function withTightQuota(context: BrowserContext, page: Page, body: () => Promise<void>): Promise<void> {
  const usage = await page.evaluate(async () => {
    await navigator.serviceWorker.ready; // the precache is complete once the service worker is active
    return (await navigator.storage.estimate()).usage ?? 0;
  });
  const origin = new URL(page.url()).origin;
  const cdp = await context.newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 1e6 });
  try {
    await body();
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin }); // no quotaSize: the default again
  }
}

/** What `lantern.models()` says of crimson-falcon-4: what answered it, and what was passed over, with why. */
const falconChoice = (page: Page) =>
  page.evaluate(async () => {
    const model = (await window.harness.lantern.models()).find((m) => m.id === 'crimson-falcon-4')!;
    return { servedBy: model.servedBy, skipped: model.skipped };
  });

const HUB_CHAT_CPU = 'transformers:lantern/tiny-chat@fp32/cpu';

test('a quota too small: the hub model is passed over before its weights are fetched; when nothing fits, a 503 says what is needed', async ({
  playwright,
  launchOptions,
  baseURL,
}, info) => {
  test.skip(info.project.name === 'webgpu', `${WASM_COVERS} (the CPU candidates only, on either project)`);
  // Chromium's estimate() reports usage + 10 GiB whatever the quota (its StaticStorageQuota feature, against
  // fingerprinting; see the next test): without it, the estimate is the quota, the CDP override included.
  const args = [...(launchOptions.args ?? []), '--disable-features=StaticStorageQuota'];
  const browser = await playwright.chromium.launch({ ...launchOptions, args });
  try {
    const context = await browser.newContext({ baseURL, serviceWorkers: 'allow' });
    const page = await context.newPage();
    await openHarness(page, hubQuery('&quotaPick=crimson-falcon-4'));
    const key = await issueKey(page);
    await withTightQuota(context, page, async () => {
      // The hub's tiny-chat does not fit: the app's own copy answers.
      expect(await chat(page, key)).toMatchObject({ content: HELLO_REPLY, backend: 'transformers:tiny-chat@fp32/cpu' });
      const choice = await falconChoice(page);
      expect(choice.servedBy).toBe('transformers:/models/tiny-chat@fp32/cpu');
      expect(choice.skipped).toContainEqual({
        candidate: HUB_CHAT_CPU,
        reason: expect.stringMatching(/Not enough storage to download .*: it needs about [\d.]+ MB/),
      });
      expect(await page.evaluate(() => window.harness.progress)).toContainEqual(
        expect.objectContaining({ status: 'skipped', candidate: HUB_CHAT_CPU }),
      );
      expect(hub.bytesServed('onnx/model.onnx')).toBe(0); // refused before a byte of the weights

      // When no candidate fits: 503 insufficient_storage, saying what is needed and what is free.
      await openHarness(page, hubQuery('&quotaAll=crimson-falcon-4'));
      // The service worker routes with the last host's profile until the new one offers its port.
      await expect
        .poll(async () => (await modelCard(page, key, 'crimson-falcon-4')).candidates)
        .toContain('transformers:lantern/tiny-think@fp32/cpu');
      const refused = await chat(page, key);
      console.log(`[downloads] no candidate fits: ${refused.status} ${refused.code}: ${refused.message}`);
      expect(refused).toMatchObject({
        status: 503,
        code: 'insufficient_storage',
        message: expect.stringMatching(
          /needs more storage than this site has: its smallest download needs about [\d.]+ [kMG]B, and [\d.]+ [kMG]B of the site's [\d.]+ [kMG]B quota is free/,
        ),
      });
      expect(hub.bytesServed('onnx/model.onnx')).toBe(0);
    });
  } finally {
    await browser.close();
  }
});

test("Chromium's static quota (estimate() says usage + 10 GiB): a download that fills the real quota fails as it is stored, and its candidate is passed over all the same", async ({
  page,
  context,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'the storage is the same on either project: runs once');
  await openHarness(page, hubQuery('&quotaPick=crimson-falcon-4'));
  const key = await issueKey(page);
  await withTightQuota(context, page, async () => {
    const estimate = await page.evaluate(() => navigator.storage.estimate());
    console.log(`[downloads] with the quota overridden, estimate() says ${estimate.quota} bytes of quota`);
    expect(await chat(page, key)).toMatchObject({ content: HELLO_REPLY, backend: 'transformers:tiny-chat@fp32/cpu' });
    expect((await falconChoice(page)).skipped).toContainEqual({
      candidate: HUB_CHAT_CPU,
      reason: expect.stringMatching(/The storage quota is full: onnx\/model\.onnx could not be stored/),
    });
    // The quota was not known before the download: its weights crossed the network, and were not kept.
    console.log(
      `[downloads] static quota: ${hub.bytesServed('onnx/model.onnx')} bytes of weights fetched, then refused`,
    );
    const stored = await page.evaluate(
      async () =>
        (await window.harness.lantern.storage.list()).find((e) => e.id === 'crimson-falcon-4')!.candidates[0]!.missing,
    );
    expect(stored).toContain('onnx/model.onnx');
  });
});

test(
  'removing a stored model frees its bytes; the next request downloads it again',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    await openHarness(tab, hubQuery());
    expect(await prefetch(tab, 'crimson-falcon-4')).toMatchObject({ state: 'complete' });
    const freed = await tab.evaluate(() => window.harness.lantern.storage.remove('crimson-falcon-4'));
    expect(freed).toBeGreaterThanOrEqual(CHAT_SIZE);
    const states = await tab.evaluate(async () =>
      (await window.harness.lantern.storage.list())
        .find((e) => e.id === 'crimson-falcon-4')!
        .candidates.map((c) => ({ state: c.state, bytes: c.bytes })),
    );
    expect(states.length).toBeGreaterThan(0);
    for (const state of states) expect(state).toEqual({ state: 'none', bytes: 0 });

    hub.reset();
    const key = await issueKey(tab);
    expect(await chat(tab, key)).toMatchObject({ content: HELLO_REPLY });
    expect(gets(CHAT_WEIGHTS)).toContainEqual(expect.objectContaining({ status: 200, bytesSent: CHAT_SIZE }));
  },
);

test(
  'persistent storage is asked for once, at the first download',
  { tag: PORTABLE },
  async ({ tab, lanternBrowser }, info) => {
    test.skip(lanternBrowser === 'webkit', 'WebKitGTK has no StorageManager: there is no persist() to ask');
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    // Firefox asks its user, with a prompt a test cannot answer: there the call is counted and answered false.
    await openHarness(tab, hubQuery(`&countPersist=${lanternBrowser === 'firefox' ? 'stub' : '1'}`));
    expect(await tab.evaluate(() => window.harness.persistCalls)).toEqual([]); // nothing asked at start
    await prefetch(tab, 'crimson-falcon-4');
    const { persisted, calls, granted } = await tab.evaluate(async () => ({
      persisted: await window.harness.lantern.persisted,
      calls: window.harness.persistCalls,
      granted: await navigator.storage.persisted(),
    }));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('download'); // asked once the download had started, not before
    if (lanternBrowser !== 'firefox') expect(persisted).toBe(granted);
    // Another download asks nothing more.
    await prefetch(tab, 'jade-mole-4');
    expect(await tab.evaluate(() => window.harness.persistCalls.length)).toBe(1);
  },
);

test("web-llm's files are placed where web-llm looks: its own hasModelInCache finds the model", async ({
  tab,
  device,
}) => {
  test.skip(device !== 'webgpu', 'web-llm needs WebGPU: the webgpu project only');
  const modelLib = `${hub.origin}${TINY_MLC.modelLibPath}`;
  await openHarness(tab, hubQuery(`&webllm=indigo-owl-4&modelLib=${encodeURIComponent(modelLib)}`));
  expect(await tab.evaluate((id) => window.harness.webllmHasModel(id), WEB_LLM_MODEL)).toBe(false);
  expect(await prefetch(tab, 'indigo-owl-4')).toMatchObject({ state: 'complete', missing: [] });
  // web-llm's own check (its caches, under the huggingface.co URLs it asks for), not Lantern's.
  expect(await tab.evaluate((id) => window.harness.webllmHasModel(id), WEB_LLM_MODEL)).toBe(true);
  const placed = await tab.evaluate(async () => {
    const urls = async (name: string) => (await (await caches.open(name)).keys()).map((r) => r.url);
    return { config: await urls('webllm/config'), wasm: await urls('webllm/wasm') };
  });
  expect(placed.config).toEqual([`https://huggingface.co/mlc-ai/${WEB_LLM_MODEL}/resolve/main/mlc-chat-config.json`]);
  expect(placed.wasm).toEqual([expect.stringMatching(/Qwen3-0\.6B-q4f32_1.*-webgpu\.wasm$/)]);
  // Fetched from the mirror and the model library's URL.
  expect(gets(`mlc-ai/${WEB_LLM_MODEL}/resolve/main/params_shard_0.bin`)).toHaveLength(1);
  expect(gets(TINY_MLC.modelLibPath)).toHaveLength(1);
});

test(
  'a model named by an absolute URL on another origin is downloaded on first use and answers',
  { tag: PORTABLE },
  async ({ tab }, info) => {
    test.skip(info.project.name === 'webgpu', WASM_COVERS);
    await openHarness(tab, hubQuery());
    const key = await issueKey(tab);
    expect(await embed(tab, key)).toBeGreaterThan(0);
    expect(gets('lantern/tiny-embed/resolve/main/onnx/model.onnx')).toContainEqual(
      expect.objectContaining({ status: 200 }),
    );
    expect(await storedFirst(tab, key, 'jade-mole-4')).toBe('complete');
  },
);
