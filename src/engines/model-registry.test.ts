import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { needsShaderF16, requiredLimits, WEB_LLM_LIMITS } from './model-profile.ts';
import { DEFAULT_PROFILE } from './model-registry.ts';

/** The registry against web-llm's own list of prebuilt models, which docs/models.md's GPU memory column quotes. */
const webllm = Object.values(DEFAULT_PROFILE).flatMap((entry) =>
  entry.candidates.filter((c) => c.engine === 'web-llm'),
);
const record = (model: string) => prebuiltAppConfig.model_list.find((r) => r.model_id === model);

describe('the default registry against web-llm', () => {
  it.each(webllm.map((c) => [c.model, c] as const))('%s is a prebuilt web-llm model', (model, candidate) => {
    const found = record(model);
    expect(found).toBeDefined();
    expect(found!.overrides?.context_window_size).toBe(4096);
    // Lantern's own rule agrees with web-llm wherever web-llm declares the feature.
    if (found!.required_features?.includes('shader-f16')) expect(needsShaderF16(candidate)).toBe(true);
  });

  it("quotes web-llm's GPU memory figures in docs/models.md", () => {
    expect(webllm.map((c) => Math.round(record(c.model)!.vram_required_MB!))).toEqual([376, 580, 945, 1060, 879, 1129]);
  });
});

describe('what the registry asks of an adapter', () => {
  it("asks of every web-llm candidate web-llm's own minimums, and its record's buffer size where it has one", () => {
    for (const candidate of webllm) {
      const needs = requiredLimits(candidate);
      expect(needs).toMatchObject(WEB_LLM_LIMITS);
      const buffer = record(candidate.model)!.buffer_size_required_bytes ?? 0;
      expect(needs.maxBufferSize).toBeGreaterThanOrEqual(buffer);
    }
  });

  it("quotes web-llm's minimums from the web-llm it runs (detectGPUDevice)", () => {
    const source = readFileSync(createRequire(import.meta.url).resolve('@mlc-ai/web-llm'), 'utf8');
    const smallest = (name: string) => Number(source.match(new RegExp(`backup${name} = 1 << (\\d+)`))![1]);
    expect(2 ** smallest('RequiredMaxBufferSize')).toBe(WEB_LLM_LIMITS.maxBufferSize);
    expect(2 ** smallest('RequiredMaxStorageBufferBindingSize')).toBe(WEB_LLM_LIMITS.maxStorageBufferBindingSize);
    expect(source).toMatch(/requiredMaxComputeWorkgroupStorageSize = 32 << 10;/);
    expect(source).toMatch(/requiredMaxStorageBuffersPerShaderStage = 10;/);
  });

  it('caps all-MiniLM-L6-v2 at the 256 word pieces of its model card, on every device', () => {
    const candidates = DEFAULT_PROFILE['jade-mole-4']!.candidates;
    expect(candidates.map((c) => c.engine === 'transformers' && c.maxInputTokens)).toEqual([256, 256]);
  });
});
