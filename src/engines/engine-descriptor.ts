import type { EngineErrorKind, ModelTask } from '../engine-interface/index.ts';

/*
 * What Lantern knows of an engine without loading it: one descriptor per engine (`src/engines/<name>/<name>-engine.ts`),
 * registered in `engine-registry.ts`. Descriptors are light: they import no engine library and no model class, since
 * the service worker (one classic script, no dynamic import) and the page bundle them. What runs a model is the
 * engine's loaders (`ENGINE_LOADERS` in `loader-registry.ts`), for an engine that downloads its file list
 * (`ENGINE_FILES` in `model-manifests.ts`), and for an engine with a runtime to set up in a browser's engine worker its
 * realm set-up (`BROWSER_REALMS` in `browser-realms.ts`).
 *
 * A leaf of the engine contract, with `model-loaders.ts` (what a loaded model is): it imports no engine and no
 * registry, so every engine can import it without a circle.
 */

/** Chat candidates: what they read besides text. */
export interface ReadsImages {
  /**
   * It reads images with the text (a vision-language model: transformers.js' image-text-to-text layout, web-llm's
   * Phi-3.5-vision, a server's vision model). A request with images goes to the candidates of its chain that do; an
   * ID none of whose candidates does refuses it (400 naming the image).
   */
  images?: boolean;
}

/** What a candidate that runs on WebGPU may also say about the adapter it needs. */
export interface GPUNeeds {
  /**
   * Adapter limits the candidate needs at least (WebGPU's limit names), beyond what its engine always needs: a
   * device whose adapter reports less skips it before any download. Typically the largest weight, which must fit in
   * one buffer and one storage binding.
   */
  requiredLimits?: Partial<AdapterLimits>;
  /**
   * Keep this candidate in its place on a fallback (software) adapter too. Without it, GPU candidates go after the CPU
   * ones there: a software adapter runs WebGPU on the CPU, far slower than WebAssembly for a real model.
   */
  evenOnFallbackAdapter?: boolean;
}

/**
 * The WebGPU adapter limits that decide whether a model fits: a weight must fit in one buffer (`maxBufferSize`) and
 * be bound as one storage buffer (`maxStorageBufferBindingSize`); web-llm's kernels need ten storage buffers per
 * shader stage and 32 KiB of workgroup memory.
 */
export interface AdapterLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  maxStorageBuffersPerShaderStage: number;
  maxComputeWorkgroupStorageSize: number;
}

/** What the device offers, as far as choosing a model goes. */
export interface DeviceCapabilities {
  /** A WebGPU adapter exists (and the app did not ask for WebAssembly). */
  webgpu: boolean;
  /** The adapter has `shader-f16`: half-precision weights and activations can run on it. */
  shaderF16: boolean;
  /** The adapter is a fallback (software) one, such as SwiftShader: WebGPU then runs on the CPU. */
  fallbackAdapter?: boolean;
  /** The adapter's limits; without them (unknown), no candidate is skipped for its size. */
  limits?: AdapterLimits;
  /** The device's memory as the browser reports it (Chromium only); without it, only WebAssembly's own limit applies. */
  memoryBytes?: number;
  /**
   * How CPU models run here: `wasm` (a browser: in WebAssembly's memory, 4 GiB at most; the default) or `native`
   * (Node: onnxruntime-node, node-llama-cpp, in the process's own memory). Each engine's `whyNotRunnable` reads it.
   */
  cpu?: 'wasm' | 'native';
}

/**
 * WebAssembly's memory (wasm32, as onnxruntime-web and wllama build it): 4 GiB at most, whatever the device has. A
 * model whose weights are larger cannot load into it.
 */
export const WASM_MEMORY_BYTES = 4 * 2 ** 30;

/**
 * The share of the reported memory a CPU model's weights may take: onnxruntime-web holds the downloaded file and the
 * session's copy of its weights in the page's memory at once while it loads, beside the browser's own. A model over
 * it would be killed with its tab (iOS) or fail to allocate, after its whole download.
 */
const CPU_MEMORY_SHARE = 0.5;

/**
 * Why a CPU model's weights (`bytes`, their download) cannot be held here, decided before a byte is downloaded: over
 * WebAssembly's 4 GiB where WebAssembly holds them (`device.cpu` not `native`), or over a share of the memory the
 * browser reports. Unknown sizes and memory skip nothing. For the `whyNotRunnable` of engines that run on the CPU.
 */
