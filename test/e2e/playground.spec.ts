import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, test } from './browsers.ts';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import sharp from 'sharp';
import type { AddressInfo } from 'node:net';
import { speechClip } from '../support/speech-fixture.ts';
import { startServer, workerPort } from './servers.ts';
import { clipAllowance, wordErrors } from '../support/word-error-rate.ts';

/**
 * The playground, driven as a person would: type and send, watch the reply stream, compare embeddings on the heatmap,
 * transcribe a clip and speak a sentence (and hear a reply read aloud), issue and revoke a key; every tab checked for
 * accessibility, and screenshots saved (test-results/screenshots).
 *
 * The page does the same on either device: the webgpu project runs only what differs there (the capabilities tab's
 * adapter and shader-f16, the engine's device, a stop while SwiftShader is still generating). Each kind of model
 * answers on WebGPU in its own spec (openai-sdk, vision, transcription, speech).
 */
const shot = (page: Page, name: string, project: string) =>
  page.screenshot({ path: `test-results/screenshots/${project}-${name}.png`, fullPage: true });

async function openPlayground(page: Page, path = '/') {
  await page.goto(path);
  await expect(page.getByRole('heading', { name: 'Lantern playground' })).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 60_000 });
}

/** The chat tab's parameters and editors are folded (`<details>`) until opened by their summary. */
const CHAT_FOLDS = ['System prompt and parameters', 'Structured output', 'Tools'] as const;

/** Opens one of the chat tab's folded sections by clicking its summary, as a person would. */
async function unfold(page: Page, name: (typeof CHAT_FOLDS)[number]) {
  await page.locator('chat-panel summary', { hasText: name }).click();
  await expect(page.locator('chat-panel details', { hasText: name })).toHaveAttribute('open', '');
}

/** Temperature 0: the tiny model's greedy reply is exact; at the playground's default of 1 it is sampled. */
async function chooseGreedy(page: Page) {
  await unfold(page, 'System prompt and parameters');
  await page.getByLabel('Temperature').fill('0');
}

// A failed run says what the page said: its alerts and console errors reach the CI log, not only a screenshot.
const pageErrors = new WeakMap<Page, string[]>();
test.beforeEach(({ page }) => {
  const errors: string[] = [];
  pageErrors.set(page, errors);
  page.on('console', (m) => void (m.type() === 'error' && errors.push(m.text())));
  page.on('pageerror', (e) => void errors.push(String(e)));
});
test.afterEach(async ({ page }, info) => {
  if (info.status === info.expectedStatus) return;
  const alerts = await page.getByRole('alert').allTextContents();
  console.log(`${info.title}: alerts ${JSON.stringify(alerts)}, errors ${JSON.stringify(pageErrors.get(page))}`);
});

// The tests that only drive the page share a profile (its service worker and stored app); each opens the page anew.
test.use({ profileScope: 'shared' });

