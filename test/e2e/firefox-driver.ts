import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import type { Tab } from './browsers.ts';

/**
 * Firefox for the end-to-end suite and the bench: Debian's firefox-esr (FIREFOX_PATH), driven by puppeteer-core over
 * WebDriver BiDi (Playwright cannot drive a stock Firefox).
 */
export const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';

export function startFirefox(headless: boolean | 'shell' = true): Promise<Browser> {
  return puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless });
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
    workers: () => page.workers(),
    on: (_event, listener) =>
      page.on('pageerror', (error) => listener(error instanceof Error ? error : new Error(String(error)))),
  };
}