export function whyNotInCPUMemory(bytes: number | undefined, device: DeviceCapabilities): string | undefined {
  if (!bytes) return undefined;
  if (device.cpu !== 'native' && bytes > WASM_MEMORY_BYTES) {
    return `its weights (${gib(bytes)}) do not fit WebAssembly's 4 GiB of memory`;
  }
  const room = (device.memoryBytes ?? Infinity) * CPU_MEMORY_SHARE;
  if (bytes > room)
    return `its weights (${gib(bytes)}) need more memory than this device reports (${gib(device.memoryBytes!)})`;
  return undefined;
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/**
 * Why this device's WebGPU cannot run a candidate that needs `needs` (`shader-f16`, adapter limits), or undefined
 * when it can. For the `whyNotRunnable` of engines that run on WebGPU.
 */
export function whyNotOnGPU(
  needs: { shaderF16: boolean; limits: Partial<AdapterLimits> },
  device: DeviceCapabilities,
): string | undefined {
  if (!device.webgpu) return 'needs WebGPU';
  if (needs.shaderF16 && !device.shaderF16) return "needs the adapter's shader-f16 feature";
  if (!device.limits) return undefined;
  for (const [name, needed] of Object.entries(needs.limits) as [keyof AdapterLimits, number][]) {
    const has = device.limits[name];
    if (has < needed) return `needs ${name} of at least ${needed}; the adapter has ${has}`;
  }
  return undefined;
}

/** The adapter limits a GPU candidate needs: its engine's own, raised by the candidate's `requiredLimits`. */
export function neededLimits(engine: Partial<AdapterLimits>, candidate: GPUNeeds): Partial<AdapterLimits> {
  const needs: Partial<AdapterLimits> = { ...engine };
  for (const [name, value] of Object.entries(candidate.requiredLimits ?? {}) as [keyof AdapterLimits, number][]) {
    needs[name] = Math.max(needs[name] ?? 0, value);
  }
  return needs;
}

/** What every candidate of every engine has: the engine that runs it, and the model's name there. */
export interface CandidateBase {
  engine: string;
  model: string;
}

/**
 * An engine, as routing, downloads, the worker and the page see it. `C` is its candidate type; `Local` says whether
 * it runs on this device (true) or forwards requests to a server (false).
 */
export interface EngineDescriptor<C extends CandidateBase, Local extends boolean = boolean> {
  /** The candidates' `engine`, and the first part of their `candidateKey` (`<name>:…`). */
  readonly name: C['engine'];
  /** What people call it (error messages, the playground): `transformers.js`, `web-llm`. */
  readonly title: string;
  /** It runs on this device (loaded in the engine worker, or in Node), rather than on a server. */
  readonly local: Local;
  /** The tasks it serves: a loader for any other refuses the candidate (see `ENGINE_LOADERS`). */
  readonly tasks: readonly ModelTask[];
  /** Whether a candidate runs on the GPU (WebGPU). */
  runsOnGPU(candidate: C): boolean;
  /** Whether a candidate computes in half precision on the GPU, which needs the adapter's `shader-f16` feature. */
  needsShaderF16(candidate: C): boolean;
  /** The adapter limits the engine itself needs of any adapter, before a candidate's own `requiredLimits`. */
  readonly limits: Readonly<Partial<AdapterLimits>>;
  /** What follows `<name>:` in the candidate's `candidateKey`: the model, and what tells its variants apart. */
  key(candidate: C): string;
  /**
   * What follows `<name>:` in the candidate's public name (`src/models/public-view.ts`): the model by what it is, not
   * where it lives. Undefined for an engine whose candidates are numbered by the view instead (a server's).
   */
  publicName(candidate: C): string | undefined;
  /** Text in messages that says where the candidate's model lives and that key holders must not read, if any. */
  locations(candidate: C): string[];
  /** How the playground lists a candidate (before its model): `transformers.js · cpu · fp32`, `web-llm`. */
  label(candidate: C): string;
  /** Whether a mirror of the Hugging Face hub applies to the candidate (`withHub`, and the candidate's `hub`). */
  usesHub(candidate: C): boolean;
  /** Whether Lantern downloads the candidate's files, rather than the app serving them (`isDownloadedModel`). */
  downloads(candidate: C): boolean;
  /**
   * Where the engine's code for the candidate (web-llm's model library) comes from, when the candidate says: part of
   * its `downloadKey`, so that two sources are stored apart.
   */
  codeSource(candidate: C): string | undefined;
  /**
   * Why this device cannot run the candidate (the engine's own device and memory rules: WebGPU and its adapter, the
   * memory that holds the weights), or undefined when it can. Asked before anything is downloaded.
   */
  whyNotRunnable(candidate: C, device: DeviceCapabilities): string | undefined;
  /**
   * Whether a failure of this kind leaves the realm it ran in unusable for later loads (transformers.js in a browser
   * creates every session on one promise chain, which stays rejected): the browser's engine then replaces its worker.
   */
  breaksRealm(failure: EngineErrorKind): boolean;
}

/** What follows a candidate's engine in its `candidateKey`: `<name>:<the descriptor's key>`. */
export const keyOf = <C extends CandidateBase>(engine: EngineDescriptor<C>, candidate: C): string =>
  `${candidate.engine}:${engine.key(candidate)}`;

/** Whether a model is named by its Hugging Face hub ID (`org/name`) rather than by a path or URL the app serves. */
export const isHubModel = (model: string) => /^[\w.-]+\/[\w.-]+$/.test(model);

/** The last part of a path or URL, without its query: a folder's name, not where the folder is. */
export function lastPart(path: string): string {
  const parts = path
    .replace(/[?#].*$/, '')
    .split(/[/\\]+/)
    .filter(Boolean);
  return parts.at(-1) ?? path;
}