async function expectAccessible(page: Page) {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21aa']).analyze();
  expect(results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
}

test('chat opens on the conversation and the message box, with the parameters and editors folded', async ({
  page,
}, info) => {
  test.skip(info.project.name === 'webgpu', 'the page before any model runs: the wasm run covers it');
  await openPlayground(page); // at Playwright's default viewport, 1280 × 720
  // The first screen, unscrolled: the conversation and everything needed to send a message.
  expect(await page.evaluate(() => scrollY)).toBe(0);
  await expect(page.getByRole('list', { name: 'Conversation' })).toBeInViewport({ ratio: 1 });
  await expect(page.getByLabel('Message')).toBeInViewport({ ratio: 1 });
  await expect(page.getByRole('button', { name: 'Send' })).toBeInViewport({ ratio: 1 });
  // Every fold is closed, its controls hidden until it is opened.
  for (const name of CHAT_FOLDS) {
    await expect(page.locator('chat-panel details', { hasText: name })).not.toHaveAttribute('open');
  }
  for (const label of ['Temperature', 'Response format', 'JSON schema', 'Declare tools', 'Tools (JSON)']) {
    await expect(page.getByLabel(label, { exact: true })).toBeHidden();
  }
  await shot(page, 'chat-first-screen', info.project.name);
  // The bundled models say what they are, before anyone takes them for real ones.
  const tiny = page.getByRole('region', { name: 'Tiny test models' });
  await expect(tiny).toBeInViewport();
  await expect(tiny).toContainText('under 1M parameters');
  await expect(tiny).toContainText('choose Real models under Models');
  await expect(page.getByLabel('Model profile')).toHaveValue('bundled');

  // An empty conversation suggests first prompts; one click sends it, and the model answers.
  const suggestions = page.getByRole('group', { name: 'Suggested prompts' });
  await expect(suggestions.getByRole('button')).toHaveText([
    'Hello',
    'Tell me a story.',
    'What is the capital of France?',
    'Count to 10.',
    'Name three fruits.',
    'What is 3 + 4?',
  ]);
  await chooseGreedy(page);
  await suggestions.getByRole('button', { name: 'What is the capital of France?' }).click();
  await expect(page.locator('li.user').last()).toContainText('What is the capital of France?');
  await expect(page.locator('li.assistant .reply').last()).toContainText('Paris');
  await expect(suggestions).toBeHidden();

  // Unfolded, each shows its controls; a folded editor's summary says what it has on.
  await unfold(page, 'Structured output');
  await page.getByLabel('Response format').selectOption('json_schema');
  await page.locator('chat-panel summary', { hasText: 'Structured output' }).click();
  await expect(page.locator('chat-panel summary', { hasText: 'Structured output' })).toHaveText(
    'Structured output · JSON schema',
  );
  await unfold(page, 'Tools');
  await page.getByLabel('Declare tools').check();
  await expect(page.getByLabel('Tools (JSON)')).toBeEditable();
  await expect(page.locator('chat-panel summary', { hasText: 'Tools' })).toHaveText('Tools · declared');
  await expectAccessible(page);
});

test('chat: type, send, watch the reply stream, with its speed; regenerate', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page renders what streams: the wasm run covers it; openai-sdk.spec.ts streams on WebGPU',
  );
  await openPlayground(page);
  await chooseGreedy(page);
  await page.getByLabel('Message').fill('Count to 10.');
  // Watch the reply grow while it streams: every version of the text the page shows, recorded as it renders.
  await page.evaluate(() => {
    const root = document.querySelector('lantern-playground')!.shadowRoot!.querySelector('chat-panel')!.shadowRoot!;
    const seen: string[] = [];
    (window as unknown as { seen: string[] }).seen = seen;
    new MutationObserver(() => {
      const text = root.querySelector('li.assistant .reply')?.textContent ?? '';
      if (text !== seen.at(-1)) seen.push(text);
    }).observe(root, { subtree: true, childList: true, characterData: true });
  });
  await page.getByRole('button', { name: 'Send' }).click();
  const reply = page.locator('li.assistant .reply').last();
  await expect(reply).toHaveText('1, 2, 3, 4, 5, 6, 7, 8, 9, 10.');
  const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
  // Token by token: the text grew through many intermediate states, each a prefix of the next.
  expect(seen.filter((t) => t.length > 0 && t.length < 30).length).toBeGreaterThan(5);
  seen.slice(1).forEach((text, i) => expect(text.startsWith(seen[i]!)).toBe(true));
  await expect(page.getByRole('status').filter({ hasText: 'Reply complete' })).toBeVisible();
  await expect(page.locator('li.assistant .stats').last()).toContainText(/first token \d+ ms/);
  await expect(page.locator('li.assistant .stats').last()).toContainText(/\d+ tokens\/s/);
  await shot(page, 'chat', info.project.name);

  await page.getByRole('button', { name: 'Regenerate' }).click();
  await expect(page.locator('li.assistant')).toHaveCount(1);
  await expect(reply).toHaveText('1, 2, 3, 4, 5, 6, 7, 8, 9, 10.');

  // The API tab shows what was just done: the SDK code and every server-sent event.
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('client.chat.completions.create');
  await expect(page.getByLabel('Server-sent events')).toContainText('data: [DONE]');
  await shot(page, 'api', info.project.name);
  await expectAccessible(page);
});

test('chat with n = 2 and a stop sequence shows both choices', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page shows the choices: the wasm run covers it; prefix-reuse.spec.ts runs n = 2 on WebGPU',
  );
  await openPlayground(page);
  await chooseGreedy(page);
  await page.getByLabel('n (choices)').fill('2');
  await page.getByLabel('Stop sequences').fill(', 5');
  await page.getByLabel('Message').fill('Count to 10.');
  await page.getByLabel('Message').press('Enter');
  await expect(page.getByRole('region', { name: 'Choice 2' })).toContainText('1, 2, 3, 4');
  await expect(page.locator('li.assistant .stats')).toContainText('finish: stop, stop');
});

test('chat: an image attached goes as an image_url part, and the model answers about it', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page attaches and sends: the wasm run covers it; vision.spec.ts sees on WebGPU',
  );
  await openPlayground(page);
  await chooseGreedy(page);
  // A red square on a light background, as the bundled tiny-vision was trained to see.
  const square = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#dc1e1e' } })
    .png()
    .toBuffer();
  const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#f0f0f0' } })
    .composite([{ input: square, left: 30, top: 12 }])
    .png()
    .toBuffer();
  const attach = page.locator('chat-panel #attach');
  await attach.setInputFiles([
    { name: 'red.png', mimeType: 'image/png', buffer: png },
    { name: 'again.png', mimeType: 'image/png', buffer: png },
  ]);
  await expect(page.getByRole('img', { name: /^Attached image/ })).toHaveCount(2);
  await page.getByRole('button', { name: 'Remove image 2' }).click();
  await expect(page.getByRole('img', { name: /^Attached image/ })).toHaveCount(1);
  // The page sends the text, then the image (as OpenAI's guide writes it). In that order tiny-vision answers "What shape
  // appears in the picture?" about this image with "One." since its fourth stage (scripts/fixtures/README.md): 72 of
  // its 80 held-out questions are right text first, 76 image first.
  await page.getByLabel('Message').fill('What is drawn in the picture?');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.getByRole('img', { name: 'Image 1 you sent' })).toBeVisible();
  await expect(page.getByRole('img', { name: /^Attached image/ })).toHaveCount(0);
  // crimson-falcon-4's chain has the bundled vision model: it answers a message with an image.
  await expect(page.locator('li.assistant .reply')).toHaveText('A red square.');
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('image_url');
});

