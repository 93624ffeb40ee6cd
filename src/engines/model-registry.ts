import {
  OPENAI_ALIASES,
  type AdapterLimits,
  type ModelCandidate,
  type ModelEntry,
  type ModelProfile,
} from './model-profile.ts';

/** When this mapping of the public IDs to real models was published. */
const REGISTRY_CREATED = Date.UTC(2026, 10, 21) / 1000;

const MB = 1_000_000;

/**
 * What a transformers.js model needs of a WebGPU adapter: its largest weight, the token-embedding table (vocabulary ×
 * hidden size × bytes per weight: 2 in q4f16 and fp16 builds, 4 in q4 and fp32 ones, whose 4-bit quantisation covers
 * the matrix multiplications only), must fit in one buffer and in one storage binding. An estimate from the models'
 * configurations: nothing can be downloaded where this was written.
 */
function embeddingTable(vocab: number, hidden: number, bytesPerWeight: 2 | 4): Partial<AdapterLimits> {
  const bytes = vocab * hidden * bytesPerWeight;
  return { maxBufferSize: bytes, maxStorageBufferBindingSize: bytes };
}

/**
 * One chat model as a fallback chain: web-llm in half precision (fastest; needs `shader-f16`), web-llm in single
 * precision, transformers.js on WebGPU, transformers.js on the CPU, so that the ID answers on any browser.
 * `downloadBytes` are estimates from parameter count and weight format (docs/models.md); web-llm's exact size is read
 * from the model's manifest before downloading.
 */
function chatChain(
  webllm: { f16: string; f32: string; f16Bytes: number; f32Bytes: number },
  transformers: { model: string; gpuBytes: number; cpuBytes: number; vocab: number; hidden: number },
  aliases: readonly string[],
): ModelEntry {
  const { vocab, hidden } = transformers;
  const candidates: ModelCandidate[] = [
    { engine: 'web-llm', model: webllm.f16, downloadBytes: webllm.f16Bytes },
    { engine: 'web-llm', model: webllm.f32, downloadBytes: webllm.f32Bytes },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4f16',
      device: 'webgpu',
      downloadBytes: transformers.gpuBytes,
      requiredLimits: embeddingTable(vocab, hidden, 2),
    },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4',
      device: 'webgpu',
      downloadBytes: transformers.cpuBytes,
      requiredLimits: embeddingTable(vocab, hidden, 4),
    },
    {
      engine: 'transformers',
      model: transformers.model,
      dtype: 'q4',
      device: 'cpu',
      downloadBytes: transformers.cpuBytes,
    },
  ];
  return { task: 'chat', created: REGISTRY_CREATED, candidates, aliases };
}

/**
 * all-MiniLM-L6-v2 takes 256 word pieces: its model card and its sentence-transformers configuration (`max_seq_length`,
 * which the reference pipeline applies) stop there, though its position embeddings and tokenizer go to 512 (it was
 * fine-tuned on 128). Lantern refuses a longer input (400 `context_length_exceeded`) rather than truncate it.
 */
const MINILM_MAX_TOKENS = 256;

/**
 * The real models behind the four public IDs: three chat models of increasing size and a sentence-embedding model,
 * each answering to its `OPENAI_ALIASES` too.
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
    {
      model: 'HuggingFaceTB/SmolLM2-360M-Instruct',
      gpuBytes: 270 * MB,
      cpuBytes: 370 * MB,
      vocab: 49_152,
      hidden: 960,
    },
    OPENAI_ALIASES['crimson-falcon-4'],
  ),
  'indigo-owl-4': chatChain(
    {
      f16: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC',
      f32: 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC',
      f16Bytes: 280 * MB,
      f32Bytes: 310 * MB,
    },
    {
      model: 'onnx-community/Qwen2.5-0.5B-Instruct',
      gpuBytes: 550 * MB,
      cpuBytes: 790 * MB,
      vocab: 151_936,
      hidden: 896,
    },
    OPENAI_ALIASES['indigo-owl-4'],
  ),
  'amber-phoenix-4': chatChain(
    {
      f16: 'Llama-3.2-1B-Instruct-q4f16_1-MLC',
      f32: 'Llama-3.2-1B-Instruct-q4f32_1-MLC',
      f16Bytes: 700 * MB,
      f32Bytes: 780 * MB,
    },
    {
      model: 'onnx-community/Llama-3.2-1B-Instruct',
      gpuBytes: 1_100 * MB,
      cpuBytes: 1_800 * MB,
      vocab: 128_256,
      hidden: 2048,
    },
    OPENAI_ALIASES['amber-phoenix-4'],
  ),
  'jade-mole-4': {
    task: 'embeddings',
    created: REGISTRY_CREATED,
    aliases: OPENAI_ALIASES['jade-mole-4'],
    candidates: [
      {
        engine: 'transformers',
        model: 'Xenova/all-MiniLM-L6-v2',
        dtype: 'fp32',
        device: 'webgpu',
        downloadBytes: 91 * MB,
        requiredLimits: embeddingTable(30_522, 384, 4),
        maxInputTokens: MINILM_MAX_TOKENS,
      },
      {
        engine: 'transformers',
        model: 'Xenova/all-MiniLM-L6-v2',
        dtype: 'q8',
        device: 'cpu',
        downloadBytes: 23 * MB,
        maxInputTokens: MINILM_MAX_TOKENS,
      },
    ],
  },
});
