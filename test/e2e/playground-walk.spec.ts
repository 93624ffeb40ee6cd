import { expect, PORTABLE, test, type Tab } from './browsers.ts';

/**
 * The playground's walk in Firefox and WebKit: chat streamed, embeddings compared, a key issued and used, driven
 * through the page's own elements (the portable layer has no locators; playground.spec.ts walks it in Chromium with
 * Playwright's, screenshots and accessibility checks).
 */
test.skip(
  ({ lanternBrowser }) => lanternBrowser === 'chromium',
  "playground.spec.ts walks it with Playwright's locators",
);

/** Opens the playground and waits until it can send. */
async function openPlayground(tab: Tab) {
  await tab.goto('/');
  await tab.waitForFunction(
    () => {
      const chat = document.querySelector('lantern-playground')?.shadowRoot?.querySelector('chat-panel')?.shadowRoot;
      const send = chat?.querySelector<HTMLButtonElement>('button[type=submit]');
      return send !== null && send !== undefined && !send.disabled;
    },
    undefined,
    { timeout: 60_000 },
  );
}

/** The text of every element matching `selector` in one of the playground's panels (`chat-panel`, …). */
function texts(tab: Tab, panel: string, selector: string): Promise<string[]> {
  return tab.evaluate(
    ({ panel, selector }) => {
      const root = document.querySelector('lantern-playground')!.shadowRoot!.querySelector(panel)!.shadowRoot!;
      return [...root.querySelectorAll(selector)].map((element) => element.textContent?.trim() ?? '');
    },
    { panel, selector },
  );
}

/** Fills the panel's fields (`#id` → value) and presses its button `button` (a form's submit button). */
function fillAndPress(tab: Tab, panel: string, fields: Record<string, string>, button: string): Promise<void> {
  return tab.evaluate(
    ({ panel, fields, button }) => {
      const root = document.querySelector('lantern-playground')!.shadowRoot!.querySelector(panel)!.shadowRoot!;
      for (const [id, value] of Object.entries(fields)) {
        const field = root.querySelector<HTMLInputElement | HTMLTextAreaElement>(`#${id}`)!;
        field.value = value;
        field.dispatchEvent(new Event('input', { bubbles: true }));
      }
      const target = [...root.querySelectorAll('button')].find((b) => b.textContent?.trim() === button);
      if (!target) throw new Error(`no button "${button}" in ${panel}`);
      target.click();
    },
    { panel, fields, button },
  );
}

test(
  'the playground: chat streams, embeddings compare, a key is issued and answers',
  { tag: PORTABLE },
  async ({ tab }) => {
    await openPlayground(tab);

    await fillAndPress(tab, 'chat-panel', { temperature: '0', message: 'Count to 10.' }, 'Send');
    await expect
      .poll(() => texts(tab, 'chat-panel', 'li.assistant .reply'), { timeout: 60_000 })
      .toEqual(['1, 2, 3, 4, 5, 6, 7, 8, 9, 10.']);
    await expect
      .poll(() => texts(tab, 'chat-panel', 'li.assistant .stats'))
      .toEqual([expect.stringMatching(/tokens\/s/)]);

    await fillAndPress(
      tab,
      'embeddings-panel',
      { texts: 'The cat sat on the mat.\nA kitten is on the sofa.\nhello' },
      'Compare',
    );
    await expect.poll(() => texts(tab, 'embeddings-panel', '.heatmap tbody td')).toHaveLength(9);
    expect((await texts(tab, 'embeddings-panel', '.heatmap tbody td'))[0]).toBe('1.00');

    await fillAndPress(tab, 'keys-panel', { 'key-name': 'my app' }, 'Issue a key');
    await expect.poll(() => texts(tab, 'keys-panel', '#new-key')).toEqual([expect.stringMatching(/^lt_/)]);
    const [key] = await texts(tab, 'keys-panel', '#new-key');
    const status = await tab.evaluate(
      async (k) => (await fetch('/v1/models', { headers: { authorization: `Bearer ${k}` } })).status,
      key!,
    );
    expect(status).toBe(200);
  },
);