test('stop ends a reply while it streams', async ({ page }, info) => {
  test.skip(info.project.name !== 'webgpu', 'on wasm the tiny model answers before a click can stop it');
  await openPlayground(page);
  await page.getByLabel('Message').fill('Tell me a story.');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('li.assistant .reply')).not.toHaveText('');
  await page.getByRole('button', { name: 'Stop' }).click();
  await expect(page.getByRole('alert')).toHaveText('Stopped.');
});

test('embeddings: compare texts on a cosine-similarity heatmap', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page draws the heatmap: the wasm run covers it; openai-sdk.spec.ts embeds on WebGPU',
  );
  await openPlayground(page);
  await page.getByRole('tab', { name: 'Embeddings' }).click();
  await page.getByLabel('Texts').fill('The cat sat on the mat.\nA kitten is sitting on the sofa.\nhello world');
  await page.getByRole('button', { name: 'Compare' }).click();
  const heatmap = page.getByRole('table', { name: 'Cosine similarity of every pair of texts' });
  await expect(heatmap.locator('tbody td')).toHaveCount(9);
  await expect(heatmap.locator('tbody tr').first().locator('td').first()).toHaveText('1.00');
  // The demo demonstrates something: the paraphrase (the kitten) scores above the unrelated text against the cat.
  const [, kitten, hello] = (await heatmap.locator('tbody tr').first().locator('td').allTextContents()).map(Number);
  expect(kitten).toBeGreaterThan(hello!);
  await shot(page, 'embeddings', info.project.name);
  await expectAccessible(page);
});

test('speech to text: a file chosen, its transcript streamed in, then its subtitles', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page sends and shows: the wasm run covers it; transcription.spec.ts transcribes on WebGPU',
  );
  await openPlayground(page);
  await page.getByRole('tab', { name: 'Speech to text' }).click();
  const panel = page.locator('transcription-panel');
  await panel.getByLabel('Audio file (or drop one here)').setInputFiles('test/fixtures/speech/clip02.wav');
  await panel.getByLabel('Stream').check();
  await panel.getByRole('button', { name: 'Transcribe' }).click();
  const transcript = panel.locator('.transcript');
  await expect(transcript).toHaveAttribute('aria-busy', 'false', { timeout: 60_000 });
  const words = (await transcript.textContent())!;
  const spoken = speechClip('clip02.wav').text;
  expect(wordErrors(spoken, words).errors, words).toBeLessThanOrEqual(clipAllowance(spoken));
  await panel.getByLabel('Stream').uncheck();
  await panel.getByLabel('Format').selectOption('srt');
  await panel.getByRole('button', { name: 'Transcribe' }).click();
  await expect(panel.getByLabel('Subtitles')).toContainText('00:00:00', { timeout: 60_000 });
  await shot(page, 'speech-to-text', info.project.name);
  await expectAccessible(page);
});

/** Seconds of audio an `<audio>` element has loaded: 0 until its metadata is in (`loadedmetadata`). */
const loadedSeconds = (page: Page) =>
  page
    .locator('speech-panel audio')
    .evaluate((audio: HTMLAudioElement) => (audio.readyState >= 1 ? audio.duration : 0));

/** The seconds a line of stats says were played through Web Audio as they arrived ("1.23 s played as it arrived"). */
const playedSeconds = (text: string | null) => Number(/([\d.]+) s played as it arrived/.exec(text ?? '')?.[1] ?? 0);

/** Presses a download link and resolves with the file's name and bytes. */
async function download(page: Page, link: ReturnType<Page['getByRole']>) {
  const started = page.waitForEvent('download');
  await link.click();
  const file = await started;
  return { name: file.suggestedFilename(), bytes: await readFile((await file.path())!) };
}

test('text to speech: a sentence said, played as it arrives, then from a file; downloaded', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page plays what arrives: the wasm run covers it; speech.spec.ts speaks on WebGPU',
  );
  await openPlayground(page);
  await page.getByRole('tab', { name: 'Text to speech' }).click();
  const panel = page.locator('speech-panel');
  // The voices are the model card's (`GET /v1/models`): OpenAI's names, then the bundled model's own.
  await expect(panel.getByLabel('Model')).toHaveValue('ochre-lark-4');
  await expect(panel.getByLabel('Voice').locator('option')).toContainText(['alloy', 'cedar', 'us_female', 'gb_male']);
  await expect(panel.getByLabel('Audio format')).toHaveValue('wav'); // encoded everywhere, no optional package
  await panel.getByLabel('Text to say').fill('The brown fox jumps. The black cat sleeps on Sunday.');
  await panel.getByLabel('Voice').selectOption('gb_male');
  await panel.getByRole('button', { name: 'Speak' }).click();
  const status = panel.getByRole('status');
  await expect(status).toHaveText(/^Done: [\d.]+ s of audio\.$/, { timeout: 120_000 });

  // Played through Web Audio while it streamed, then ready to replay from the file, which the browser reads.
  const stats = panel.locator('.stats');
  await expect(stats).toContainText(/first audio \d+ ms/);
  await expect(stats).toContainText(/real-time factor \d+\.\d\d/);
  const seconds = Number(/([\d.]+) s of audio/.exec((await stats.textContent()) ?? '')![1]);
  expect(seconds).toBeGreaterThan(1); // two sentences
  expect(playedSeconds(await stats.textContent())).toBeCloseTo(seconds, 1);
  await expect.poll(() => loadedSeconds(page)).toBeCloseTo(seconds, 1);
  const wav = await download(page, panel.getByRole('link', { name: 'Download speech.wav' }));
  expect(wav.name).toBe('speech.wav');
  expect(wav.bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
  expect(wav.bytes.readUInt32LE(24)).toBe(24_000);
  await shot(page, 'text-to-speech', info.project.name);
  await expectAccessible(page);
});

