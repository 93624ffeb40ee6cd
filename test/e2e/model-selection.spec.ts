import { expect, test } from '@playwright/test';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * Which model each public ID runs, chosen from what the real browser offers: SwiftShader's WebGPU adapter (no
 * shader-f16) in the `webgpu` project, no adapter at all in the `wasm` project.
 */
test('reports the real adapter and its features', async ({ page }, info) => {
  await openHarness(page);
  await engineDevice(page);
  const device = await page.evaluate(() => window.harness.lantern.device!);
  if (info.project.name === 'webgpu') {
    expect(device.device).toBe('webgpu');
    expect(device.adapter).not.toBeNull();
    expect(device.shaderF16).toBe(false); // SwiftShader has no shader-f16
  } else {
    expect(device).toEqual({ device: 'wasm', adapter: null, shaderF16: false });
  }
});

test('resolves every ID of the real registry to a chain this device can run', async ({ page }, info) => {
  await openHarness(page, 'profile=default');
  const models = await page.evaluate(async () =>
    (await window.harness.lantern.models()).map((m) => ({
      id: m.id,
      first: m.candidates[0],
      count: m.candidates.length,
    })),
  );
  const chat = models.filter((m) => m.id !== 'jade-mole-4');
  const embed = models.find((m) => m.id === 'jade-mole-4')!;
  if (info.project.name === 'webgpu') {
    // No shader-f16: web-llm's single-precision build comes first, then transformers.js on WebGPU, then on the CPU.
    for (const m of chat) {
      expect(m.first).toMatchObject({ engine: 'web-llm', model: expect.stringMatching(/-q4f32_1-MLC$/) });
      expect(m.count).toBe(3);
    }
    expect(embed.first).toMatchObject({ engine: 'transformers', device: 'webgpu' });
  } else {
    for (const m of [...chat, embed]) {
      expect(m.first).toMatchObject({ engine: 'transformers', device: 'cpu' });
      expect(m.count).toBe(1);
    }
  }
  // Every ID can run here, so /v1/models lists all four.
  const key = await issueKey(page);
  const listed = await page.evaluate(async (k) => {
    const ids = [];
    for await (const model of window.harness.client(k).models.list()) ids.push(model.id);
    return ids;
  }, key);
  expect(listed).toEqual(['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4', 'jade-mole-4']);
});

test('with the bundled profile, each chat ID resolves to an engine on this device that answers', async ({
  page,
}, info) => {
  await openHarness(page);
  const key = await issueKey(page);
  const device = info.project.name === 'webgpu' ? 'webgpu' : 'cpu';
  for (const model of ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4']) {
    const reply = await page.evaluate(
      async ({ k, m }) =>
        (
          await window.harness.client(k).chat.completions.create({
            model: m,
            messages: [{ role: 'user', content: 'What is 3 + 4?' }],
            temperature: 0,
          })
        ).choices[0]!.message.content,
      { k: key, m: model },
    );
    expect(reply).toBe('3 + 4 = 7.');
  }
  const ready = await page.evaluate(() => window.harness.progress.filter((p) => p.status === 'ready'));
  expect(ready).toEqual(
    ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4'].map((model) => ({
      status: 'ready',
      model,
      resolved: `transformers:/models/tiny-chat@fp32/${device}`,
    })),
  );
});
