import type { Page } from '@playwright/test';
import { expect, test } from './browsers.ts';

/**
 * The playground on a phone (390 × 844, an iPhone's viewport): every tab reachable without scrolling sideways, and no
 * tab wider than the screen once it shows what it shows after use (a chat reply, the embeddings heatmap, an issued
 * key and the key table, the API tab's code). playground.spec.ts walks each tab at a desktop's width.
 */
const WIDTH = 390;

async function openPlayground(page: Page) {
  await page.setViewportSize({ width: WIDTH, height: 844 });
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Lantern playground' })).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 60_000 });
}

/** How wide the page is laid out: wider than the viewport means a sideways scroll. */
const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

/** The elements that reach past the screen's right edge, through the shadow roots: what a failure names. */
const tooWide = (page: Page) =>
  page.evaluate(() => {
    const found: string[] = [];
    const walk = (root: Document | ShadowRoot) => {
      for (const element of root.querySelectorAll('*')) {
        const { right, width } = element.getBoundingClientRect();
        if (right > innerWidth + 0.5 && width > 0) {
          found.push(
            `<${element.localName}${element.id ? `#${element.id}` : ''} class="${element.className}"> ${Math.round(right)} px`,
          );
        }
        if (element.shadowRoot) walk(element.shadowRoot);
      }
    };
    walk(document);
    return found;
  });

test('on a 390 px screen every tab is reachable and nothing is wider than the screen', async ({ page }, info) => {
  test.skip(info.project.name !== 'wasm', 'the layout is the same on every device: the wasm run covers it');
  await openPlayground(page);
  // The tabs wrap rather than scroll: each one is on the screen, none hidden past its edge.
  const tabs = page.getByRole('tablist', { name: 'Playground sections' }).getByRole('tab');
  const names = await tabs.allTextContents();
  expect(names.length).toBeGreaterThanOrEqual(9);
  for (const tab of await tabs.all()) await expect(tab).toBeInViewport({ ratio: 1 });
  expect(await pageWidth(page)).toBeLessThanOrEqual(WIDTH);

  // Fill the tabs that grow with use: a reply (and its request in the API tab), the heatmap, an issued key.
  await page.getByRole('group', { name: 'Suggested prompts' }).getByRole('button', { name: 'Hello' }).click();
  await expect(page.locator('li.assistant .reply').last()).not.toBeEmpty();
  await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled();
  await page.getByRole('tab', { name: 'Embeddings' }).click();
  await page.getByRole('button', { name: 'Compare' }).click();
  await expect(page.getByRole('table', { name: 'Cosine similarity of every pair of texts' })).toBeVisible();
  await page.getByRole('tab', { name: 'Keys' }).click();
  await page.getByLabel('Name').fill('a phone app with a long name');
  await page.getByRole('button', { name: 'Issue a key' }).click();
  await expect(page.locator('#new-key')).toHaveText(/^lt_/);

  for (const name of names.map((n) => n.trim())) {
    const tab = page.getByRole('tab', { name, exact: true });
    // Within the screen's width (the page may have scrolled down in the last tab).
    const box = (await tab.boundingBox())!;
    expect(box.x, name).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width, name).toBeLessThanOrEqual(WIDTH);
    await tab.click();
    await expect(tab).toHaveAttribute('aria-selected', 'true');
    const panel = page.getByRole('tabpanel', { name, exact: true });
    await expect(panel).toBeVisible();
    // Opened folds count too: the API tab's route table, the chat tab's parameters and editors.
    for (const summary of await panel.locator('summary').all()) await summary.click();
    const width = await pageWidth(page);
    expect(
      width,
      `${name}: the page is wider than the screen: ${(await tooWide(page)).join(', ')}`,
    ).toBeLessThanOrEqual(WIDTH);
    await page.screenshot({ path: `test-results/screenshots/${info.project.name}-mobile-${name}.png`, fullPage: true });
  }
});
