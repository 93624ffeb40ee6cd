import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { needsShaderF16 } from './model-profile.ts';
import { DEFAULT_PROFILE } from './model-registry.ts';

/** The registry against web-llm's own list of prebuilt models, which the README's GPU memory column quotes. */
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

  it("quotes web-llm's GPU memory figures in the README", () => {
    expect(webllm.map((c) => Math.round(record(c.model)!.vram_required_MB!))).toEqual([376, 580, 945, 1060, 879, 1129]);
  });
});
