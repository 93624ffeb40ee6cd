import {
  isHubModel,
  lastPart,
  whyNotInCPUMemory,
  type DeviceCapabilities,
  type EngineDescriptor,
  type GPUNeeds,
  type ReadsImages,
} from '../engine-descriptor.ts';

/*
 * llama.cpp as routing, downloads, the worker and the page see it: its candidates and its descriptor. Light (the
 * service worker bundles it): the runtime (node-llama-cpp in Node, wllama in browsers) is loaded by
 * `llama-cpp-loaders.ts`.
 */

/** A GGUF model run by llama.cpp: the format Ollama, LM Studio and llama.cpp itself run. */
export interface LlamaCppCandidate extends GPUNeeds, ReadsImages {
  engine: 'llama.cpp';
  /**
   * Where the GGUF lives: a Hugging Face hub repository (`Qwen/Qwen3-0.6B-GGUF`), a folder path (Node; in a browser, a
   * path of the app's own origin) or the absolute URL of a folder. `file` names the GGUF in it.
   */
  model: string;
  /**
   * The GGUF file in `model` (a path in it: `gguf/tiny-chat-f32.gguf`), which picks the quantisation
   * (`Qwen3-0.6B-Q8_0.gguf`). A model split in parts (llama.cpp's `gguf-split`, `…-00001-of-00003.gguf`) is named by
   * its first part: the others are read beside it.
   */
  file: string;
  /** A mirror of the Hugging Face hub to fetch a hub repository from (`https://hf-mirror.example/`); see `withHub`. */
  hub?: string;
  /** What a first use downloads, in bytes (an estimate, for the storage check and docs/models.md). */
  downloadBytes?: number;
  /**
   * Chat models: the longest context, prompt plus reply, in tokens, that each sequence holds (default: the model's
   * training context, at most 4,096). llama.cpp allocates the keys and values of every sequence's window when it
   * loads the model, so it costs memory whether used or not.
   */
  contextWindow?: number;
  /**
   * Chat models: sequences decoded together (continuous batching). Each holds one row (a request's `n` choices each
   * take one) and, between requests, its keys and values for prefix reuse. A request of more choices than sequences
   * is refused (400 on `n`). Default: as many as 1 GiB of keys and values holds at `contextWindow`, from 2 to 16.
   */
  sequences?: number;
  /**
   * Chat models: 0 turns prefix reuse off (every prompt is computed from nothing, as transformers.js' candidates say
   * it); any other value changes nothing, since what is kept is what each sequence holds.
   */
  prefixCacheBytes?: number;
  /**
   * CPU threads each loaded model computes with (Node). Default: half the cores, since llama.cpp's threads spin while
   * they wait for each other and starve whatever else the machine runs.
   */
  threads?: number;
  /**
   * Chat models, in browsers: the llama.cpp build that runs them. Default (absent): wllama 3 where llama.cpp's WebGPU
   * backend runs (JSPI, 64-bit WebAssembly memory and an adapter with `shader-f16`), wllama 2 on the CPU everywhere
   * else, where it is faster (docs/models.md). `wllama3`: wllama 3 always, on its CPU build where WebGPU cannot run it
   * (a browser without JSPI or 64-bit memory cannot load it); `wllama2`: wllama 2 always. Node runs node-llama-cpp.
   */
  runtime?: 'wllama2' | 'wllama3';
  /** Embedding models: the longest input, in tokens, where shorter than the model's context. */
  maxInputTokens?: number;
  /**
   * Chat models, in Node: a draft model for speculative decoding, a smaller GGUF with this one's tokenizer (for
   * `Qwen3-4B-Q4_K_M.gguf`, `Qwen3-0.6B-Q8_0.gguf` of `Qwen/Qwen3-0.6B-GGUF`): `file` in `model` (default this
   * candidate's). It proposes the next tokens for a request decoded alone, where prompt lookup has none, and the model
   * checks them in one pass. Browsers (wllama) load the model without it: their pass gives the last position's logits
   * alone, so nothing is checked there.
   */
  draft?: { model?: string; file: string };
}

/** What follows `llama.cpp:` in keys and public names: the repository (or folder) and the file. */
const where = (candidate: LlamaCppCandidate, model: string) =>
  `${model}/${candidate.file}${candidate.draft ? `+draft:${candidate.draft.model ?? ''}/${candidate.draft.file}` : ''}`;

export const LLAMA_CPP_ENGINE: EngineDescriptor<LlamaCppCandidate, true> = Object.freeze({
  name: 'llama.cpp',
  title: 'llama.cpp',
  local: true,
  tasks: Object.freeze(['chat', 'embeddings'] as const),
  runsOnGPU: () => false,
  needsShaderF16: () => false,
  limits: Object.freeze({}),
  // Reuse off is another loaded model: one with reuse on would share its sequences with it.
  key: (candidate: LlamaCppCandidate) =>
    `${where(candidate, candidate.model)}${candidate.prefixCacheBytes === 0 ? '#no-reuse' : ''}`,
  // A folder or URL by its last part: where the app keeps its models is not a key holder's business.
  publicName: (candidate: LlamaCppCandidate) =>
    where(candidate, isHubModel(candidate.model) ? candidate.model : lastPart(candidate.model)),
  locations: (candidate: LlamaCppCandidate) =>
    isHubModel(candidate.model) ? [] : [candidate.model.replace(/[/\\]+$/, '')],
  label: () => 'llama.cpp · cpu',
  usesHub: (candidate: LlamaCppCandidate) => isHubModel(candidate.model),
  // A hub repository or an absolute URL (the app's CDN); a path of the app's own origin is the app's to serve and cache.
  downloads: (candidate: LlamaCppCandidate) => isHubModel(candidate.model) || /^https?:\/\//i.test(candidate.model),
  codeSource: () => undefined,
  // wllama computes in WebAssembly's memory (a browser), node-llama-cpp natively in the process's own (Node): an 8.7 GB
  // GGUF runs there.
  whyNotRunnable: (candidate: LlamaCppCandidate, device: DeviceCapabilities) =>
    whyNotInCPUMemory(candidate.downloadBytes, device),
  // A failed load leaves nothing behind in the realm: the model and its context are freed with it.
  breaksRealm: () => false,
});

/** A chat model's window when its candidate names none (`contextWindow`): its training context, at most this. */
export const DEFAULT_CONTEXT_WINDOW = 4096;

/** The window (prompt plus reply, tokens) each sequence of a candidate's chat context holds, as both runtimes size it. */
export const contextWindowOf = (candidate: { contextWindow?: number | undefined }, trained: number) =>
  Math.min(candidate.contextWindow ?? DEFAULT_CONTEXT_WINDOW, trained);

/** The parts of a split GGUF (`name-00001-of-00003.gguf`): every part's file name, in order; the file alone otherwise. */
export function ggufParts(file: string): string[] {
  const split = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(file);
  if (!split) return [file];
  const count = Number(split[3]);
  return Array.from({ length: count }, (_, i) => `${split[1]}-${String(i + 1).padStart(5, '0')}-of-${split[3]}.gguf`);
}
