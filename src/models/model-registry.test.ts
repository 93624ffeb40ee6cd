import { prebuiltAppConfig } from '@mlc-ai/web-llm';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  needsShaderF16,
  PUBLIC_MODELS,
  requiredLimits,
  WEB_LLM_LIMITS,
  type PublicModelId,
  type TransformersCandidate,
  type WebLLMCandidate,
} from './model-profile.ts';
import { DEFAULT_PROFILE } from './model-registry.ts';

/**
 * The registry against the libraries' own records: web-llm's list of prebuilt models (the installed web-llm's), and
 * the Qwen3 configurations (`config.json` of Qwen/Qwen3-0.6B, -1.7B and -4B, copied here: nothing can be downloaded
 * where this runs). docs/models.md quotes what is checked here.
 */
const entries = Object.entries(DEFAULT_PROFILE);
const webllm = entries.flatMap(([id, entry]) =>
  entry.candidates.filter((c): c is WebLLMCandidate => c.engine === 'web-llm').map((c) => [id, c] as const),
);
const transformers = entries.flatMap(([id, entry]) =>
  entry.candidates.filter((c): c is TransformersCandidate => c.engine === 'transformers').map((c) => [id, c] as const),
);
const record = (model: string) => prebuiltAppConfig.model_list.find((r) => r.model_id === model);
const MiB = 2 ** 20;

/** From each model's config.json: layers, hidden size, and what every Qwen3 shares. */
const QWEN3_CONFIG = {
  'Qwen3-0.6B': { layers: 28, hidden: 1024 },
  'Qwen3-1.7B': { layers: 28, hidden: 2048 },
  'Qwen3-4B': { layers: 36, hidden: 2560 },
} as const;
const QWEN3 = { vocab: 151_936, kvHeads: 8, headDim: 128, maxPositions: 40_960 };
const familyOf = (model: string) => {
  const name = /Qwen3-[\d.]+B/.exec(model)?.[0] as keyof typeof QWEN3_CONFIG | undefined;
  return name && { name, ...QWEN3_CONFIG[name] };
};

describe('the default registry against web-llm', () => {
  it.each(webllm.map(([, c]) => [c.model, c] as const))(
    '%s is a prebuilt model of the installed web-llm',
    (model, candidate) => {
      const found = record(model);
      expect(found).toBeDefined();
      // Its figures are given at its default window of 4,096 tokens, which the candidate's window replaces.
      expect(found!.overrides?.context_window_size).toBe(4096);
      // web-llm marks it as one for devices with little memory (Qwen3-8B, gemma-4, Phi-4-mini are not).
      expect(found!.low_resource_required).toBe(true);
      // Lantern's own rule agrees with web-llm wherever web-llm declares the feature (Qwen3's f16 builds do not).
      if (found!.required_features?.includes('shader-f16')) expect(needsShaderF16(candidate)).toBe(true);
      expect(needsShaderF16(candidate)).toBe(/q4f16/.test(model));
    },
  );

  it("takes web-llm's GPU memory, plus the keys and values of the tokens its window adds to web-llm's 4,096", () => {
    for (const [, candidate] of webllm) {
      const { layers } = familyOf(candidate.model)!;
      const bytesPerValue = /q4f16/.test(candidate.model) ? 2 : 4;
      const perToken = layers * QWEN3.kvHeads * QWEN3.headDim * 2 * bytesPerValue;
      const vram = record(candidate.model)!.vram_required_MB! * MiB;
      expect(candidate.gpuMemoryBytes).toBe(Math.round(vram + (candidate.contextWindow! - 4096) * perToken));
    }
    expect(webllm.map(([, c]) => Math.round(c.gpuMemoryBytes! / MiB))).toEqual([1851, 2821, 2485, 3531, 4008, 5480]);
  });

  it('quotes those figures in docs/models.md and the README', () => {
    const docs = readFileSync(new URL('../../docs/models.md', import.meta.url), 'utf8');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    for (const [, candidate] of webllm) {
      const figure = Math.round(candidate.gpuMemoryBytes! / MiB).toLocaleString('en-US');
      expect(docs).toContain(figure);
      expect(readme).toContain(figure);
      expect(docs).toContain(candidate.model.replace(/-q4f\d+_1-MLC$/, ''));
    }
  });

  // docs/models.md keeps the larger IDs on Qwen3 partly because web-llm does not mark its larger Qwen3.5 builds
  // `low_resource_required`: a web-llm that changes that (or the figures quoted) fails here, and the lineup is due
  // another look.
  it("matches what docs/models.md says of web-llm's Qwen3.5 builds", () => {
    const qwen35 = prebuiltAppConfig.model_list.filter((r) => r.model_id.startsWith('Qwen3.5-'));
    const lowResource = qwen35.filter((r) => r.low_resource_required).map((r) => r.model_id);
    expect(lowResource.length).toBeGreaterThan(0);
    expect(lowResource.every((id) => id.startsWith('Qwen3.5-0.8B-'))).toBe(true);
    const docs = readFileSync(new URL('../../docs/models.md', import.meta.url), 'utf8');
    const mib = (id: string) => Math.round(record(id)!.vram_required_MB!).toLocaleString('en-US');
    for (const size of ['0.8B', '2B', '4B']) {
      for (const build of ['q4f16_1', 'q4f32_1']) expect(docs).toContain(mib(`Qwen3.5-${size}-${build}-MLC`));
    }
    expect(docs).toContain(mib('Qwen3-4B-q4f16_1-MLC'));
  });
});

