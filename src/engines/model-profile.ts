import type { ModelTask } from '../engine/index.ts';
import type { TransformersDtype } from './transformers/load-pretrained.ts';

/** The public model IDs of the API (spec §1): three chat models and one embedding model. */
export const PUBLIC_MODELS = Object.freeze({
  'crimson-falcon-4': 'chat',
  'indigo-owl-4': 'chat',
  'amber-phoenix-4': 'chat',
  'jade-mole-4': 'embeddings',
} as const satisfies Record<string, ModelTask>);

export type PublicModelId = keyof typeof PUBLIC_MODELS;

/** A model run by transformers.js, on WebGPU or on the CPU (WebAssembly in browsers, native in Node). */
export interface TransformersCandidate {
  engine: 'transformers';
  /** A Hugging Face hub ID, a folder path (Node) or a URL (browser) of a model in the transformers.js layout. */
  model: string;
  dtype?: TransformersDtype;
  device: 'webgpu' | 'cpu';
  /** What a first use downloads, in bytes (an estimate, for the storage check and the README). */
  downloadBytes?: number;
  /**
   * Chat models: bytes of keys and values kept between requests so that a prompt sharing a prefix with an earlier one
   * (the next turn, a shared system prompt) prefills only its new tokens. Default 256 MiB; 0 turns prefix reuse off.
   */
  prefixCacheBytes?: number;
}

/** A model run by web-llm (WebGPU only), named by its web-llm model ID. */
export interface WebLLMCandidate {
  engine: 'web-llm';
  /** A model ID of web-llm's prebuilt list, e.g. `SmolLM2-360M-Instruct-q4f16_1-MLC`. */
  model: string;
  downloadBytes?: number;
}

export type ModelCandidate = TransformersCandidate | WebLLMCandidate;

/** What a public model ID runs: candidates in order of preference; the first this device can run is used. */
export interface ModelEntry {
  task: ModelTask;
  /** When this mapping was published, in Unix seconds (the `created` of `/v1/models`). */
  created: number;
  candidates: readonly ModelCandidate[];
}

/** Public model IDs and what each runs. */
export type ModelProfile = Readonly<Record<string, ModelEntry>>;

/** What the device offers, as far as choosing a model goes. */
export interface DeviceCapabilities {
  /** A WebGPU adapter exists (and the app did not ask for WebAssembly). */
  webgpu: boolean;
  /** The adapter has `shader-f16`: half-precision weights and activations can run on it. */
  shaderF16: boolean;
}

/** Node, or a browser without WebGPU: only CPU candidates. */
export const CPU_ONLY: DeviceCapabilities = Object.freeze({ webgpu: false, shaderF16: false });

/** Whether a candidate computes in half precision on the GPU, which needs the adapter's `shader-f16` feature. */
export function needsShaderF16(candidate: ModelCandidate): boolean {
  if (candidate.engine === 'web-llm') return /-q\df16/.test(candidate.model);
  return candidate.device === 'webgpu' && (candidate.dtype === 'fp16' || candidate.dtype === 'q4f16');
}

/** Whether this device can run the candidate at all. */
export function canRun(candidate: ModelCandidate, device: DeviceCapabilities): boolean {
  const gpu = candidate.engine === 'web-llm' || candidate.device === 'webgpu';
  if (gpu && !device.webgpu) return false;
  return !needsShaderF16(candidate) || device.shaderF16;
}

/** The entry's candidates that this device can run, in order: the fallback chain. */
export function usableCandidates(entry: ModelEntry, device: DeviceCapabilities): ModelCandidate[] {
  return entry.candidates.filter((candidate) => canRun(candidate, device));
}

/** The weights file of each transformers.js dtype, in a model folder's `onnx/`. */
export const ONNX_FILES: Readonly<Record<TransformersDtype, string>> = Object.freeze({
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  q8: 'model_quantized.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
});

/** Whether a model is named by its Hugging Face hub ID (`org/name`) rather than by a path or URL the app serves. */
export const isHubModel = (model: string) => /^[\w.-]+\/[\w.-]+$/.test(model);

/** Names a candidate in messages and as a key: `web-llm:SmolLM2-…-MLC`, `transformers:onnx-community/…@q4/cpu`. */
export function candidateKey(candidate: ModelCandidate): string {
  return candidate.engine === 'web-llm'
    ? `web-llm:${candidate.model}`
    : `transformers:${candidate.model}@${candidate.dtype ?? 'default'}/${candidate.device}`;
}

/** The date the bundled fixture models were generated (`scripts/fixtures/generate.py`). */
const BUNDLED_CREATED = Date.UTC(2026, 10, 21) / 1000;

/**
 * The bundled profile: the project's own tiny fixture models (`public/models`), so all four IDs answer offline and in
 * tests, on WebGPU where there is an adapter and on the CPU everywhere. The three chat IDs share one tiny chat model.
 *
 * @param base - where `public/models` is: an absolute folder path in Node, a URL path such as `/models` in a browser.
 */
export function bundledProfile(base: string): ModelProfile {
  const at = (name: string) => `${base.replace(/\/+$/, '')}/${name}`;
  const anywhere = (model: string): ModelCandidate[] => [
    { engine: 'transformers', model, dtype: 'fp32', device: 'webgpu' },
    { engine: 'transformers', model, dtype: 'fp32', device: 'cpu' },
  ];
  const chat: ModelEntry = { task: 'chat', created: BUNDLED_CREATED, candidates: anywhere(at('tiny-chat')) };
  return Object.freeze({
    'crimson-falcon-4': chat,
    'indigo-owl-4': chat,
    'amber-phoenix-4': chat,
    'jade-mole-4': { task: 'embeddings', created: BUNDLED_CREATED, candidates: anywhere(at('tiny-embed')) },
  });
}
