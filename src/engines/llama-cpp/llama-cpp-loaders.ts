import type { EngineLoaders } from '../model-loaders.ts';
import type { LlamaCppCandidate } from './llama-cpp-engine.ts';

/**
 * llama.cpp's loaders (`ENGINE_LOADERS` in `model-loaders.ts`): chat and embeddings. In Node the runtime is
 * node-llama-cpp (llama.cpp's own CPU build, shipped in its package), imported on first use. In a browser llama.cpp
 * will run on wllama, which is not built yet: the descriptor's `whyNotHere` passes its candidates over there.
 */
export const LLAMA_CPP_LOADERS: EngineLoaders<LlamaCppCandidate> = {
  async chat(candidate, context) {
    const { loadChatModel } = await runtime();
    return loadChatModel(candidate, context);
  },
  async embeddings(candidate, context) {
    const { loadEmbeddingModel } = await runtime();
    return loadEmbeddingModel(candidate, context);
  },
};

async function runtime() {
  if (typeof process === 'undefined' || process.versions?.node === undefined) {
    throw new Error('llama.cpp candidates run in Node only, so far (wllama in browsers is not built yet)');
  }
  return import('./node-llama-runtime.ts');
}
