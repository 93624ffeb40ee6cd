import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { Tab } from './browsers.ts';

/**
 * Firefox for the end-to-end suite and the bench: Debian's firefox-esr (FIREFOX_PATH), driven by puppeteer-core over
 * WebDriver BiDi (Playwright cannot drive a stock Firefox).
 */
export const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';

/** `prefs`: about:config preferences of its profile (fault injection: shorter service worker timeouts). */
export async function startFirefox(
  headless: boolean | 'shell' = true,
  prefs: Record<string, unknown> = {},
): Promise<Browser> {
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless,
    extraPrefsFirefox: prefs,
  });
  listsWorkers.set(browser, await probeWorkerListing(browser));
  return browser;
}

/**
 * Whether this Firefox tells the driver of a page's dedicated workers: ESR 153 does, ESR 140 (Debian's on some
 * mirrors) never lists them over BiDi. A tab of one that does not has no `workers`, as a WebKit tab has none.
 */
const listsWorkers = new WeakMap<Browser, boolean>();

async function probeWorkerListing(browser: Browser): Promise<boolean> {
  const page = await browser.newPage();
  try {
    await page.evaluate(() => {
      const source = URL.createObjectURL(new Blob(['setInterval(() => {}, 1000);'], { type: 'text/javascript' }));
      (globalThis as { probe?: Worker }).probe = new Worker(source);
    });
    for (let i = 0; i < 20; i++) {
      if (page.workers().length > 0) return true;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return false;
  } finally {
    await page.close();
  }
}

/** A puppeteer-core page in Firefox as a `Tab`; relative URLs resolve against `baseURL`. */
export function firefoxTab(page: Page, baseURL: string | undefined): Tab {
  return {
    goto: (url) => page.goto(new URL(url, baseURL).href),
    reload: () => page.reload(),
    close: () => page.close(),
    evaluate: <R, A>(fn: (arg: A) => R | Promise<R>, arg?: A) =>
      page.evaluate(fn as (arg: unknown) => R | Promise<R>, arg) as Promise<R>,
    // Polled on a timer rather than on animation frames, which a tab in the background does not get.
    waitForFunction: (fn, _arg, options) => page.waitForFunction(fn, { polling: 100, timeout: options?.timeout ?? 0 }),
    ...(listsWorkers.get(page.browser()) !== false && { workers: () => page.workers() }),
    on: (_event, listener) =>
      page.on('pageerror', (error) => listener(error instanceof Error ? error : new Error(String(error)))),
  };
}
