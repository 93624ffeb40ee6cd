import { expect, PORTABLE, test, type Tab } from './browsers.ts';
import { HELLO_REPLY, issueKey, openHarness, sayHello } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/**
 * onnxruntime-web by device (issue 26, item 5; src/engines/transformers/onnx-runtime.ts): the engine worker runs the plain
 * WebAssembly build where it has no WebGPU and the WebGPU build where it has, keeps that one build, and the service
 * worker precaches neither binary. Both builds give the same answer (HELLO_REPLY, greedy).
 */

/** Every URL in each of the origin's caches, once the worker's build is stored (it fetches it as it starts). */
function cachedFiles(tab: Tab): Promise<Record<string, string[]>> {
  return tab.evaluate(async () => {
    await navigator.serviceWorker.ready; // the precache is complete once the service worker has activated
    const runtime = await caches.open('lantern-onnxruntime');
    while ((await runtime.keys()).length === 0) await new Promise((r) => setTimeout(r, 50));
    const files: Record<string, string[]> = {};
    for (const name of await caches.keys()) {
      files[name] = (await (await caches.open(name)).keys()).map((request) => request.url);
    }
    return files;
  });
}

test(
  "the engine worker keeps its device's build of onnxruntime-web only, and answers from it offline after a first visit",
  { tag: PORTABLE },
  async ({ tab, device }) => {
    const server = await startServer(workerPort(4193));
    try {
      // No model is used on the first visit: the worker fetches its build as it starts, which is enough for offline.
      await openHarness(tab, '', server.origin);
      const key = await issueKey(tab);
      const files = await cachedFiles(tab);
      const build =
        device === 'webgpu'
          ? /\/lantern\/ort-wasm-simd-threaded\.asyncify-[\w-]+\.wasm$/
          : /\/lantern\/ort-wasm-simd-threaded-[\w-]+\.wasm$/;
      expect(files['lantern-onnxruntime']).toEqual([expect.stringMatching(build)]);
      const precached = Object.entries(files)
        .filter(([name]) => name.startsWith('workbox-precache'))
        .flatMap(([, urls]) => urls);
      expect(precached.filter((url) => /ort-wasm[^/?]*\.wasm/.test(url))).toEqual([]);
      // The factories are small, and imported rather than fetched: precached.
      expect(precached.filter((url) => /\/lantern\/ort-wasm[^/?]*\.mjs/.test(url))).toHaveLength(2);

      await server.close();
      await expect(fetch(`${server.origin}/`)).rejects.toThrow(); // the network really is gone
      await tab.reload();
      await tab.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });
      expect(await sayHello(tab, key)).toBe(HELLO_REPLY);
    } finally {
      await server.close();
    }
  },
);
