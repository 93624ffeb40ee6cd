import { describe, expect, it } from 'vitest';
import {
  bundledProfile,
  candidateChain,
  candidateKey,
  CPU_ONLY,
  needsShaderF16,
  PUBLIC_MODELS,
  usableCandidates,
  type DeviceCapabilities,
  type LocalCandidate,
} from './model-profile.ts';
import { DEFAULT_PROFILE } from './model-registry.ts';

const devices: Record<string, DeviceCapabilities> = {
  'no WebGPU (wasm, Node)': CPU_ONLY,
  'WebGPU without shader-f16 (SwiftShader)': { webgpu: true, shaderF16: false },
  'WebGPU with shader-f16': { webgpu: true, shaderF16: true },
};

const chain = (id: string, device: DeviceCapabilities) =>
  usableCandidates(DEFAULT_PROFILE[id]!, device).map(candidateKey);

describe('the default registry', () => {
  it('maps every public ID, chat and embeddings alike', () => {
    expect(Object.keys(DEFAULT_PROFILE)).toEqual(Object.keys(PUBLIC_MODELS));
    for (const [id, task] of Object.entries(PUBLIC_MODELS)) expect(DEFAULT_PROFILE[id]!.task).toBe(task);
  });

  it.each(Object.entries(devices))('answers every ID on %s', (_name, device) => {
    for (const id of Object.keys(PUBLIC_MODELS)) expect(chain(id, device).length).toBeGreaterThan(0);
  });

  it('chooses web-llm in half precision where shader-f16 exists, then falls back in order', () => {
    expect(chain('crimson-falcon-4', devices['WebGPU with shader-f16']!)).toEqual([
      'web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC',
      'web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC',
      'transformers:HuggingFaceTB/SmolLM2-360M-Instruct@q4f16/webgpu',
      'transformers:HuggingFaceTB/SmolLM2-360M-Instruct@q4/webgpu',
      'transformers:HuggingFaceTB/SmolLM2-360M-Instruct@q4/cpu',
    ]);
  });

  it('skips everything half-precision on an adapter without shader-f16', () => {
    for (const id of ['crimson-falcon-4', 'indigo-owl-4', 'amber-phoenix-4']) {
      const keys = chain(id, devices['WebGPU without shader-f16 (SwiftShader)']!);
      expect(keys[0]).toMatch(/^web-llm:.*-q4f32_1-MLC$/);
      expect(keys.some((k) => /f16/.test(k))).toBe(false);
      expect(keys.at(-1)).toMatch(/@q4\/cpu$/);
    }
  });

  it('runs only transformers.js on the CPU without WebGPU', () => {
    for (const id of Object.keys(PUBLIC_MODELS)) {
      for (const key of chain(id, CPU_ONLY)) expect(key).toMatch(/^transformers:.*\/cpu$/);
    }
  });

  it('orders three chat models by size', () => {
    const size = (id: string) => (DEFAULT_PROFILE[id]!.candidates[0] as LocalCandidate).downloadBytes!;
    expect(size('crimson-falcon-4')).toBeLessThan(size('indigo-owl-4'));
    expect(size('indigo-owl-4')).toBeLessThan(size('amber-phoenix-4'));
  });
});

describe('needsShaderF16', () => {
  it('reads half precision from web-llm model IDs and transformers.js dtypes on WebGPU', () => {
    expect(needsShaderF16({ engine: 'web-llm', model: 'SmolLM2-135M-Instruct-q0f16-MLC' })).toBe(true);
    expect(needsShaderF16({ engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC' })).toBe(true);
    expect(needsShaderF16({ engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC' })).toBe(false);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'fp16', device: 'webgpu' })).toBe(true);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'fp16', device: 'cpu' })).toBe(false);
    expect(needsShaderF16({ engine: 'transformers', model: 'm', dtype: 'q4', device: 'webgpu' })).toBe(false);
  });
});

describe('the bundled profile', () => {
  it.each(Object.entries(devices))('answers every ID offline on %s, on WebGPU when there is one', (_name, device) => {
    const profile = bundledProfile('/models');
    for (const id of Object.keys(PUBLIC_MODELS)) {
      const keys = usableCandidates(profile[id]!, device).map(candidateKey);
      expect(keys.at(-1)).toMatch(/^transformers:\/models\/tiny-(chat|embed)@fp32\/cpu$/);
      expect(keys[0]!.endsWith('/webgpu')).toBe(device.webgpu);
    }
  });
});

describe('candidateChain', () => {
  const server = { engine: 'remote', baseURL: 'https://user:pw@llm.example/v1/?key=k', model: 'big' } as const;
  const entry = {
    task: 'chat' as const,
    created: 0,
    candidates: [server, ...DEFAULT_PROFILE['crimson-falcon-4']!.candidates],
  };
  const keys = (policy?: 'local-first' | 'remote-first' | 'local-only', device = CPU_ONLY) =>
    candidateChain(entry, device, policy).map(candidateKey);

  it('puts the servers after the local candidates this device can run, or first, or nowhere, as the policy says', () => {
    const local = 'transformers:HuggingFaceTB/SmolLM2-360M-Instruct@q4/cpu';
    const remote = 'remote:big@https://llm.example/v1'; // no user, password or query: they can hold secrets
    expect(keys()).toEqual([local, remote]);
    expect(keys('remote-first')).toEqual([remote, local]);
    expect(keys('local-only')).toEqual([local]);
    expect(usableCandidates(entry, CPU_ONLY).map(candidateKey)).toEqual([local]);
  });
});