test('text to speech: opus through server-sent events, mp3 played or refused, and the code in the API tab', async ({
  page,
}, info) => {
  // On SwiftShader a sentence takes many seconds to say; the formats are the page's and the encoders' business.
  test.skip(info.project.name !== 'wasm', 'the formats do not depend on the device: the wasm run covers them');
  await openPlayground(page);
  await page.getByRole('tab', { name: 'Text to speech' }).click();
  const panel = page.locator('speech-panel');
  const status = panel.getByRole('status');
  await panel.getByLabel('Text to say').fill('The brown fox jumps. The black cat sleeps on Sunday.');
  await panel.getByLabel('Voice').selectOption('gb_male');

  // Opus through server-sent events: gathered, then played from a Blob by the <audio> element.
  await panel.getByLabel('Audio format').selectOption('opus');
  await expect(panel.getByLabel('Play as it arrives')).toBeDisabled();
  await panel.getByLabel('Stream format').selectOption('sse');
  await panel.getByRole('button', { name: 'Speak' }).click();
  await expect(status).toHaveText(/^Done: [\d.]+ s of audio\.$/, { timeout: 120_000 });
  await expect(panel.locator('.stats')).not.toContainText('played as it arrived');
  await expect.poll(() => loadedSeconds(page)).toBeGreaterThan(1);
  const opus = await download(page, panel.getByRole('link', { name: 'Download speech.opus' }));
  expect(opus.bytes.subarray(0, 4).toString('latin1')).toBe('OggS');

  // The API tab has the request, as the SDK and fetch make it, and its events.
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('client.audio.speech.create({');
  await expect(page.getByLabel('openai SDK code')).toContainText('"voice": "gb_male"');
  await expect(page.getByLabel('openai SDK code')).toContainText("event.type === 'speech.audio.delta'");
  await expect(page.getByLabel('Server-sent events')).toContainText('"type":"speech.audio.done"');
  await expectAccessible(page);

  // mp3 needs an optional encoder a browser app may not have installed: it plays, or the refusal says why.
  await page.getByRole('tab', { name: 'Text to speech' }).click();
  await panel.getByLabel('Audio format').selectOption('mp3');
  await panel.getByLabel('Stream format').selectOption('audio');
  await panel.getByRole('button', { name: 'Speak' }).click();
  await expect(status).toHaveText(/^(Done: [\d.]+ s of audio|The request failed)\.$/, { timeout: 120_000 });
  if ((await status.textContent())!.startsWith('Done')) {
    await expect.poll(() => loadedSeconds(page)).toBeGreaterThan(1);
  } else {
    await expect(panel.getByRole('alert')).toContainText("response_format 'mp3'");
    await expect(panel.getByRole('button', { name: 'Speak' })).toBeEnabled();
  }
});

test('text to speech: raw pcm plays through Web Audio as it arrives, and stop ends it', async ({ page }, info) => {
  test.skip(info.project.name !== 'wasm', 'the page plays what arrives: the device is covered by the test above');
  await openPlayground(page);
  await page.getByRole('tab', { name: 'Text to speech' }).click();
  const panel = page.locator('speech-panel');
  await panel.getByLabel('Audio format').selectOption('pcm');
  await panel.getByLabel('Speed').fill('1.5');
  await panel.getByRole('button', { name: 'Speak' }).click();
  const status = panel.getByRole('status');
  await expect(status).toHaveText(/^Done: [\d.]+ s of audio\.$/, { timeout: 120_000 });
  const stats = panel.locator('.stats');
  expect(playedSeconds(await stats.textContent())).toBeGreaterThan(0.5);
  // The player gets the samples under a WAV header; the download is the bytes as sent, 16-bit, no header.
  await expect.poll(() => loadedSeconds(page)).toBeGreaterThan(0.5);
  const pcm = await download(page, panel.getByRole('link', { name: 'Download speech.pcm' }));
  expect(pcm.bytes.length % 2).toBe(0);
  expect(pcm.bytes.subarray(0, 4).toString('latin1')).not.toBe('RIFF');
  // Stop ends the request and silences what is playing; with nothing left to stop, it is disabled.
  await panel.getByRole('button', { name: 'Speak' }).click();
  await panel.getByRole('button', { name: 'Stop' }).click();
  await expect(panel.getByRole('button', { name: 'Stop' })).toBeDisabled();
});

