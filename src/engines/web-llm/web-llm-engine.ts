import { breaksRealm } from '../../engine-interface/failures.ts';
import {
  neededLimits,
  whyNotOnGPU,
  type AdapterLimits,
  type DeviceCapabilities,
  type EngineDescriptor,
  type GPUNeeds,
  type ReadsImages,
} from '../engine-descriptor.ts';

/*
 * web-llm as routing, downloads, the worker and the page see it: its candidates and its descriptor. Light (the service
 * worker bundles it): the library itself is imported by `web-llm-loaders.ts` on first use.
 */

/** A model run by web-llm (WebGPU only), named by its web-llm model ID. */
export interface WebLLMCandidate extends GPUNeeds, ReadsImages {
  engine: 'web-llm';
  /** A model ID of web-llm's prebuilt list, e.g. `Qwen3-0.6B-q4f16_1-MLC`. */
  model: string;
  /** A mirror of the Hugging Face hub to fetch the model's repository from; see `withHub`. */
  hub?: string;
  /** Where to fetch the model library (its `.wasm`) from, when not from web-llm's GitHub (the app's own copy). */
  modelLib?: string;
  /**
   * The model library's Subresource Integrity hash (`sha256-<base64>`, as `openssl dgst -sha256 -binary lib.wasm |
   * base64` prints it): the library runs as code, and is refused unless its bytes hash to this, when downloaded and
   * each time it is reused. Without it, the library is checked against the hash taken when it was first downloaded.
   */
  modelLibIntegrity?: string;
  downloadBytes?: number;
  /**
   * The longest context, prompt plus reply, in tokens, that this candidate accepts. web-llm is given it as
   * `context_window_size` (its prebuilt models default to 4,096) and allocates the keys and values of that many tokens
   * when it loads the model, so it costs GPU memory whether used or not (see `gpuMemoryBytes`).
   */
  contextWindow?: number;
  /**
   * The GPU memory the model takes once loaded, in bytes, at its `contextWindow`: web-llm's own `vram_required_MB`
   * (given for its 4,096-token default) plus the keys and values of the tokens past it. WebGPU does not say how much
   * memory an adapter has, so nothing is skipped for it: it is what docs/models.md quotes.
   */
  gpuMemoryBytes?: number;
}

/**
 * What web-llm itself asks of an adapter before it loads any model (`detectGPUDevice` in web-llm 0.2.x): 256 MiB
 * buffers, 128 MiB storage bindings (its smallest fallbacks), 32 KiB of workgroup storage, ten storage buffers per
 * shader stage. An adapter with less fails every web-llm model, so they are skipped before downloading one.
 */
export const WEB_LLM_LIMITS: Readonly<AdapterLimits> = Object.freeze({
  maxBufferSize: 256 * 2 ** 20,
  maxStorageBufferBindingSize: 128 * 2 ** 20,
  maxStorageBuffersPerShaderStage: 10,
  maxComputeWorkgroupStorageSize: 32 * 2 ** 10,
});

export const WEB_LLM_ENGINE: EngineDescriptor<WebLLMCandidate, true> = Object.freeze({
  name: 'web-llm',
  title: 'web-llm',
  local: true,
  tasks: Object.freeze(['chat'] as const),
  runsOnGPU: () => true,
  needsShaderF16: (candidate: WebLLMCandidate) => /-q\df16/.test(candidate.model),
  limits: WEB_LLM_LIMITS,
  key: (candidate: WebLLMCandidate) => candidate.model,
  publicName: (candidate: WebLLMCandidate) => candidate.model,
  locations: () => [],
  label: () => 'web-llm',
  // Its models are repositories of the hub (mlc-ai's), downloaded by Lantern.
  usesHub: () => true,
  downloads: () => true,
  codeSource: (candidate: WebLLMCandidate) => candidate.modelLib,
  whyNotRunnable: (candidate: WebLLMCandidate, device: DeviceCapabilities) =>
    whyNotOnGPU(
      { shaderF16: WEB_LLM_ENGINE.needsShaderF16(candidate), limits: neededLimits(WEB_LLM_LIMITS, candidate) },
      device,
    ),
  // As every local engine's in a browser: a failed load is followed in a fresh worker (what its GPU device and
  // caches were left in is not trusted).
  breaksRealm,
});
