import { defineConfig } from '@playwright/test';

/**
 * End-to-end tests in Debian's Chromium (Playwright's own browser download does not work offline), through the real
 * service worker and engine worker, served from the `--mode e2e` build. Every test runs twice: on the WebAssembly
 * path (no WebGPU adapter) and on the WebGPU path (`--enable-unsafe-webgpu`: SwiftShader's adapter, on the CPU).
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

/** Specs that launch a browser of their own and run once, in a project of their own, rather than per device. */
const OWN_BROWSER = ['firefox.spec.ts', 'quickstart.spec.ts'];

export default defineConfig({
  testDir: 'test/e2e',
  // Model loading and SwiftShader's shader compilation take seconds on a shared CPU; this bounds hangs only.
  timeout: 180_000,
  expect: { timeout: 30_000 },
  // Two cores run one browser's inference at a time best; each test still gets its own profile (service worker, caches).
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: E2E_ORIGIN,
    serviceWorkers: 'allow',
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs },
  },
  projects: [
    {
      name: 'wasm',
      testIgnore: OWN_BROWSER,
      use: { launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs } },
    },
    {
      name: 'webgpu',
      testIgnore: OWN_BROWSER,
      use: {
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
          args: [...chromiumArgs, '--enable-unsafe-webgpu'],
        },
      },
    },
    // Debian's firefox-esr, driven by puppeteer-core inside the spec (the wasm path: no WebGPU on Linux).
    { name: 'firefox', testMatch: 'firefox.spec.ts' },
    // The README's quick start in a fresh app, from the packed tarball, in Chromium without WebGPU.
    {
      name: 'quickstart',
      testMatch: 'quickstart.spec.ts',
      use: { launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs } },
    },
  ],
  webServer: {
    command: `npx vite preview --mode e2e --outDir dist-e2e --host 127.0.0.1 --port ${PORT} --strictPort`,
    url: `${E2E_ORIGIN}/test/e2e/harness.html`,
    reuseExistingServer: !process.env.CI,
  },
});