test('chat: a reply read aloud by the speech model, and the request in the API tab', async ({ page }, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the page reads a reply aloud: the wasm run covers it; speech.spec.ts speaks on WebGPU',
  );
  await openPlayground(page);
  expect(await sayHello(page)).toBe('Hello! How can I help you today?');
  const read = page.locator('li.assistant').last().getByRole('button', { name: 'Read aloud' });
  await expect(read).toHaveAttribute('aria-pressed', 'false');
  await read.click();
  const said = page.getByRole('status').filter({ hasText: /^Read aloud:/ });
  await expect(said).toHaveText(/^Read aloud: [\d.]+ s of audio\.$/, { timeout: 120_000 });
  expect(Number(/([\d.]+) s/.exec((await said.textContent())!)![1])).toBeGreaterThan(0.5);
  await expect(page.locator('li.assistant .stats').last()).toContainText(
    /read aloud: [\d.]+ s of audio, first after \d+ ms/,
  );
  await expect(page.locator('li.assistant [role=alert]')).toHaveCount(0);
  await shot(page, 'chat-read-aloud', info.project.name);
  await expectAccessible(page);
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('client.audio.speech.create({');
  await expect(page.getByLabel('openai SDK code')).toContainText('"input": "Hello! How can I help you today?"');
  await expect(page.getByLabel('Response body')).toContainText('audio/pcm');
});

test('models and capabilities: what each ID resolved to, and what the browser offers', async ({ page }, info) => {
  await openPlayground(page);
  await chooseGreedy(page);
  await page.getByLabel('Message').fill('Hello');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('li.assistant .reply')).toHaveText('Hello! How can I help you today?');
  await page.getByRole('tab', { name: 'Models' }).click();
  const crimson = page.getByRole('region', { name: 'crimson-falcon-4' });
  await expect(crimson.locator('li.loaded')).toContainText('/models/tiny-chat');
  // The bundled models are the app's own: precached, never downloaded, and not the playground's to delete.
  await expect(crimson).toContainText('ships with the app');
  await expect(page.getByRole('region', { name: 'Storage' })).toContainText('These models ship with the app');
  await expect(page.getByRole('region', { name: 'jade-mole-4' })).not.toContainText('not stored');
  await expect(page.getByRole('button', { name: /^(Download|Resume download|Delete) / })).toHaveCount(0);
  await shot(page, 'models', info.project.name);
  await expectAccessible(page);

  await page.getByRole('tab', { name: 'Capabilities' }).click();
  const capabilities = page.getByRole('table', { name: 'Capabilities of this browser' });
  await expect(capabilities).toContainText(
    info.project.name === 'webgpu' ? /shader-f16\s*no/ : /WebGPU adapter\s*none/,
  );
  if (info.project.name === 'webgpu') await expect(capabilities).toContainText(/swiftshader \(fallback adapter/);
  const device = info.project.name === 'webgpu' ? 'webgpu' : 'wasm';
  await expect(capabilities).toContainText(new RegExp(`Engine\\s*${device} · hosted by this tab`));
  await shot(page, 'capabilities', info.project.name);
  await expectAccessible(page);
});

/** What reached the recording server: every request, preflights included. */
interface Recorded {
  method: string;
  path: string;
  body: string;
}

/** The reply of the recording server: nothing the bundled models say. */
const SERVER_REPLY = 'Hello from the recording server.';

/**
 * An OpenAI-compatible server on a free port of its own, which records every request that reaches it and answers chat
 * completions (streamed, as the playground asks) with `SERVER_REPLY`. It allows any origin (CORS), as a server an
 * attacker sets up for a crafted link would.
 */
async function recordingServer() {
  const requests: Recorded[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      requests.push({ method: request.method ?? '', path: request.url ?? '', body });
      response.setHeader('access-control-allow-origin', request.headers.origin ?? '*');
      response.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
      response.setHeader('access-control-allow-headers', request.headers['access-control-request-headers'] ?? '*');
      if (request.method === 'OPTIONS') return void response.writeHead(204).end();
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions')
        return void response.writeHead(404).end();
      const chunk = (choices: unknown[], extra = {}) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-recorded', object: 'chat.completion.chunk', created: 0, model: 'far-model', choices, ...extra })}\n\n`;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(
        chunk([{ index: 0, delta: { role: 'assistant', content: SERVER_REPLY }, finish_reason: null }]) +
          chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]) +
          chunk([], { usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } }) +
          'data: [DONE]\n\n',
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    baseURL: `${origin}/v1`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((done) => server.close(done));
    },
  };
}

/** Sends "Hello" at temperature 0 and resolves with the reply, once it is complete. */
async function sayHello(page: Page): Promise<string> {
  const replies = page.locator('li.assistant .reply');
  const before = await replies.count();
  await chooseGreedy(page);
  await page.getByLabel('Message').fill('Hello');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(replies).toHaveCount(before + 1);
  await expect(page.getByRole('status').filter({ hasText: 'Reply complete' })).toBeVisible();
  return (await replies.last().textContent()) ?? '';
}

/** Clicks a button that reloads the page, and waits until the reloaded page can send. */
async function clickAndReload(page: Page, name: string) {
  const loaded = page.waitForEvent('load');
  await page.getByRole('button', { name }).click();
  await loaded;
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeEnabled({ timeout: 60_000 });
}

