import { expect, type Page } from '@playwright/test';
import type { Harness } from './harness.ts';

declare global {
  interface Window {
    harness: Harness;
  }
}

/** Opens the harness page and waits until Lantern controls it. `query` configures it (`device`, `broken`). */
export async function openHarness(page: Page, query = ''): Promise<void> {
  page.on('pageerror', (error) => console.log(`[page error] ${error.message}`));
  await page.goto(`/test/e2e/harness.html${query ? `?${query}` : ''}`);
  await page.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });
}

/** Issues a key in the page's Lantern (IndexedDB) and returns the plaintext, which only this call ever sees. */
export async function issueKey(page: Page, name = 'e2e'): Promise<string> {
  return page.evaluate(async (keyName) => (await window.harness.lantern.keys.issue(keyName)).key, name);
}

/** Resolves with the engine device once the host reported it. */
export async function engineDevice(page: Page): Promise<string> {
  await expect.poll(() => page.evaluate(() => window.harness.lantern.device?.device ?? null)).not.toBeNull();
  return (await page.evaluate(() => window.harness.lantern.device!.device)) as string;
}
