import type { GenerationOptions } from '../../generation/token-generation.ts';
import { llamaGrammar } from '../../grammar/llama-grammar.ts';
import { runningOn, type ChatModel, type EngineLoaders } from '../model-loaders.ts';
import type { LlamaCppCandidate } from './llama-cpp-engine.ts';
import { browserFeatures, llamaDeviceOf, type BrowserFeatures, type LlamaDevice } from './wllama-device.ts';

/**
 * llama.cpp's loaders (`ENGINE_LOADERS` in `loader-registry.ts`): chat and embeddings, on the runtime of the realm,
 * imported on first use: node-llama-cpp (llama.cpp's own CPU build, shipped in its package) in Node; in a browser's
 * engine worker, wllama 3 for chat where it runs on WebGPU or the candidate asks for it (`runtime`), wllama 2 (llama.cpp
 * in WebAssembly, every token decided by the generation core) otherwise.
 */
export const LLAMA_CPP_LOADERS: EngineLoaders<LlamaCppCandidate> = {
  async chat(candidate, context) {
    // The constraint as GBNF, for a runtime whose sampler constrains natively (node-llama-cpp's, wllama 3's).
    const nativeGrammar: NativeGrammar = (constraint, syntax, thinking) =>
      llamaGrammar(constraint, syntax, { thinking });
    if (!inNode()) {
      const device = chatRuntimeOf(candidate, await browserFeatures());
      if (device.runtime === 'wllama3') return loadWllama3Chat(candidate, device, nativeGrammar);
    }
    const { loadChatModel } = await runtime();
    return loadChatModel(candidate, context, { nativeGrammar });
  },
  async embeddings(candidate, context) {
    const { loadEmbeddingModel } = await runtime();
    return loadEmbeddingModel(candidate, context);
  },
};

/**
 * Where a browser runs a llama.cpp chat candidate: as its `runtime` asks, else wllama 3 on WebGPU where llama.cpp's
 * WebGPU backend runs and wllama 2 on the CPU everywhere else (llamaDeviceOf). wllama 3 asked for runs on WebGPU where
 * the adapter allows, on its CPU build otherwise; a browser without what wllama 3 needs cannot load it.
 */
export function chatRuntimeOf(candidate: Pick<LlamaCppCandidate, 'runtime'>, features: BrowserFeatures): LlamaDevice {
  const automatic = llamaDeviceOf(features);
  if (candidate.runtime === undefined) return automatic;
  if (candidate.runtime === 'wllama2')
    return { runtime: 'wllama2', device: 'wasm', reason: 'the candidate asks for wllama 2' };
  if (!features.jspi || !features.memory64) throw new Error(`wllama 3 cannot run here: ${automatic.reason}`);
  return automatic.runtime === 'wllama3' ? automatic : { runtime: 'wllama3', device: 'wasm', reason: automatic.reason };
}

async function loadWllama3Chat(
  candidate: LlamaCppCandidate,
  device: LlamaDevice,
  nativeGrammar: NativeGrammar,
): Promise<ChatModel> {
  const [{ loadWllama3 }, { Wllama3ChatModel }] = await Promise.all([
    import('./wllama3-runtime.ts'),
    import('./wllama3-chat-model.ts'),
  ]);
  const model = await loadWllama3(candidate, device);
  return runningOn(new Wllama3ChatModel(model, nativeGrammar), model.runsOn);
}

type NativeGrammar = NonNullable<GenerationOptions['nativeGrammar']>;

const inNode = () => typeof process !== 'undefined' && process.versions?.node !== undefined;

const runtime = () => (inNode() ? import('./node-llama-runtime.ts') : import('./wllama-runtime.ts'));