test('chat: structured output, a schema picked, the JSON streamed and validated in the page', async ({
  page,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'engine-side feature: the wasm project covers it');
  await openPlayground(page);
  await chooseGreedy(page);
  await unfold(page, 'Structured output');
  await page.getByLabel('Response format').selectOption('json_schema');
  await page.getByLabel('Example schema').selectOption('weather');
  await expect(page.getByLabel('JSON schema')).toHaveValue(/"celsius"/);
  await page.getByLabel('Message').fill('What is the weather?');
  await page.getByRole('button', { name: 'Send' }).click();
  const reply = page.locator('li.assistant .reply').last();
  await expect(page.locator('li.assistant .check').last()).toHaveText('✓ Valid: matches the schema.');
  const text = (await reply.textContent()) ?? '';
  expect(Object.keys(JSON.parse(text) as object)).toEqual(['city', 'celsius', 'sky']);
  await shot(page, 'structured-output', info.project.name);
  await expectAccessible(page);
  // The API tab shows the response_format that was sent.
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('json_schema');
});

test('chat: tools declared, a call shown with its arguments, answered, and the conversation goes on', async ({
  page,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'engine-side feature: the wasm project covers it');
  await openPlayground(page);
  await chooseGreedy(page);
  await unfold(page, 'Tools');
  await page.getByLabel('Declare tools').check();
  await expect(page.getByLabel('Tools (JSON)')).toHaveValue(/"get_weather"/);
  await page.getByLabel('Message').fill('What is the weather in Paris?');
  await page.getByRole('button', { name: 'Send' }).click();

  const call = page.locator('tool-calls-view .tool-call').last();
  await expect(call.locator('.name')).toHaveText('get_weather');
  // The name shows with the call's first delta; its arguments stream in after it.
  const args = async () => {
    const text = (await call.locator('.arguments').textContent()) ?? '';
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text; // not all there yet
    }
  };
  await expect.poll(args).toEqual({ city: 'Paris' });
  await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeDisabled(); // the call waits for its result
  await page.getByLabel('Result of get_weather').fill('{"temperature": 18, "condition": "sunny"}');
  await shot(page, 'tool-call', info.project.name);
  await expectAccessible(page);
  await page.getByRole('button', { name: 'Send results' }).click();
  await expect(page.locator('li.tool').last()).toContainText('"temperature": 18');
  // The reply is the model's reading of the result: tiny-chat copies its temperature and city (the condition word sits
  // on a thin margin, and the retrained model reads "sunny" as "snowy").
  await expect(page.locator('li.assistant .reply').last()).toHaveText(/^It is \w+ and 18 degrees in Paris\.$/);

  // The next question calls the other tool.
  await page.getByLabel('Message').fill('What time is it in Oslo?');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await expect(page.locator('tool-calls-view .tool-call .name').last()).toHaveText('get_time');
  // The API tab shows the tools that were sent.
  await page.getByRole('tab', { name: 'API' }).click();
  await expect(page.getByLabel('openai SDK code')).toContainText('get_time');
});

/**
 * What a fresh profile shows, or what a test leaves in its profile (documents, keys, servers added or allowed, a theme
 * and a narrow window, a first visit): each of these tests has a profile of its own.
 */
