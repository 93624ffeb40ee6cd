import type { ModelCandidate, ModelEntry, ModelProfile } from './model-profile.ts';

/** When this mapping of the public IDs to real models was published. */
const REGISTRY_CREATED = Date.UTC(2026, 10, 21) / 1000;

const MB = 1_000_000;

/**
 * One chat model as a fallback chain: web-llm in half precision (fastest; needs `shader-f16`), web-llm in single
 * precision, transformers.js on WebGPU, transformers.js on the CPU, so that the ID answers on any browser.
 * `downloadBytes` are estimates from parameter count and weight format (README "Models"); web-llm's exact size is read
 * from the model's manifest before downloading.
 */
function chatChain(
  webllm: { f16: string; f32: string; f16Bytes: number; f32Bytes: number },
  transformers: { model: string; gpuBytes: number; cpuBytes: number },
): ModelEntry {
  const candidates: ModelCandidate[] = [
    { engine: 'web-llm', model: webllm.f16, downloadBytes: webllm.f16Bytes },
    { engine: 'web-llm', model: webllm.f32, downloadBytes: webllm.f32Bytes },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4f16',
      device: 'webgpu',
      downloadBytes: transformers.gpuBytes,
    },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4',
      device: 'webgpu',
      downloadBytes: transformers.cpuBytes,
    },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4',
      device: 'cpu',
      downloadBytes: transformers.cpuBytes,
    },
  ];
  return { task: 'chat', created: REGISTRY_CREATED, candidates };
}

/**
 * The real models behind the four public IDs: three chat models of increasing size and a sentence-embedding model.
 * An app can pass its own profile to `startLocalAPI({ profile })` (or `createEngine`) to change any of it.
 */
export const DEFAULT_PROFILE: ModelProfile = Object.freeze({
  'crimson-falcon-4': chatChain(
    {
      f16: 'SmolLM2-360M-Instruct-q4f16_1-MLC',
      f32: 'SmolLM2-360M-Instruct-q4f32_1-MLC',
      f16Bytes: 210 * MB,
      f32Bytes: 230 * MB,
    },
    { model: 'HuggingFaceTB/SmolLM2-360M-Instruct', gpuBytes: 270 * MB, cpuBytes: 370 * MB },
  ),
  'indigo-owl-4': chatChain(
    {
      f16: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC',
      f32: 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC',
      f16Bytes: 280 * MB,
      f32Bytes: 310 * MB,
    },
    { model: 'onnx-community/Qwen2.5-0.5B-Instruct', gpuBytes: 550 * MB, cpuBytes: 790 * MB },
  ),
  'amber-phoenix-4': chatChain(
    {
      f16: 'Llama-3.2-1B-Instruct-q4f16_1-MLC',
      f32: 'Llama-3.2-1B-Instruct-q4f32_1-MLC',
      f16Bytes: 700 * MB,
      f32Bytes: 780 * MB,
    },
    { model: 'onnx-community/Llama-3.2-1B-Instruct', gpuBytes: 1_100 * MB, cpuBytes: 1_800 * MB },
  ),
  'jade-mole-4': {
    task: 'embeddings',
    created: REGISTRY_CREATED,
    candidates: [
      {
        engine: 'transformers',
        model: 'Xenova/all-MiniLM-L6-v2',
        dtype: 'fp32',
        device: 'webgpu',
        downloadBytes: 91 * MB,
      },
      { engine: 'transformers', model: 'Xenova/all-MiniLM-L6-v2', dtype: 'q8', device: 'cpu', downloadBytes: 23 * MB },
    ],
  },
});
