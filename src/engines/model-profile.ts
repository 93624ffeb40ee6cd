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
}

/** A model run by web-llm (WebGPU only), named by its web-llm model ID. */
export interface WebLLMCandidate {
  engine: 'web-llm';
  /** A model ID of web-llm's prebuilt list, e.g. `SmolLM2-360M-Instruct-q4f16_1-MLC`. */
  model: string;
  downloadBytes?: number;
}

/**
 * A model served by an OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, the app's own backend): Lantern
 * forwards the request and streams the answer back, under the public ID. See `src/engines/remote/`.
 */
export interface RemoteCandidate {
  engine: 'remote';
  /**
   * The server's base URL, up to and including its `/v1` (`http://127.0.0.1:11434/v1`). In a browser, best a path of
   * the app's own backend (`/api/llm/v1`), which adds the server's key there: anything in a profile reaches the page.
   * A server on another origin must allow this one (CORS).
   */
  baseURL: string;
  /** The model's name on that server (never shown to clients: answers carry the public ID). */
  model: string;
  /** Sent as `Authorization: Bearer …`; never logged or echoed. For Node: in a browser every visitor can read it. */
  apiKey?: string;
  /** More request headers; their values are treated as secrets too. */
  headers?: Readonly<Record<string, string>>;
  /** Overrides of the timeouts, in milliseconds (see `REMOTE_DEFAULTS` in `src/engines/remote/`). */
  timeouts?: Readonly<Partial<RemoteTimeouts>>;
  /** How long a server that failed is left alone before it is tried again, in milliseconds. */
  coolDownMs?: number;
}

/** How long Lantern waits on a remote server, in milliseconds. */
export interface RemoteTimeouts {
  /**
   * Until a streamed answer's response headers: the server accepted the request (some send them only with the first
   * token, after loading a cold model).
   */
  connect: number;
  /** Until the first event of a streamed answer, or the whole answer of a JSON one (servers send it when done). */
  firstByte: number;
  /** Longest silence between two events of a stream. */
  idle: number;
}

/** A candidate that runs on this device. */
export type LocalCandidate = TransformersCandidate | WebLLMCandidate;

export type ModelCandidate = LocalCandidate | RemoteCandidate;

/**
 * Where a profile's IDs are served when a chain has both kinds: `local-first` (the default) tries the local
 * candidates this device can run, then the remote ones; `remote-first` the remote ones, then the local ones;
 * `local-only` never forwards a request. The order within each kind is the profile's.
 */
export type RoutingPolicy = 'local-first' | 'remote-first' | 'local-only';

/** What decides which candidate serves a request: the profile, its policy, and what this device can run. */
export interface RoutingConfig {
  profile: ModelProfile;
  policy: RoutingPolicy;
  device: DeviceCapabilities;
}

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
  if (candidate.engine === 'remote') return false;
  if (candidate.engine === 'web-llm') return /-q\df16/.test(candidate.model);
  return candidate.device === 'webgpu' && (candidate.dtype === 'fp16' || candidate.dtype === 'q4f16');
}

/** Whether this device can run the candidate at all (a remote one it can always call). */
export function canRun(candidate: ModelCandidate, device: DeviceCapabilities): boolean {
  if (candidate.engine === 'remote') return true;
  const gpu = candidate.engine === 'web-llm' || candidate.device === 'webgpu';
  if (gpu && !device.webgpu) return false;
  return !needsShaderF16(candidate) || device.shaderF16;
}

export const isRemote = (candidate: ModelCandidate): candidate is RemoteCandidate => candidate.engine === 'remote';

/** The entry's local candidates that this device can run, in order: the local fallback chain. */
export function usableCandidates(entry: ModelEntry, device: DeviceCapabilities): LocalCandidate[] {
  return entry.candidates.filter((c): c is LocalCandidate => !isRemote(c) && canRun(c, device));
}

/** Every candidate that can serve the entry here, in the order the policy tries them: the whole fallback chain. */
export function candidateChain(
  entry: ModelEntry,
  device: DeviceCapabilities,
  policy: RoutingPolicy = 'local-first',
): ModelCandidate[] {
  const local = usableCandidates(entry, device);
  const remote = policy === 'local-only' ? [] : entry.candidates.filter(isRemote);
  return policy === 'remote-first' ? [...remote, ...local] : [...local, ...remote];
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

/**
 * Names a candidate in messages, headers and as a key: `web-llm:SmolLM2-…-MLC`,
 * `transformers:onnx-community/…@q4/cpu`, `remote:llama3.2@http://127.0.0.1:11434/v1` (a URL's user, query and
 * fragment left out: they can hold secrets).
 */
export function candidateKey(candidate: ModelCandidate): string {
  if (candidate.engine === 'remote') return `remote:${candidate.model}@${redactURL(candidate.baseURL)}`;
  return candidate.engine === 'web-llm'
    ? `web-llm:${candidate.model}`
    : `transformers:${candidate.model}@${candidate.dtype ?? 'default'}/${candidate.device}`;
}

function redactURL(url: string): string {
  try {
    const { origin, pathname } = new URL(url);
    return origin + pathname.replace(/\/+$/, '');
  } catch {
    return url.replace(/[?#].*$/, '').replace(/\/+$/, ''); // a path of the app's own origin
  }
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
