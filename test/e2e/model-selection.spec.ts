import { expect, test } from '@playwright/test';
import { engineDevice, issueKey, openHarness } from './harness-page.ts';

/**
 * Which model each public ID runs, chosen from what the real browser offers: SwiftShader's WebGPU adapter (a fallback
 * adapter, no shader-f16) in the `webgpu` project, no adapter at all in the `wasm` project.
 */
test('reports the real adapter, its features and limits, and that it is a fallback one', async ({ page }, info) => {
  await openHarness(page);
  await engineDevice(page);
  const device = await page.evaluate(() => window.harness.lantern.device!);
  if (info.project.name === 'webgpu') {
    expect(device.device).toBe('webgpu');
    expect(device.shaderF16).toBe(false); // SwiftShader has no shader-f16
    // SwiftShader runs WebGPU on the CPU: Chromium calls it a fallback adapter, and so does Lantern.
    expect(device.adapter).toMatchObject({ architecture: 'swiftshader', isFallbackAdapter: true });
    // The limits are the adapter's, as the engines ask for it (high-performance), read in the engine worker.
    const own = await page.evaluate(async () => {
      const { limits } = (await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' }))!;
      return {
        maxBufferSize: limits.maxBufferSize,
        maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
        maxStorageBuffersPerShaderStage: limits.maxStorageBuffersPerShaderStage,
        maxComputeWorkgroupStorageSize: limits.maxComputeWorkgroupStorageSize,
      };
    });
    expect(device.adapter!.limits).toEqual(own);
    expect(own.maxStorageBufferBindingSize).toBeGreaterThan(0);
  } else {
    // The memory as the page reads it (Chromium's navigator.deviceMemory, in GiB), in bytes.
    const memoryBytes = await page.evaluate(
      () => (navigator as Navigator & { deviceMemory: number }).deviceMemory * 2 ** 30,
    );
    expect(device).toEqual({ device: 'wasm', adapter: null, shaderF16: false, memoryBytes });
  }
});

test('resolves every ID of the real registry to a chain this device can run', async ({ page }, info) => {
  await openHarness(page, 'profile=default');
  const models = await page.evaluate(async () =>
    (await window.harness.lantern.models()).map((m) => ({
      id: m.id,
      first: m.candidates[0],
      next: m.candidates[1],
      count: m.candidates.length,
      skipped: m.skipped.map((s) => s.reason),
    })),
  );
  const chat = models.filter((m) => !['jade-mole-4', 'teal-finch-4', 'ochre-lark-4'].includes(m.id));
  const embed = models.find((m) => m.id === 'jade-mole-4')!;
  // Speech to text: Whisper base and tiny on the CPU first here (no adapter, or a fallback one), base on WebGPU after.
  const speech = models.find((m) => m.id === 'teal-finch-4')!;
  expect(speech.first).toMatchObject({ engine: 'transformers', device: 'cpu', dtype: 'q8' });
  expect(speech.next).toMatchObject({ engine: 'transformers', model: 'onnx-community/whisper-tiny_timestamped' });
  expect(speech.count).toBe(info.project.name === 'webgpu' ? 3 : 2);
  // Text to speech: Kokoro's 8-bit build on the CPU first here, its fp32 build on WebGPU after (on a WebGPU adapter).
  const voice = models.find((m) => m.id === 'ochre-lark-4')!;
  expect(voice.first).toMatchObject({ engine: 'transformers', device: 'cpu', dtype: 'q8' });
  expect(voice.count).toBe(info.project.name === 'webgpu' ? 2 : 1);
  if (info.project.name === 'webgpu') expect(voice.next).toMatchObject({ device: 'webgpu', dtype: 'fp32' });
  if (info.project.name === 'webgpu') {
    // SwiftShader is a fallback adapter, far slower than wasm for a real model: the CPU comes first (transformers.js,
    // then for chat Qwen's GGUF on llama.cpp), then web-llm's single-precision build (no shader-f16: the
    // half-precision builds are skipped, saying why), then transformers.js
    // on WebGPU where its single-precision embedding table fits SwiftShader's 1 GiB buffers: Qwen3-0.6B's does,
    // Qwen3-1.7B's and Qwen3-4B's (1.2 and 1.6 GB) do not. The two IDs that see end with FastVLM on the CPU (its
    // half-precision WebGPU build is skipped).
    for (const m of chat) {
      expect(m.first).toMatchObject({ engine: 'transformers', device: 'cpu' });
      expect(m.next).toMatchObject({ engine: 'llama.cpp', file: expect.stringMatching(/-Q8_0\.gguf$/) });
      const fits = m.id === 'crimson-falcon-4';
      const sees = m.id !== 'amber-phoenix-4';
      expect(m.count).toBe((fits ? 4 : 3) + (sees ? 1 : 0));
      expect(m.skipped).toEqual([
        "needs the adapter's shader-f16 feature",
        "needs the adapter's shader-f16 feature",
        ...(fits ? [] : [expect.stringMatching(/^needs maxBufferSize of at least \d+; the adapter has \d+$/)]),
        ...(sees ? ["needs the adapter's shader-f16 feature"] : []),
      ]);
    }
    expect(embed.first).toMatchObject({ engine: 'transformers', device: 'cpu' });
    expect(embed.next).toMatchObject({ engine: 'llama.cpp', file: 'all-MiniLM-L6-v2-Q8_0.gguf' });
    expect(embed.count).toBe(3);
  } else {
    // One CPU candidate each, then the same model's GGUF on llama.cpp (wllama); the two IDs that see have FastVLM's
    // after their own.
    for (const m of [...chat, embed]) {
      expect(m.first).toMatchObject({ engine: 'transformers', device: 'cpu' });
      expect(m.next).toMatchObject({ engine: 'llama.cpp' });
      expect(m.count).toBe(m.id === 'crimson-falcon-4' || m.id === 'indigo-owl-4' ? 3 : 2);
    }
  }
  // Every ID can run here, so /v1/models lists all six.
  const key = await issueKey(page);
  const listed = await page.evaluate(async (k) => {
    const ids = [];
    for await (const model of window.harness.client(k).models.list()) ids.push(model.id);
    return ids;
  }, key);
  expect(listed).toEqual([
    'crimson-falcon-4',
    'indigo-owl-4',
    'amber-phoenix-4',
    'jade-mole-4',
    'teal-finch-4',
    'ochre-lark-4',
  ]);
});

test('with the bundled profile, each chat ID resolves to an engine on this device that answers', async ({
  page,
}, info) => {
  await openHarness(page);
  const key = await issueKey(page);
  const device = info.project.name === 'webgpu' ? 'webgpu' : 'cpu';
  // The reasoning ID runs tiny-think, which thinks first: its answer is the same with the thought apart.
  const asked = [
    ['crimson-falcon-4', 'What is 3 + 4?', '3 + 4 = 7.', 'tiny-chat'],
    ['indigo-owl-4', 'What is 3 + 4?', '3 + 4 = 7.', 'tiny-chat'],
    ['amber-phoenix-4', 'What is 3 plus 4?', '3 plus 4 is 7.', 'tiny-think'],
  ] as const;
  for (const [model, question, answer] of asked) {
    const reply = await page.evaluate(
      async ({ k, m, q }) =>
        (
          await window.harness.client(k).chat.completions.create({
            model: m,
            messages: [{ role: 'user', content: q }],
            temperature: 0,
          })
        ).choices[0]!.message.content,
      { k: key, m: model, q: question },
    );
    expect(reply).toBe(answer);
  }
  const ready = await page.evaluate(() => window.harness.progress.filter((p) => p.status === 'ready'));
  expect(ready).toEqual(
    asked.map(([model, , , folder]) => ({
      status: 'ready',
      model,
      resolved: `transformers:/models/${folder}@fp32/${device}`,
      // Where onnxruntime runs it: WebGPU, or WebAssembly on the CPU (its threads are onnxruntime-web's to choose).
      runsOn: { device: device === 'webgpu' ? 'webgpu' : 'wasm' },
    })),
  );
  // lantern.models() says the same of the loaded candidate, by its key.
  const chosen = await page.evaluate(async () =>
    (await window.harness.lantern.models()).find((m) => m.id === 'crimson-falcon-4'),
  );
  expect(chosen!.runsOn).toEqual({
    [`transformers:/models/tiny-chat@fp32/${device}`]: { device: device === 'webgpu' ? 'webgpu' : 'wasm' },
  });
});
