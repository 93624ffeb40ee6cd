import {
  OPENAI_ALIASES,
  type AdapterLimits,
  type ModelCandidate,
  type ModelEntry,
  type ModelProfile,
  type SpeechVoices,
} from './model-profile.ts';

/** When this mapping of the public IDs to real models was published (the Qwen3 lineup). */
const REGISTRY_CREATED = Date.UTC(2026, 10, 23) / 1000;

const MB = 1_000_000;
const MiB = 2 ** 20;

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
 * The context window of every chat candidate, prompt plus reply, in tokens: one figure for a whole chain, so that the
 * ID accepts the same prompts whichever candidate serves it. Chosen from what the keys and values of a token cost:
 * Qwen3 keeps 8 key-value heads of 128 dimensions per layer, so a token takes 28 layers × 8 × 128 × 2 (keys and values)
 * × 2 bytes = 112 KiB in half precision in Qwen3-0.6B and -1.7B, and 36 × 8 × 128 × 2 × 2 = 144 KiB in Qwen3-4B (twice
 * that in the single-precision builds: q4f32 on web-llm, q4 on transformers.js). At 8,192 tokens that is 896 MiB and
 * 1,152 MiB (1,792 and 2,304 MiB in single precision), which web-llm allocates up front: on top of web-llm's own
 * 4,096-token figures, Qwen3-4B's half-precision build then takes 3.9 GiB, within what a GPU of 6 to 8 GB (or an
 * integrated one sharing 16 GB) gives a tab. 16,384 would double it (2.25 GiB of keys and values for Qwen3-4B, 4.5 GiB
 * in single precision) for prompts longer than browser models are typically given; Qwen3's own 40,960 is out of reach.
 * On the CPU (WebAssembly's 4 GiB) a conversation near the window may not fit beside the weights: see docs/models.md.
 */
const CHAT_CONTEXT_WINDOW = 8_192;

/** The context window of web-llm's prebuilt builds, at which their `vram_required_MB` is given. */
const WEB_LLM_DEFAULT_WINDOW = 4_096;

/**
 * A Qwen3 model, as its `config.json` describes it (Qwen/Qwen3-*; onnx-community's and mlc-ai's builds copy it): every
 * size shares the vocabulary of 151,936 tokens, 8 key-value heads of 128 dimensions, tied input and output embeddings
 * and 40,960 positions.
 */
interface Qwen3 {
  /** `Qwen3-0.6B`: the name in both engines' model IDs. */
  name: string;
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  /** web-llm's `vram_required_MB` for the q4f16_1 and q4f32_1 builds (0.2.86's `prebuiltAppConfig`). */
  webllmVramMB: { f16: number; f32: number };
}

const QWEN3_VOCAB = 151_936;
const QWEN3_KV_HEADS = 8;
const QWEN3_HEAD_DIM = 128;

const QWEN3_0_6B: Qwen3 = {
  name: 'Qwen3-0.6B',
  hidden: 1024,
  intermediate: 3072,
  layers: 28,
  heads: 16,
  webllmVramMB: { f16: 1403.34, f32: 1924.98 },
};
const QWEN3_1_7B: Qwen3 = {
  name: 'Qwen3-1.7B',
  hidden: 2048,
  intermediate: 6144,
  layers: 28,
  heads: 16,
  webllmVramMB: { f16: 2036.66, f32: 2635.44 },
};
const QWEN3_4B: Qwen3 = {
  name: 'Qwen3-4B',
  hidden: 2560,
  intermediate: 9728,
  layers: 36,
  heads: 32,
  webllmVramMB: { f16: 3431.59, f32: 4327.71 },
};

/** Parameters of the matrix multiplications (attention and MLP of every layer); norms are left out (under 0.1%). */
function nonEmbeddingParams(m: Qwen3): number {
  const q = m.heads * QWEN3_HEAD_DIM;
  const kv = QWEN3_KV_HEADS * QWEN3_HEAD_DIM;
  return m.layers * (m.hidden * q + 2 * m.hidden * kv + q * m.hidden + 3 * m.hidden * m.intermediate);
}

const embeddingParams = (m: Qwen3) => QWEN3_VOCAB * m.hidden;

/** Bytes of keys and values per token of context, at 2 (half precision) or 4 bytes a value. */
const kvBytesPerToken = (m: Qwen3, bytesPerValue: 2 | 4) =>
  m.layers * QWEN3_KV_HEADS * QWEN3_HEAD_DIM * 2 * bytesPerValue;

/**
 * What each build downloads, estimated from the parameters (nothing can be downloaded where this was written):
 *
 * - transformers.js (onnx-community's exports): the matrix multiplications in 4 bits with a scale per 32 weights
 *   (MatMulNBits: 4.5 bits a weight with fp16 scales in `q4f16`, 5 with fp32 ones in `q4`); the embedding table, which
 *   the tied output layer shares, unquantised (2 bytes a weight in `q4f16`, 4 in `q4`). The same rule gives the
 *   files listed for onnx-community/Qwen2.5-0.5B-Instruct-ONNX-GQA within about 1% (474 MB for 478, 768 MB for 777),
 *   and public code quotes Qwen3-0.6B's and Qwen3-1.7B's `q4f16` at 570 MB and 1,426 MB (the rule: 559 and 1,415);
 * - web-llm (mlc-ai's q4f16_1 and q4f32_1): every weight, the shared embedding table included, in 4 bits with an fp16
 *   (4.5 bits) or fp32 (5 bits) scale per group of 32;
 * - llama.cpp (Qwen's own GGUFs, `Q8_0`): every weight in 8 bits with an fp16 scale per block of 32 (8.5 bits), the
 *   table once. The rule gives Qwen3-0.6B-Q8_0.gguf 633 MB; its file has 639 MB.
 */
function downloadBytes(m: Qwen3, build: 'onnx-q4f16' | 'onnx-q4' | 'mlc-q4f16' | 'mlc-q4f32' | 'gguf-q8_0'): number {
  const body = nonEmbeddingParams(m);
  const table = embeddingParams(m);
  const bytes = {
    'onnx-q4f16': (body * 4.5) / 8 + table * 2,
    'onnx-q4': (body * 5) / 8 + table * 4,
    'mlc-q4f16': ((body + table) * 4.5) / 8,
    'mlc-q4f32': ((body + table) * 5) / 8,
    'gguf-q8_0': ((body + table) * 8.5) / 8,
  }[build];
  return Math.ceil(bytes / (10 * MB)) * 10 * MB;
}

/**
 * The GPU memory a web-llm build takes at the chain's window: web-llm's own figure, given for its 4,096-token default
 * (weights, the keys and values of 4,096 tokens, work buffers), plus the keys and values of the tokens past it (web-llm
 * allocates them all when it loads). The figures bear the rule out: once weights and 4,096 tokens' keys and values are
 * taken away, Qwen3-0.6B and Qwen2.5-0.5B, which share the vocabulary, leave the same work buffers (about 630 MiB:
 * logits and activations).
 */
function webllmGpuMemory(m: Qwen3, precision: 'f16' | 'f32'): number {
  const extra = (CHAT_CONTEXT_WINDOW - WEB_LLM_DEFAULT_WINDOW) * kvBytesPerToken(m, precision === 'f16' ? 2 : 4);
  return Math.round(m.webllmVramMB[precision] * MiB + extra);
}

/**
 * One chat ID as a fallback chain: web-llm in half precision (fastest; needs `shader-f16`), web-llm in single
 * precision, transformers.js on WebGPU in both, transformers.js on the CPU, so that the ID answers on any browser.
 * `cpu` is the model of the CPU candidate where the GPU one would be too slow there. Every candidate takes the same
 * context window.
 */
function qwen3Chain(gpu: Qwen3, options: { cpu?: Qwen3; aliases: readonly string[] }): ModelEntry {
  const cpu = options.cpu ?? gpu;
  const contextWindow = CHAT_CONTEXT_WINDOW;
  const onnx = (m: Qwen3) => `onnx-community/${m.name}-ONNX`;
  const candidates: ModelCandidate[] = [
    {
      engine: 'web-llm',
      model: `${gpu.name}-q4f16_1-MLC`,
      downloadBytes: downloadBytes(gpu, 'mlc-q4f16'),
      contextWindow,
      gpuMemoryBytes: webllmGpuMemory(gpu, 'f16'),
    },
    {
      engine: 'web-llm',
      model: `${gpu.name}-q4f32_1-MLC`,
      downloadBytes: downloadBytes(gpu, 'mlc-q4f32'),
      contextWindow,
      gpuMemoryBytes: webllmGpuMemory(gpu, 'f32'),
    },
    {
      engine: 'transformers',
      model: onnx(gpu),
      dtype: 'q4f16',
      device: 'webgpu',
      downloadBytes: downloadBytes(gpu, 'onnx-q4f16'),
      requiredLimits: embeddingTable(QWEN3_VOCAB, gpu.hidden, 2),
      contextWindow,
    },
    {
      engine: 'transformers',
      model: onnx(gpu),
      dtype: 'q4',
      device: 'webgpu',
      downloadBytes: downloadBytes(gpu, 'onnx-q4'),
      requiredLimits: embeddingTable(QWEN3_VOCAB, gpu.hidden, 4),
      contextWindow,
    },
    {
      engine: 'transformers',
      model: onnx(cpu),
      dtype: 'q4',
      device: 'cpu',
      downloadBytes: downloadBytes(cpu, 'onnx-q4'),
      contextWindow,
    },
    // After transformers.js on the CPU, by measurement (`npm run bench`, the engines sections, Node and Chromium): the
    // same weights decode about as fast on llama.cpp when it draws a plain request's tokens itself, but a request that
    // needs the distribution (JSON, tools, logprobs, logit_bias, penalties) costs llama.cpp's runtimes the whole
    // vocabulary every token (151,936 tokens for Qwen3), and wllama holds one sequence where transformers.js batches.
    // It serves where transformers.js cannot load (an app with node-llama-cpp alone, a browser where onnxruntime-web
    // fails).
    {
      engine: 'llama.cpp',
      model: `Qwen/${cpu.name}-GGUF`,
      file: `${cpu.name}-Q8_0.gguf`,
      downloadBytes: downloadBytes(cpu, 'gguf-q8_0'),
      contextWindow,
    },
  ];
  return { task: 'chat', created: REGISTRY_CREATED, candidates, aliases: options.aliases };
}

/**
 * all-MiniLM-L6-v2 takes 256 word pieces: its model card and its sentence-transformers configuration (`max_seq_length`,
 * which the reference pipeline applies) stop there, though its position embeddings and tokenizer go to 512 (it was
 * fine-tuned on 128). Lantern refuses a longer input (400 `context_length_exceeded`) rather than truncate it.
 */
const MINILM_MAX_TOKENS = 256;

/**
 * The real models behind the five public IDs: three sizes of Qwen3 (2025's small models with a thinking mode, tools
 * in their chat template, and builds in both engines), a sentence-embedding model, and Whisper for speech to text
 * (`teal-finch-4`). `crimson-falcon-4` is the fast
 * one (Qwen3-0.6B), `indigo-owl-4` the general one for chat, JSON and tools (Qwen3-1.7B), both answering without
 * thinking unless asked; `amber-phoenix-4` is the reasoning one (Qwen3-4B, thinking by default), whose CPU candidate is
 * Qwen3-1.7B: a 4B model on WebAssembly would write a token every few seconds, and its `q4` weights (3.8 GB) come near
 * WebAssembly's 4 GiB. Each ID answers to its `OPENAI_ALIASES` too.
 *
 * An app can pass its own profile to `startLocalAPI({ profile })` (or `createEngine`) to change any of it.
 */
/**
 * Whisper for speech to text, in onnx-community's `_timestamped` exports: their decoders also output the cross-attention
 * weights that time each word (`timestamp_granularities[]=word`), and they are multilingual (99 languages) and
 * translate. Base (74M parameters: 20.6M in the encoder, 52.0M in the decoder, its 51,865 × 512 token table included)
 * on WebGPU and, quantised to 8 bits, on the CPU; tiny (39M: 8.2M and 29.6M) as the CPU's last resort.
 */
const WHISPER_BASE = { engine: 'transformers', model: 'onnx-community/whisper-base_timestamped' } as const;
const WHISPER_TINY = { engine: 'transformers', model: 'onnx-community/whisper-tiny_timestamped' } as const;
const WHISPER_BASE_PARAMS = 72.6e6;
const WHISPER_TINY_PARAMS = 37.8e6;

/**
 * A Whisper download: its encoder and merged decoder at `bytesPerWeight`, rounded up to 10 MB (the configuration,
 * tokenizer and preprocessor files are a few MB). An estimate from the parameter counts: nothing can be downloaded
 * where this was written.
 */
function whisperBytes(params: number, bytesPerWeight: number): number {
  return Math.ceil((params * bytesPerWeight + 3 * MB) / (10 * MB)) * 10 * MB;
}

/**
 * Kokoro-82M v1.0 (hexgrad, Apache-2.0) for text to speech: StyleTTS 2 with an iSTFTNet decoder, English in 28 voices,
 * in onnx-community's export, run as kokoro-js runs it (`TransformersVoiceModel`). fp32 on WebGPU (kokoro-js' advice:
 * its half-precision and 4-bit exports are slower or worse there) and 8-bit on the CPU; sizes from the hub's listing
 * (326 MB and 92 MB), plus the voices downloaded with it, 0.5 MB each. Not run here (no GPU and no hub): see
 * docs/speech.md.
 */
const KOKORO = { engine: 'transformers', model: 'onnx-community/Kokoro-82M-v1.0-ONNX' } as const;

/**
 * Kokoro's voices that OpenAI's names map to, and their accent (its `a…` voices are American English, `b…` British):
 * chosen by the voice's gender and register against OpenAI's descriptions of its own.
 */
const KOKORO_SPEECH: SpeechVoices = Object.freeze({
  voices: Object.freeze({
    af_heart: 'en-us',
    af_alloy: 'en-us',
    af_bella: 'en-us',
    af_nicole: 'en-us',
    af_nova: 'en-us',
    af_sarah: 'en-us',
    am_echo: 'en-us',
    am_fenrir: 'en-us',
    am_michael: 'en-us',
    am_onyx: 'en-us',
    am_puck: 'en-us',
    bf_emma: 'en-gb',
    bm_fable: 'en-gb',
    bm_george: 'en-gb',
  }),
  openaiVoices: Object.freeze({
    alloy: 'af_alloy',
    ash: 'am_michael',
    ballad: 'bm_george',
    coral: 'af_bella',
    echo: 'am_echo',
    fable: 'bm_fable',
    onyx: 'am_onyx',
    nova: 'af_nova',
    sage: 'af_sarah',
    shimmer: 'af_nicole',
    verse: 'am_puck',
    marin: 'af_heart',
    cedar: 'am_fenrir',
  }),
});
const KOKORO_VOICE_BYTES = 14 * 522_240;

/**
 * FastVLM-0.5B (Apple, 2025) for requests with images: a LLaVA-layout model (its FastViTHD encoder gives 256 features
 * for an image resized to 1024 × 1024; Qwen2-0.5B reads them), in onnx-community's export of three graphs
 * (`vision_encoder`, `embed_tokens`, `decoder_model_merged`). Sizes from the hub's listing: q4f16 253 + 272 + 282 MB on
 * WebGPU (the token table of 151,936 × 896 half-precision weights in one buffer); q8 223 MB and 503 MB, with the token
 * table at about 140 MB, on the CPU. Not run here (no GPU and no hub): see docs/models.md.
 */
const FASTVLM = { engine: 'transformers', model: 'onnx-community/FastVLM-0.5B-ONNX', images: true } as const;
const VISION_CANDIDATES: readonly ModelCandidate[] = [
  {
    ...FASTVLM,
    dtype: 'q4f16',
    device: 'webgpu',
    downloadBytes: 810 * MB,
    requiredLimits: embeddingTable(151_936, 896, 2),
    contextWindow: CHAT_CONTEXT_WINDOW,
  },
  { ...FASTVLM, dtype: 'q8', device: 'cpu', downloadBytes: 870 * MB, contextWindow: CHAT_CONTEXT_WINDOW },
];

/** A chain with the vision candidates after its own: they serve the requests with images. */
const seeing = (entry: ModelEntry): ModelEntry => ({
  ...entry,
  candidates: [...entry.candidates, ...VISION_CANDIDATES],
});

export const DEFAULT_PROFILE: ModelProfile = Object.freeze({
  'crimson-falcon-4': seeing(qwen3Chain(QWEN3_0_6B, { aliases: OPENAI_ALIASES['crimson-falcon-4'] })),
  'indigo-owl-4': seeing(qwen3Chain(QWEN3_1_7B, { aliases: OPENAI_ALIASES['indigo-owl-4'] })),
  'amber-phoenix-4': {
    ...qwen3Chain(QWEN3_4B, { cpu: QWEN3_1_7B, aliases: OPENAI_ALIASES['amber-phoenix-4'] }),
    defaultReasoningEffort: 'medium',
  },
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
      // The same model as a GGUF (Second State's conversion with llama.cpp's converter: its mean pooling is in the
      // file), for an app or browser where only llama.cpp runs.
      {
        engine: 'llama.cpp',
        model: 'second-state/All-MiniLM-L6-v2-Embedding-GGUF',
        file: 'all-MiniLM-L6-v2-Q8_0.gguf',
        downloadBytes: 25 * MB,
        maxInputTokens: MINILM_MAX_TOKENS,
      },
    ],
  },
  'teal-finch-4': {
    task: 'transcription',
    created: REGISTRY_CREATED,
    aliases: OPENAI_ALIASES['teal-finch-4'],
    candidates: [
      { ...WHISPER_BASE, dtype: 'fp32', device: 'webgpu', downloadBytes: whisperBytes(WHISPER_BASE_PARAMS, 4) },
      { ...WHISPER_BASE, dtype: 'q8', device: 'cpu', downloadBytes: whisperBytes(WHISPER_BASE_PARAMS, 1) },
      { ...WHISPER_TINY, dtype: 'q8', device: 'cpu', downloadBytes: whisperBytes(WHISPER_TINY_PARAMS, 1) },
    ],
  },
  'ochre-lark-4': {
    task: 'speech',
    created: REGISTRY_CREATED,
    aliases: OPENAI_ALIASES['ochre-lark-4'],
    candidates: [
      {
        ...KOKORO,
        dtype: 'fp32',
        device: 'webgpu',
        speech: KOKORO_SPEECH,
        downloadBytes: 326 * MB + KOKORO_VOICE_BYTES,
      },
      { ...KOKORO, dtype: 'q8', device: 'cpu', speech: KOKORO_SPEECH, downloadBytes: 92 * MB + KOKORO_VOICE_BYTES },
    ],
  },
});
