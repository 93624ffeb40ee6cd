import { availableParallelism } from 'node:os';
import { defineConfig } from '@playwright/test';
import type { LanternOptions } from './test/e2e/browsers.ts';

/**
 * End-to-end tests through the real service worker and engine worker, served from the `--mode e2e` build, in Debian's
 * browsers (Playwright's own browser download does not work offline). Every test runs in Chromium on the WebAssembly
 * path (no WebGPU adapter); the WebGPU path (`--enable-unsafe-webgpu`: SwiftShader's adapter, on the CPU, several
 * times slower) runs what differs there, and the tests that do not depend on the device skip it with a reason naming
 * what covers them (`test.skip(info.project.name === 'webgpu', …)`; docs/tests.md lists what runs there). The tests
 * written with test/e2e/browsers.ts' portable layer (tagged `@portable`) run in Firefox too (the wasm path: no WebGPU
 * on Linux), driven by puppeteer-core, and in WebKit (Safari's engine: WebKitGTK's MiniBrowser, no WebGPU), driven
 * over W3C WebDriver. They, and the llama.cpp project, likewise skip what the browser or the engine takes no part in,
 * naming what covers it (docs/tests.md, "Where the time goes").
 */
const PORT = 4183;
export const E2E_ORIGIN = `http://127.0.0.1:${PORT}`;

const chromiumArgs = [
  '--no-sandbox', // CI runs as root
  // This machine's network is closed: without these, Chromium keeps trying to reach Google's services.
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // performance.measureUserAgentSpecificMemory() answers at once instead of at the next idle garbage collection.
  '--enable-blink-features=ForceEagerMeasureMemory',
];

/** The specs of the shared behaviour, which the `llama.cpp` project runs on llama.cpp alone. */
const LLAMA_CPP_SHARED_SPECS = [
  'openai-sdk.spec.ts',
  'structured-output.spec.ts',
  'tool-calls.spec.ts',
  'reasoning.spec.ts',
  'prefix-reuse.spec.ts',
  'responses.spec.ts',
  'offline.spec.ts',
  'reliability.spec.ts',
];

/** Specs that launch a browser of their own and run once, in a project of their own, rather than per device. */
const OWN_BROWSER = ['quickstart.spec.ts'];

export default defineConfig<LanternOptions>({
  testDir: 'test/e2e',
  // Model loading and SwiftShader's shader compilation take seconds on a shared CPU; this bounds hangs only.
  timeout: 180_000,
  expect: { timeout: 30_000 },
  // A worker a core, from two (about half the wall time of one on two cores, docs/tests.md) to four (the most the
  // servers' ports are laid out for: servers.ts' workerPort), each with its own browser. Both cores stay busy
  // throughout on two; a machine of more cores runs the suite in proportionally less time.
  workers: Math.min(4, Math.max(2, availableParallelism())),
  reporter: [['list'], ['./test/timing/playwright-reporter.ts']],
  // Playwright empties its output folder when it starts: its own, so that the timing that vitest recorded before it
  // (test-results/timing) stays for npm test's table.
  outputDir: 'test-results/playwright',
  use: {
    baseURL: E2E_ORIGIN,
    serviceWorkers: 'allow',
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs },
  },
  // First what takes longest alone (the quick start's installs and builds, SwiftShader's WebGPU), so that the two
  // workers end together rather than one finishing a long file alone.
  projects: [
    // The README's quick start in a fresh app, from the packed tarball, in Chromium without WebGPU.
    {
      name: 'quickstart',
      testMatch: 'quickstart.spec.ts',
      use: { launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs } },
    },
    {
      name: 'webgpu',
      testIgnore: OWN_BROWSER,
      // SwiftShader generates several times slower than WebAssembly, and slower again beside the other worker: an
      // assertion that waits for a reply (the playground's) gets longer before it calls it a hang.
      expect: { timeout: 120_000 },
      use: {
        lanternBrowser: 'chromium',
        device: 'webgpu',
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
          args: [...chromiumArgs, '--enable-unsafe-webgpu'],
        },
      },
    },
    {
      name: 'wasm',
      testIgnore: OWN_BROWSER,
      use: {
        lanternBrowser: 'chromium',
        device: 'wasm',
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs },
      },
    },
    // The shared behaviour (the wire, the clients, structured output, tools, reasoning, prefix reuse, abort, offline)
    // on llama.cpp alone (wllama, single-threaded WebAssembly), in Chromium.
    {
      name: 'llama.cpp',
      testMatch: LLAMA_CPP_SHARED_SPECS,
      use: {
        lanternBrowser: 'chromium',
        device: 'wasm',
        engines: 'llama.cpp',
        launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs },
      },
    },
    // Debian's firefox-esr (FIREFOX_PATH), driven by puppeteer-core: the portable tests (see test/e2e/browsers.ts).
    {
      name: 'firefox',
      testIgnore: OWN_BROWSER,
      grep: /@portable/,
      // An open bug: about once in two full runs, beside the other worker, one Firefox test's request never completes
      // (seen in offline.spec's llama.cpp fallback and llama-cpp.spec; never alone, in 24 repeats of those files). Each
      // failed test logs its engine's state (harness-page.ts' logEngineState), the table of `npm test` counts the failed
      // attempt, and Playwright reports the test as flaky when its retry passes; docs/tests.md says more.
      retries: 1,
      timeout: 120_000,
      use: { lanternBrowser: 'firefox', device: 'wasm' },
    },
    // Debian's WebKitGTK MiniBrowser (webkit2gtk-driver, under xvfb-run), driven over WebDriver: the portable tests.
    {
      name: 'webkit',
      testIgnore: OWN_BROWSER,
      grep: /@portable/,
      use: { lanternBrowser: 'webkit', device: 'wasm' },
    },
  ],
  webServer: {
    command: `npx vite preview --mode e2e --outDir dist-e2e --host 127.0.0.1 --port ${PORT} --strictPort`,
    url: `${E2E_ORIGIN}/test/e2e/harness.html`,
    reuseExistingServer: !process.env.CI,
  },
});
