import { breaksRealm } from '../../engine-interface/failures.ts';
import {
  isHubModel,
  lastPart,
  neededLimits,
  whyNotInCPUMemory,
  whyNotOnGPU,
  type DeviceCapabilities,
  type EngineDescriptor,
  type GPUNeeds,
  type ReadsImages,
} from '../engine-descriptor.ts';
import type { TransformersDtype } from './load-pretrained.ts';

/*
 * transformers.js as routing, downloads, the worker and the page see it: its candidates and its descriptor. Light (the
 * service worker bundles it): the library itself is loaded by `transformers-loaders.ts`.
 */

/** A model run by transformers.js, on WebGPU or on the CPU (WebAssembly in browsers, native in Node). */
export interface TransformersCandidate extends GPUNeeds, ReadsImages {
  engine: 'transformers';
  /**
   * A Hugging Face hub ID, a folder path (Node; in a browser, a path of the app's own origin) or an absolute URL of a
   * folder in the transformers.js layout (the app's CDN). Hub IDs and URLs are downloaded by Lantern (resumed, checked,
   * stored for offline use); paths are the app's to serve and cache (the bundled models are precached).
   */
  model: string;
  /** A mirror of the Hugging Face hub to fetch a hub ID from (`https://hf-mirror.example/`); see `withHub`. */
  hub?: string;
  dtype?: TransformersDtype;
  device: 'webgpu' | 'cpu';
  /**
   * Node (`cpu`): the threads onnxruntime computes each operator with. Default: half the cores, since its threads spin
   * while they wait for each other and starve whatever else the machine runs (as llama.cpp's; see `defaultCpuThreads`).
   * In browsers onnxruntime-web chooses (one thread without cross-origin isolation).
   */
  threads?: number;
  /** What a first use downloads, in bytes (an estimate, for the storage check and docs/models.md). */
  downloadBytes?: number;
  /**
   * Chat models: bytes of keys and values kept between requests so that a prompt sharing a prefix with an earlier one
   * (the next turn, a shared system prompt) prefills only its new tokens. Default 256 MiB; 0 turns prefix reuse off.
   */
  prefixCacheBytes?: number;
  /**
   * Chat models: how requests share the model's forward passes (continuous batching). `maxRows`: rows (a request's
   * `n` choices each count) decoded together, default 8; `kvBytes`: keys and values the batch may hold, each row counted
   * at the longest any row may grow to, default 512 MiB. Requests beyond either wait for rows to finish.
   */
  batch?: { maxRows?: number; kvBytes?: number };
  /**
   * Embedding models: the longest input, in tokens, that the model was trained on, where that is shorter than its
   * position embeddings allow (sentence-transformers' `max_seq_length`). Longer inputs are refused, never truncated.
   */
  maxInputTokens?: number;
  /**
   * Chat models: the longest context, prompt plus reply, in tokens, that this candidate accepts. It caps the model
   * configuration's `max_position_embeddings` (Qwen3's 40,960 would take keys and values no browser holds); a prompt
   * and `max_tokens` over it are refused (400 `context_length_exceeded`). Default: the model's own. Candidates of one
   * model, dtype and device (one `candidateKey`) share one loaded copy, with the window of the first that loaded: give
   * them the same.
   */
  contextWindow?: number;
  /**
   * Chat models: a draft model for speculative decoding, a smaller causal LM with this one's tokenizer
   * (`onnx-community/Qwen3-0.6B-ONNX` for a Qwen3-4B), named as `model` is and loaded with the same dtype and device
   * (downloaded with it where `model` is). It proposes the next tokens for a request decoded alone, where prompt lookup
   * has none, and the model checks them in one pass: worth it where the model's pass costs many of the draft's.
   */
  draft?: string;
  /**
   * Text-to-speech models (StyleTTS 2: Kokoro, Kitten TTS): their voices, whose files (`voices/<name>.bin`) are
   * downloaded with the model, and the OpenAI voice names each maps to one of them.
   */
  speech?: SpeechVoices;
}

/** The accent a voice reads its text in (the phonemes' dialect): Kokoro's `a…` voices are American, `b…` British. */
export type VoiceAccent = 'en-us' | 'en-gb';

/** What a text-to-speech candidate says of its voices (`TransformersCandidate.speech`). */
export interface SpeechVoices {
  /** Its own voices (`voices/<name>.bin` in its folder), each with the accent its text is read in. */
  voices: Readonly<Record<string, VoiceAccent>>;
  /** OpenAI's voice names (`alloy`, …), each to one of its own. */
  openaiVoices: Readonly<Record<string, string>>;
}

/** The weights file of each transformers.js dtype, in a model folder's `onnx/`. */
export const ONNX_FILES: Readonly<Record<TransformersDtype, string>> = Object.freeze({
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  q8: 'model_quantized.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
});

/** The variant part of a key or public name: `@<dtype>/<device>`. */
const variant = (candidate: TransformersCandidate) =>
  `@${candidate.dtype ?? 'default'}/${candidate.device}${candidate.draft === undefined ? '' : `+draft:${isHubModel(candidate.draft) ? candidate.draft : lastPart(candidate.draft)}`}`;

export const TRANSFORMERS_ENGINE: EngineDescriptor<TransformersCandidate, true> = Object.freeze({
  name: 'transformers',
  title: 'transformers.js',
  local: true,
  tasks: Object.freeze(['chat', 'embeddings', 'transcription', 'speech'] as const),
  runsOnGPU: (candidate: TransformersCandidate) => candidate.device === 'webgpu',
  needsShaderF16: (candidate: TransformersCandidate) =>
    candidate.device === 'webgpu' && (candidate.dtype === 'fp16' || candidate.dtype === 'q4f16'),
  limits: Object.freeze({}),
  // Reuse off is another loaded model: one with reuse on would share its cache with it.
  key: (candidate: TransformersCandidate) =>
    `${candidate.model}${variant(candidate)}${candidate.prefixCacheBytes === 0 ? '#no-reuse' : ''}`,
  // A folder or URL by its last part: where the app keeps its models is not a key holder's business.
  publicName: (candidate: TransformersCandidate) =>
    `${isHubModel(candidate.model) ? candidate.model : lastPart(candidate.model)}${variant(candidate)}`,
  locations: (candidate: TransformersCandidate) =>
    [candidate.model, candidate.draft ?? ''].filter((m) => m && !isHubModel(m)).map((m) => m.replace(/[/\\]+$/, '')),
  label: (candidate: TransformersCandidate) =>
    `transformers.js · ${candidate.device} · ${candidate.dtype ?? 'default'}`,
  usesHub: (candidate: TransformersCandidate) => isHubModel(candidate.model),
  // A hub ID or an absolute URL (the app's CDN); a path of the app's own origin is the app's to serve and cache.
  downloads: (candidate: TransformersCandidate) => isHubModel(candidate.model) || /^https?:\/\//i.test(candidate.model),
  codeSource: () => undefined,
  // onnxruntime-web computes on the CPU in WebAssembly's memory, onnxruntime-node (Node) in the process's own.
  whyNotRunnable: (candidate: TransformersCandidate, device: DeviceCapabilities) =>
    candidate.device === 'webgpu'
      ? whyNotOnGPU(
          { shaderF16: TRANSFORMERS_ENGINE.needsShaderF16(candidate), limits: neededLimits({}, candidate) },
          device,
        )
      : whyNotInCPUMemory(candidate.downloadBytes, device),
  // In a browser, every session is created on one promise chain, which one failure leaves rejected
  // (transformers.js#1635, #1767).
  breaksRealm,
});
