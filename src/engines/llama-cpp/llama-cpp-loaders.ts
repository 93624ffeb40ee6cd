import { llamaGrammar } from '../../grammar/llama-grammar.ts';
import type { EngineLoaders } from '../model-loaders.ts';
import type { LlamaCppCandidate } from './llama-cpp-engine.ts';

/**
 * llama.cpp's loaders (`ENGINE_LOADERS` in `loader-registry.ts`): chat and embeddings, on the runtime of the realm,
 * imported on first use: node-llama-cpp (llama.cpp's own CPU build, shipped in its package) in Node, wllama (llama.cpp
 * in WebAssembly) in a browser's engine worker.
 */
export const LLAMA_CPP_LOADERS: EngineLoaders<LlamaCppCandidate> = {
  async chat(candidate, context) {
    const { loadChatModel } = await runtime();
    // The constraint as GBNF, for a runtime whose sampler constrains natively (node-llama-cpp's).
    return loadChatModel(candidate, context, {
      nativeGrammar: (constraint, syntax, thinking) => llamaGrammar(constraint, syntax, { thinking }),
    });
  },
  async embeddings(candidate, context) {
    const { loadEmbeddingModel } = await runtime();
    return loadEmbeddingModel(candidate, context);
  },
};

const runtime = () =>
  typeof process !== 'undefined' && process.versions?.node !== undefined
    ? import('./node-llama-runtime.ts')
    : import('./wllama-runtime.ts');
