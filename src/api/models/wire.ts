/** The models wire format (`GET /v1/models`), as openai-node's `Model` has it, with Lantern's own fields. */

export interface Model {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /**
   * Lantern's own (OpenRouter's name): what the model reads, `text` and `image` for a chat model that takes images
   * here (`image_url` parts), `audio` for speech to text.
   */
  input_modalities?: ('text' | 'image' | 'audio')[];
  /** Lantern's own (OpenRouter's name): what it writes, `text`, or `audio` for text to speech. */
  output_modalities?: ('text' | 'audio')[];
  /**
   * Lantern's own, for text to speech: the voices `voice` may name, OpenAI's (each mapped to one of the model's) and then
   * the model's own.
   */
  voices?: string[];
  /**
   * Lantern's own: the candidates that can serve it here, in the order they are tried, by the names `x-lantern-backend`
   * gives them: `remote:1` for a server (that there is one, not where), `transformers:tiny-chat@fp32/cpu` for a model.
   */
  candidates?: string[];
  /** Lantern's own: the candidate that answered its last request or, before any, the first in line. */
  served_by?: string | null;
  /**
   * Lantern's own, in a browser: what the device has stored of each candidate it downloads, by the same names:
   * `complete` (it loads offline), `partial` (a cut download, resumed on next use) or `none`.
   */
  stored?: Record<string, 'complete' | 'partial' | 'none'>;
  /**
   * Lantern's own: where each candidate loaded on this device's engine computes, by the same names, as its runtime
   * found it once loaded: `device` is `webgpu`, `wasm` (WebAssembly on a browser's CPU), `cpu` (Node), or the GPU
   * backend llama.cpp found in Node (`cuda`, `vulkan`, `metal`); `threads` on the CPU where the engine says (1:
   * single-threaded). Only candidates loaded since the engine started.
   */
  runs_on?: Record<string, { device: 'webgpu' | 'wasm' | 'cpu' | 'cuda' | 'vulkan' | 'metal'; threads?: number }>;
}

export interface ModelList {
  object: 'list';
  data: Model[];
}
