import { expect, test } from '@playwright/test';
import type { LanternOptions, Tab } from './browsers.ts';
import type { Harness } from './harness.ts';

declare global {
  interface Window {
    harness: Harness;
  }
}

/** The tabs whose page errors are logged already. */
const logged = new WeakSet<Tab>();

/**
 * Opens the harness page and waits until Lantern controls it. `query` configures it (`device`, `profile`, `broken`,
 * `late`, `fallback`); `origin` picks a test server of its own. `page` is a Playwright page or any other `Tab`. A tab
 * that holds the harness at that address already (in the profile tests share: browsers.ts' `profileScope`) is kept as
 * it is, with its engine and the models loaded there.
 */
export async function openHarness(page: Tab, query = '', origin = ''): Promise<void> {
  if (!logged.has(page)) page.on('pageerror', (error) => console.log(`[page error] ${error.message}`));
  logged.add(page);
  // The project's engines (the llama.cpp project's), for every page it opens.
  const { engines, baseURL } = test.info().project.use as Partial<LanternOptions> & { baseURL?: string };
  if (engines && !/(^|&)engines=/.test(query)) query = [query, `engines=${engines}`].filter(Boolean).join('&');
  const address = `${origin || baseURL}/test/e2e/harness.html${query ? `?${query}` : ''}`;
  const open = await page.evaluate(
    (href) => location.href === href && (window as { harness?: unknown }).harness !== undefined,
    new URL(address).href,
  );
  if (open) return;
  await page.goto(address);
  await page.waitForFunction(() => window.harness !== undefined, undefined, { timeout: 60_000 });
}

/** A new tab with the harness open, in a Playwright browser context or the `tabs` fixture's. */
export async function openPage<T extends Tab>(context: { newPage(): Promise<T> }, query = '', origin = ''): Promise<T> {
  const page = await context.newPage();
  await openHarness(page, query, origin);
  return page;
}

export const HELLO_REPLY = 'Hello! How can I help you today?';

/**
 * Logs what the engine of `tab` did (loads, runs, calls in flight, whether the tab hosts and is controlled): called when
 * a test fails, so that a request that hung says where. Bounded: a wedged tab says so within 5 s.
 */
export async function logEngineState(tab: Tab): Promise<void> {
  const state = tab
    .evaluate(async () => {
      const harness = (window as { harness?: Harness }).harness;
      if (!harness) return { page: location.href, harness: false };
      return {
        page: location.href,
        controlled: navigator.serviceWorker.controller?.state ?? null,
        isHost: harness.lantern.isHost,
        // The engine worker answers between forward passes: one stuck in a pass says nothing.
        engine: await Promise.race([
          harness.lantern.engineStatus(),
          new Promise((resolve) => setTimeout(() => resolve('the engine worker did not answer within 2 s'), 2000)),
        ]),
        progress: harness.progress.map((p) => JSON.stringify(p).slice(0, 300)),
        runs: harness.runs.map((r) => `${r.task} ${r.model}: ${r.outcome} in ${Math.round(r.milliseconds)} ms`),
      };
    })
    .catch((error: unknown) => String(error));
  const silent = new Promise((resolve) => setTimeout(() => resolve('(the tab did not answer within 5 s)'), 5000));
  console.log(`[engine state at failure] ${JSON.stringify(await Promise.race([state, silent]), null, 1)}`);
}

/** Sends one greedy "Hello" through the SDK in `page`; resolves with the reply, or the SDK error's class and code. */
export function sayHello(page: Tab, key: string, model = 'crimson-falcon-4'): Promise<string | null> {
  return page.evaluate(
    async ({ k, m }) => {
      try {
        const completion = await window.harness.client(k).chat.completions.create({
          model: m,
          messages: [{ role: 'user', content: 'Hello' }],
          temperature: 0,
        });
        return completion.choices[0]!.message.content;
      } catch (error) {
        return window.harness.describeError(error);
      }
    },
    { k: key, m: model },
  );
}

/** Stores a short greedy response to "Tell me a story." through the SDK in `page`; resolves with its id and text. */
export function storeResponse(page: Tab, key: string): Promise<{ id: string; text: string }> {
  return page.evaluate(async (k) => {
    const response = await window.harness.client(k).responses.create({
      model: 'crimson-falcon-4',
      input: 'Tell me a story.',
      temperature: 0,
      max_output_tokens: 12,
    });
    return { id: response.id, text: response.output_text };
  }, key);
}

/** A request that cannot end by itself: <|endoftext|> and <|im_end|> banned, so only an abort or the limit stops it. */
export const ENDLESS = {
  messages: [{ role: 'user' as const, content: 'Tell me a story.' }],
  max_tokens: 1000,
  logit_bias: { 0: -100, 2: -100 },
};

/** Issues a key in the page's Lantern (IndexedDB) and returns the plaintext, which only this call ever sees. */
export async function issueKey(page: Tab, name = 'e2e'): Promise<string> {
  return page.evaluate(async (keyName) => (await window.harness.lantern.keys.issue(keyName)).key, name);
}

/** Resolves with the engine device once the host reported it. */
export async function engineDevice(page: Tab): Promise<string> {
  await expect.poll(() => page.evaluate(() => window.harness.lantern.device?.device ?? null)).not.toBeNull();
  return (await page.evaluate(() => window.harness.lantern.device!.device)) as string;
}