describe('the default registry against the Qwen3 configurations', () => {
  it('serves the same window on every chat candidate of an ID, within what the model was trained for', () => {
    for (const [, entry] of entries.filter(([, e]) => e.task === 'chat')) {
      const windows = entry.candidates.map((c) => (c.engine === 'remote' ? undefined : c.contextWindow));
      expect(new Set(windows)).toEqual(new Set([8192]));
      expect(8192).toBeLessThanOrEqual(QWEN3.maxPositions);
    }
  });

  it("runs speech to text on Whisper's timestamped exports (their decoders give the word-timing attention)", () => {
    const entry = DEFAULT_PROFILE['teal-finch-4']!;
    expect(entry.task).toBe('transcription');
    expect(entry.aliases).toContain('whisper-1');
    const chain = entry.candidates as TransformersCandidate[];
    expect(chain.map((c) => `${c.model}@${c.dtype}/${c.device}`)).toEqual([
      'onnx-community/whisper-base_timestamped@fp32/webgpu',
      'onnx-community/whisper-base_timestamped@q8/cpu',
      'onnx-community/whisper-tiny_timestamped@q8/cpu',
    ]);
    // fp32 weights of 72.6M parameters and 8-bit ones of 72.6M and 37.8M, with the small files, to 10 MB.
    expect(chain.map((c) => c.downloadBytes! / 1e6)).toEqual([300, 80, 50]);
  });

  it('names onnx-community exports of the same family as the web-llm builds', () => {
    const chat = transformers.filter(([id, c]) => PUBLIC_MODELS[id as PublicModelId] === 'chat' && !c.images);
    for (const [id, candidate] of chat) {
      const family = familyOf(candidate.model)!;
      expect(candidate.model).toBe(`onnx-community/${family.name}-ONNX`);
      expect(candidate.dtype).toMatch(/^q4(f16)?$/);
      const gpu = webllm.find(([other]) => other === id)![1];
      // The CPU candidate of the reasoning ID is the smaller model: a 4B one is too slow on WebAssembly.
      const expected =
        id === 'amber-phoenix-4' && candidate.device === 'cpu' ? 'Qwen3-1.7B' : familyOf(gpu.model)!.name;
      expect(family.name).toBe(expected);
    }
  });

  it('asks of the adapter a buffer for the embedding table: vocabulary × hidden size × bytes per weight', () => {
    for (const [, candidate] of transformers.filter(([, c]) => c.device === 'webgpu' && /Qwen3/.test(c.model))) {
      const { hidden } = familyOf(candidate.model)!;
      const bytes = QWEN3.vocab * hidden * (candidate.dtype === 'q4f16' ? 2 : 4);
      expect(candidate.requiredLimits).toEqual({ maxBufferSize: bytes, maxStorageBufferBindingSize: bytes });
    }
  });

  it('estimates downloads that grow with the model, and fit WebAssembly on the CPU', () => {
    const size = (id: string, i: number) => DEFAULT_PROFILE[id]!.candidates[i]!;
    for (const id of ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4']) {
      const [f16, f32, q4f16, q4, cpu] = [0, 1, 2, 3, 4].map(
        (i) => (size(id, i) as TransformersCandidate).downloadBytes!,
      );
      expect(f16).toBeLessThan(f32!);
      expect(q4f16).toBeLessThan(q4!);
      expect(cpu).toBeLessThan(4 * 2 ** 30);
    }
  });
});

describe('what the registry asks of an adapter', () => {
  it("asks of every web-llm candidate web-llm's own minimums, and its record's buffer size where it has one", () => {
    for (const [, candidate] of webllm) {
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
    expect(candidates.map((c) => 'maxInputTokens' in c && c.maxInputTokens)).toEqual([256, 256, 256]);
  });
});
