import { test as base, type Browser, type BrowserContext } from '@playwright/test';
import type { Browser as PuppeteerBrowser } from 'puppeteer-core';
import { firefoxTab, startFirefox } from './firefox-driver.ts';
import { workerPort } from './servers.ts';
import { launchWebKitDriver, type WebKitDriver, webkitTab } from './webkit-driver.ts';

/**
 * The browsers of the end-to-end suite, behind one small layer, so that a spec is written once and runs in every
 * project: Debian's Chromium driven by Playwright (the `wasm` and `webgpu` projects, each with its own launch options),
 * Debian's firefox-esr driven by puppeteer-core over WebDriver BiDi (the `firefox` project: Playwright cannot drive
 * a stock Firefox), and Debian's WebKitGTK MiniBrowser driven over W3C WebDriver (the `webkit` project: Safari's
 * engine; see webkit-driver.ts). A test that uses only the `tab` and `tabs` fixtures, and only the `Tab` operations
 * below, is portable: tag it `PORTABLE` and the firefox and webkit projects run it too. Tests that need more of
 * Playwright (CDP, locators, request interception, console events) keep using `page` and `context` and run in the
 * Chromium projects only.
 */

/** The tag of the tests that the firefox and webkit projects run: those written with `tab` and `tabs` only. */
export const PORTABLE = '@portable';

/**
 * A tab: the page operations the portable tests use. Playwright's `Page` is one as it is; in Firefox, puppeteer-core's
 * page behind an adapter. `goto` takes a URL relative to the project's `baseURL`, or an absolute one.
 */
export interface Tab {
  goto(url: string): Promise<unknown>;
  reload(): Promise<unknown>;
  close(): Promise<void>;
  evaluate<R>(fn: () => R | Promise<R>): Promise<R>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  waitForFunction(fn: () => unknown, arg?: undefined, options?: { timeout?: number }): Promise<unknown>;
  /**
   * The dedicated workers this tab runs (Lantern's engine worker, in the host tab); absent where the browser's driver
   * cannot list them (WebDriver).
   */
  workers?(): readonly unknown[];
  on(event: 'pageerror', listener: (error: Error) => void): unknown;
}

/** A browser context (its own service worker, caches and IndexedDB), in which a test opens tabs. */
export interface Tabs {
  newPage(): Promise<Tab>;
}

export type LanternBrowser = 'chromium' | 'firefox' | 'webkit';

/** The options a project sets in `use`. */
export interface LanternOptions {
  /** Which browser the project runs: Playwright's Chromium (with the project's launch options), or Firefox. */
  lanternBrowser: LanternBrowser;
  /** The engine device Lantern finds in this project's browser: `webgpu` where it offers an adapter, else `wasm`. */
  device: 'wasm' | 'webgpu';
  /**
   * The only engines the bundled profile keeps (`bundledProfile(…, { engines })`, the harness's `?engines=`), or all:
   * the `llama.cpp` project runs the shared tests on llama.cpp alone.
   */
  engines: string | undefined;
}

interface WorkerFixtures extends LanternOptions {
  /** Launch the project's browser on first call, once per worker; what was launched closes with the worker. */
  launchChromium: () => Promise<Browser>;
  launchFirefox: () => Promise<PuppeteerBrowser>;
  launchWebKit: () => Promise<WebKitDriver>;
}

interface TestFixtures {
  /** A fresh browser context of the project's browser, closed after the test. */
  tabs: Tabs;
  /** A tab in `tabs` (nothing loaded yet). */
  tab: Tab;
}

/** A lazily launched browser: `get` launches it on first use; `close` closes it if it was. */
function lazy<B extends { close(): Promise<unknown> }>(launch: () => Promise<B>) {
  let launched: Promise<B> | undefined;
  return {
    get: () => (launched ??= launch()),
    close: async () => void (await (await launched?.catch(() => undefined))?.close()),
  };
}

export const test = base.extend<TestFixtures, WorkerFixtures>({
  lanternBrowser: ['chromium', { scope: 'worker', option: true }],
  device: ['wasm', { scope: 'worker', option: true }],
  engines: [undefined, { scope: 'worker', option: true }],

  launchChromium: [
    async ({ playwright, lanternBrowser, launchOptions }, use) => {
      const chromium = lazy(() => {
        if (lanternBrowser !== 'chromium') {
          const only = `a test tagged ${PORTABLE} uses tab and tabs, not page, context or browser`;
          throw new Error(`the ${lanternBrowser} project does not launch Playwright's Chromium: ${only}`);
        }
        // As Playwright's own `browser` fixture launches it (its defaults: headless or --headed), with the project's
        // launch options (executable, flags such as --enable-unsafe-webgpu).
        return playwright.chromium.launch(launchOptions);
      });
      await use(chromium.get);
      await chromium.close();
    },
    { scope: 'worker' },
  ],
  launchFirefox: [
    async ({ lanternBrowser, headless }, use) => {
      const firefox = lazy(() => {
        if (lanternBrowser !== 'firefox') throw new Error(`the ${lanternBrowser} project does not launch Firefox`);
        return startFirefox(headless);
      });
      await use(firefox.get);
      await firefox.close();
    },
    { scope: 'worker' },
  ],
  launchWebKit: [
    async ({ lanternBrowser }, use, { parallelIndex }) => {
      const webkit = lazy(async () => {
        if (lanternBrowser !== 'webkit') throw new Error(`the ${lanternBrowser} project does not launch WebKit`);
        return launchWebKitDriver(workerPort(4444, parallelIndex));
      });
      await use(webkit.get);
      await webkit.close();
    },
    { scope: 'worker' },
  ],
  // Playwright's `browser` (behind `page` and `context`) is the same Chromium as the one behind `tabs`: one per worker.
  browser: [async ({ launchChromium }, use) => use(await launchChromium()), { scope: 'worker', timeout: 0 }],

  tabs: async ({ lanternBrowser, launchChromium, launchFirefox, launchWebKit, baseURL, serviceWorkers }, use) => {
    if (lanternBrowser === 'chromium') {
      const context: BrowserContext = await (await launchChromium()).newContext({ baseURL, serviceWorkers });
      await use(context);
      await context.close();
      return;
    }
    if (lanternBrowser === 'webkit') {
      const session = await (await launchWebKit()).newSession();
      await use({ newPage: () => webkitTab(session, baseURL) });
      await session.quit();
      return;
    }
    const context = await (await launchFirefox()).createBrowserContext();
    await use({ newPage: async () => firefoxTab(await context.newPage(), baseURL) });
    await context.close();
  },
  tab: async ({ tabs }, use) => use(await tabs.newPage()),
});

export { expect } from '@playwright/test';