test.describe('with a profile of its own', () => {
  test.use({ profileScope: 'test' });

  test('documents: two files indexed, a question answered from the right one and cited; kept over a reload', async ({
    page,
  }, info) => {
    test.skip(info.project.name !== 'wasm', 'the service worker indexes and searches: the device adds nothing here');
    await openPlayground(page);
    await page.getByRole('tab', { name: 'Documents' }).click();
    const panel = page.locator('documents-panel');
    const files = panel.getByRole('table', { name: 'Documents in the store' });
    // The tab's example document (travel-policy.md), then a file of one's own.
    await panel.getByRole('button', { name: 'Add an example document' }).click();
    await expect(files.locator('.file-status')).toHaveText(['completed']);
    await expect(panel.getByRole('button', { name: 'Add an example document' })).toBeDisabled();
    await panel.getByLabel('Files to add (or drop them here)').setInputFiles([
      {
        name: 'garden.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('Tomatoes need six to eight hours of sun. Basil planted beside them keeps aphids away.'),
      },
    ]);
    await expect(files.locator('tbody tr')).toHaveCount(2);
    await expect(files.locator('.file-status')).toHaveText(['completed', 'completed']);

    await panel.getByLabel('Question').fill('How much for a hotel night in Paris?');
    await panel.getByRole('button', { name: 'Ask' }).click();
    await expect(panel.getByRole('status')).toHaveText(/^Answered from \d+ passages, with [1-9]\d* citations?\.$/);
    const passages = panel.getByRole('list', { name: 'Passages found' }).getByRole('listitem');
    await expect(passages.first()).toContainText('travel-policy.md');
    await expect(passages.first()).toContainText('180 euros in Paris');
    await expect(passages.first()).toContainText(/score \d\.\d\d/);
    await expect(panel.getByRole('list', { name: 'Citations' })).toContainText('travel-policy.md');
    await shot(page, 'documents', info.project.name);
    await expectAccessible(page);
    await page.getByRole('tab', { name: 'API' }).click();
    await expect(page.getByLabel('openai SDK code')).toContainText('client.responses.create({');
    await expect(page.getByLabel('openai SDK code')).toContainText('"type": "file_search"');

    // The store is the playground key's, in IndexedDB, and the tab finds it again.
    await page.reload();
    await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 60_000 });
    await page.getByRole('tab', { name: 'Documents' }).click();
    await expect(files.locator('tbody tr')).toHaveCount(2);
    await expect(files).toContainText('travel-policy.md');
    await expect(files).toContainText('garden.txt');
    await expect(files.locator('.file-status')).toHaveText(['completed', 'completed']);
  });

  test('keys: issue one (shown once, copied), see it listed, revoke it', async ({ page, context }, info) => {
    test.skip(info.project.name === 'webgpu', 'nothing here depends on the device: the wasm run covers it');
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await openPlayground(page);
    await page.getByRole('tab', { name: 'Keys' }).click();
    await page.getByLabel('Name').fill('my app');
    await page.getByRole('button', { name: 'Issue a key' }).click();
    const key = (await page.locator('#new-key').textContent())!;
    expect(key).toMatch(/^lt_[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect(page.getByRole('button', { name: 'Copied' })).toBeVisible();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await shot(page, 'keys', info.project.name);
    await expectAccessible(page);
    await page.getByRole('button', { name: 'Done' }).click();
    await expect(page.locator('#new-key')).toHaveCount(0); // shown once

    const row = page.getByRole('row').filter({ hasText: 'my app' });
    await expect(row).toContainText('active');
    await expect(row.getByRole('cell').nth(3)).toHaveText('never'); // last used
    const status = (k: string) =>
      page.evaluate(
        async (presented) => (await fetch('/v1/models', { headers: { authorization: `Bearer ${presented}` } })).status,
        k,
      );
    expect(await status(key)).toBe(200);
    await row.getByRole('button', { name: 'Revoke my app' }).click();
    await expect(row).toContainText('revoked');
    await expect(row.getByRole('cell').nth(3)).not.toHaveText('never'); // the request above was recorded
    // The revoked key really is refused.
    expect(await status(key)).toBe(401);
    // Every key here was used or made today: none is unused for a day.
    await page.getByRole('button', { name: 'Revoke unused keys' }).click();
    await expect(page.locator('keys-panel [role=status]')).toHaveText('No key was unused for that long.');
  });

  test('models: a server added in the models tab joins the chat chains, and the tab shows which one answers', async ({
    page,
  }, info) => {
    test.skip(info.project.name === 'webgpu', 'nothing here depends on the device: the wasm run covers it');
    await openPlayground(page);
    await page.getByRole('tab', { name: 'Models' }).click();
    await page.getByLabel('Base URL').fill('http://127.0.0.1:9/v1'); // nothing listens there
    await page.getByLabel('Model on the server').fill('far-model');
    await page.getByLabel('Policy').selectOption('remote-first');
    await page.getByRole('button', { name: 'Use it' }).click();
    await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 60_000 });
    await page.getByRole('tab', { name: 'Models' }).click();
    const crimson = page.getByRole('region', { name: 'crimson-falcon-4' });
    await expect(crimson.locator('li').first()).toContainText('remote server far-model at http://127.0.0.1:9/v1');
    await expect(crimson.locator('li').first()).toContainText('first in line');

    // The server is not there: the device answers instead, and the tab says so.
    await page.getByRole('tab', { name: 'Chat' }).click();
    await chooseGreedy(page);
    await page.getByLabel('Message').fill('Hello');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect(page.locator('li.assistant .reply')).toHaveText('Hello! How can I help you today?');
    await page.getByRole('tab', { name: 'Models' }).click();
    await expect(crimson.locator('li', { hasText: 'fp32 /models/tiny-chat' })).toContainText('answers now');
    await expect(crimson.locator('li', { hasText: 'far-model' })).not.toContainText('answers now');
    await shot(page, 'models-remote', info.project.name);
    await expectAccessible(page);
  });

  test('a server named by a link gets no chat until the person allows it; allowed once, the next load asks again', async ({
    page,
  }, info) => {
    test.skip(info.project.name === 'webgpu', 'nothing here depends on the device: the wasm run covers it');
    const server = await recordingServer();
    try {
      const link = `/?remote=${encodeURIComponent(server.baseURL)}&remoteModel=far-model&policy=remote-first`;
      const local = 'Hello! How can I help you today?';
      const prompt = page.getByRole('region', { name: 'Send your chats to another server?' });
      const header = page.locator('lantern-playground header .status');
      const allow = `Yes, use ${server.origin}`;

      // The link names the server: the page shows its origin and asks; meanwhile chats are answered here, and nothing
      // reaches the server, even with remote-first.
      await openPlayground(page, link);
      await expect(prompt).toBeVisible();
      await expect(prompt.locator('#server-origin')).toHaveText(server.origin);
      await expect(prompt).toContainText(`${server.baseURL}, model far-model, remote-first`);
      await expect(prompt).toContainText('Nothing has been sent there');
      await shot(page, 'server-prompt', info.project.name);
      await expectAccessible(page);
      expect(await sayHello(page)).toBe(local);
      await expect(header).not.toContainText('chats also go to');
      expect(server.requests).toEqual([]);

      // Allowed, for this load: the chats go to the server.
      await clickAndReload(page, allow);
      await expect(prompt).toHaveCount(0);
      await expect(header).toContainText(`chats also go to ${server.origin} (remote-first)`);
      expect(await sayHello(page)).toBe(SERVER_REPLY);
      const chats = server.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
      expect(chats).toHaveLength(1);
      expect(JSON.parse(chats[0]!.body)).toMatchObject({
        model: 'far-model',
        messages: [{ role: 'user', content: 'Hello' }],
      });

      // Not remembered: a reload asks again, and sends the server nothing.
      const seen = server.requests.length;
      await page.reload();
      await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeEnabled({ timeout: 60_000 });
      await expect(prompt).toBeVisible();
      expect(await sayHello(page)).toBe(local);
      expect(server.requests).toHaveLength(seen);

      // Refused: the page says so, and the server leaves the URL, so a reload does not ask again.
      await page.getByRole('button', { name: 'No, stay in this browser' }).click();
      await expect(page.locator('server-prompt [role=status]')).toHaveText(
        `Chats stay in this browser: nothing was sent to ${server.origin}.`,
      );
      expect(new URL(page.url()).searchParams.has('remote')).toBe(false);
      await page.reload();
      await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeEnabled({ timeout: 60_000 });
      await expect(prompt).toHaveCount(0);

      // Remembered: every later load uses it without asking.
      await openPlayground(page, link);
      await page.getByLabel('Remember this server', { exact: true }).check();
      await clickAndReload(page, allow);
      await page.reload();
      await expect(page.getByRole('button', { name: 'Send', exact: true })).toBeEnabled({ timeout: 60_000 });
      await expect(prompt).toHaveCount(0);
      await expect(header).toContainText(`chats also go to ${server.origin}`);
      expect(await sayHello(page)).toBe(SERVER_REPLY);
      expect(server.requests.filter((r) => r.path === '/v1/chat/completions' && r.method === 'POST')).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  test('the real models: no word of tiny test models', async ({ page }, info) => {
    test.skip(info.project.name !== 'wasm', 'nothing here depends on the device: the wasm run covers it');
    // Nothing is asked of a model, so nothing downloads: the page only lists the real profile's IDs.
    await page.goto('/?profile=real');
    await expect(page.getByRole('heading', { name: 'Lantern playground' })).toBeVisible({ timeout: 60_000 });
    await expect(page.getByLabel('Model profile')).toHaveValue('real');
    await expect(page.locator('lantern-playground header .status')).toContainText('answered by models in this browser');
    await expect(page.getByRole('region', { name: 'Tiny test models' })).toHaveCount(0);
  });

  test('keyboard, dark theme and a narrow screen', async ({ page }, info) => {
    test.skip(info.project.name === 'webgpu', 'nothing here depends on the device: the wasm run covers it');
    await page.setViewportSize({ width: 390, height: 844 });
    await openPlayground(page);
    await expect(page.getByLabel('Message')).toBeInViewport({ ratio: 1 });
    await page.getByRole('tab', { name: 'Chat' }).focus();
    await page.keyboard.press('ArrowRight');
    await expect(page.getByRole('tab', { name: 'Embeddings' })).toBeFocused();
    await expect(page.getByRole('tab', { name: 'Embeddings' })).toHaveAttribute('aria-selected', 'true');
    await page.keyboard.press('End');
    await expect(page.getByRole('tab', { name: 'Capabilities' })).toHaveAttribute('aria-selected', 'true');
    await page.getByRole('button', { name: 'Dark theme' }).click();
    await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
    await page.keyboard.press('Home');
    await shot(page, 'mobile-dark', info.project.name);
    await expectAccessible(page);
  });

  test('offline from the first visit: the header says when it is ready, and a reload without the network chats and embeds', async ({
    page,
  }, info) => {
    test.skip(
      info.project.name === 'webgpu',
      'the caches are the service worker’s: the wasm run covers it; onnx-runtime.spec.ts reloads offline on WebGPU',
    );
    const server = await startServer(workerPort(4197));
    try {
      await openPlayground(page, `${server.origin}/`);
      // No model runs before the network goes: the header's word is enough.
      await expect(page.locator('header [role=status]')).toHaveText('ready to work offline', { timeout: 60_000 });
      await server.close();
      await expect(fetch(`${server.origin}/`)).rejects.toThrow();

      await page.reload();
      await expect(page.getByRole('button', { name: 'Send' })).toBeEnabled({ timeout: 60_000 });
      await chooseGreedy(page);
      await page.getByLabel('Message').fill('Hello');
      await page.getByRole('button', { name: 'Send' }).click();
      await expect(page.locator('li.assistant .reply')).toHaveText('Hello! How can I help you today?');
      await page.getByRole('tab', { name: 'Embeddings' }).click();
      await page.getByRole('button', { name: 'Compare' }).click();
      await expect(page.getByRole('table', { name: 'Cosine similarity of every pair of texts' })).toBeVisible();
      await expect(page.locator('embeddings-panel [role=alert]')).toHaveCount(0);
      await expect(page.locator('header [role=status]')).toHaveText('ready to work offline');
    } finally {
      await server.close();
    }
  });
});
