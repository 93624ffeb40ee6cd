import AxeBuilder from '@axe-core/playwright';
import { expect, test } from './browsers.ts';
import { launchWithMicrophone } from './fake-microphone.ts';

/**
 * The playground's Voice tab, driven as a person would: Talk, speak (Chromium's fake microphone plays a clip of the
 * bundled speech fixtures), hear the reply, interrupt it, type a message, hang up. The whole Realtime path runs:
 * the client secret, the WebRTC offer to `/v1/realtime/calls` through the service worker, the page's answering peer,
 * voice activity, transcription, chat and speech on the bundled tiny models.
 */

test('voice: talk, see both transcripts and the turn’s latency, interrupt, type, hang up', async ({
  playwright,
  launchOptions,
  baseURL,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'one run of the call: Chromium’s fake microphone, on the wasm path');
  test.setTimeout(90_000);
  // A browser of its own: the fake microphone is a launch flag, and it plays its file once.
  const browser = await launchWithMicrophone(playwright.chromium, launchOptions, info.outputPath('microphone.wav'), [
    '--autoplay-policy=no-user-gesture-required',
  ]);
  try {
    const context = await browser.newContext({ baseURL, serviceWorkers: 'allow' });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => void errors.push(String(e)));
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Lantern playground' })).toBeVisible({ timeout: 60_000 });
    await page.getByRole('tab', { name: 'Voice' }).click();
    const panel = page.locator('voice-panel');
    const log = panel.getByRole('log');
    await expect(panel.getByRole('button', { name: 'Talk' })).toBeEnabled({ timeout: 60_000 });

    await panel.getByRole('button', { name: 'Talk' }).click();
    await expect(log).toContainText('Connected: call rtc_', { timeout: 30_000 });
    await expect(panel.getByRole('button', { name: 'Hang up' })).toBeEnabled();

    // The spoken turn: what the user said, what the assistant says, and how long it took to start speaking.
    const said = log.locator('li.user').first();
    await expect(said).toBeVisible({ timeout: 45_000 });
    await expect(said.locator('.pending')).toHaveCount(0, { timeout: 45_000 });
    await expect(said).toHaveText(/You:\s*\S/);
    await expect(log.locator('li.assistant').first()).toHaveText(/Assistant:\s*\S/, { timeout: 45_000 });
    await expect(log.locator('li.latency').first()).toHaveText(/Turn 1: \d+ ms from the end of your speech/, {
      timeout: 45_000,
    });

    // Interrupt: the reply's audio is cleared, and the server says so.
    await panel.getByRole('button', { name: 'Interrupt' }).click();
    await expect(log).toContainText(/interrupted|Reply cancelled/i);

    // A typed message gets a reply of its own.
    const replies = await log.locator('li.assistant').count();
    await panel.getByLabel('Type to the assistant').fill('Hello!');
    await panel.getByRole('button', { name: 'Send text' }).click();
    await expect(log.locator('li.user', { hasText: 'Hello!' })).toBeVisible();
    await expect(log.locator('li.assistant')).toHaveCount(replies + 1, { timeout: 45_000 });

    // Hang up: the call ends, and Talk is offered again.
    const hangup = page.waitForResponse((response) => /\/v1\/realtime\/calls\/rtc_\w+\/hangup$/.test(response.url()));
    await panel.getByRole('button', { name: 'Hang up' }).click();
    expect((await hangup).status()).toBe(200);
    await expect(log).toContainText('You hung up.');
    await expect(panel.getByRole('status')).toHaveText('Not in a call.');
    await expect(panel.getByRole('button', { name: 'Talk' })).toBeEnabled();
    expect(errors).toEqual([]);
    const axe = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21aa']).analyze();
    expect(axe.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);

    // A narrow screen: nothing wider than the phone.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: 'test-results/screenshots/wasm-voice.png', fullPage: true });
  } finally {
    await browser.close();
  }
});
