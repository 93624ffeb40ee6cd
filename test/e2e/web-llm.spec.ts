import { expect, test } from '@playwright/test';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * A real web-llm model, downloaded from the Hugging Face hub and run on a real GPU. It runs only where both exist;
 * elsewhere (CI, SwiftShader, no network) it is skipped, and the reason is printed.
 */
async function huggingFaceReachable(): Promise<boolean> {
  try {
    const response = await fetch('https://huggingface.co/api/models/mlc-ai/SmolLM2-360M-Instruct-q4f32_1-MLC', {
      signal: AbortSignal.timeout(5000),
    });
    return response.ok;
  } catch {
    return false;
  }
}

test('a real web-llm model answers through /v1', async ({ page }, info) => {
  test.skip(info.project.name !== 'webgpu', 'web-llm needs WebGPU: it runs in the webgpu project only');
  const network = await huggingFaceReachable();
  if (!network)
    console.log('[web-llm test] skipped: huggingface.co is not reachable from here, so no model can be downloaded');
  test.skip(!network, 'huggingface.co is not reachable: no web-llm model can be downloaded');

  await openHarness(page, 'profile=default');
  await engineDevice(page);
  const adapter = await page.evaluate(() => window.harness.lantern.device!.adapter);
  const software = !adapter || adapter.isFallbackAdapter;
  if (software) console.log('[web-llm test] skipped: the WebGPU adapter is a fallback (software) one, not a GPU');
  test.skip(
    software,
    'the WebGPU adapter is a fallback (software) one, such as SwiftShader: a real model would take hours',
  );

  test.setTimeout(20 * 60_000);
  const key = await issueKey(page);
  const reply = await page.evaluate(async (k) => {
    const completion = await window.harness.client(k).chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Say hello in one word.' }],
      max_tokens: 16,
    });
    return completion.choices[0]!.message.content;
  }, key);
  expect(reply?.length).toBeGreaterThan(0);
  const ready = await page.evaluate(() => window.harness.progress.find((p) => p.status === 'ready'));
  expect(ready).toMatchObject({ resolved: expect.stringMatching(/^web-llm:/) });
});
