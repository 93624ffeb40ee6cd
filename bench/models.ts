import { bundledProfile, type ModelProfile } from '../src/models/model-profile.ts';

/** The models the benchmarks run: the bundled chat and embeddings models, and stories260K when this machine has it. */
export const CHAT = 'crimson-falcon-4';
export const EMBED = 'jade-mole-4';
export const STORIES = 'stories-260k';
/** The realistic model (bench/realistic-model.ts), when it could be built. */
export const REALISTIC = 'bench-llama';

/**
 * The bundled profile at `base`, with stories260K beside it as `stories-260k` when `stories` (its folder in Node, its
 * URL in a browser) is given, and the realistic model as `bench-llama` when `realistic` is, on the bundled chat model's
 * transformers.js candidates: WebGPU where there is one, else CPU. Not its llama.cpp one, which names tiny-chat's own
 * GGUF file (bench/engines.ts measures llama.cpp, on each model's GGUF).
 */
export function benchProfile(base: string, stories?: string | null, realistic?: string | null): ModelProfile {
  const bundled = bundledProfile(base);
  const at = (model: string) => ({
    task: 'chat' as const,
    created: 0,
    // The chat model's own transformers.js candidates (not the vision model's, which serves its requests with images).
    candidates: bundled[CHAT]!.candidates.filter((c) => c.engine === 'transformers' && !c.images).map((candidate) => ({
      ...candidate,
      model,
    })),
  });
  return {
    ...bundled,
    ...(stories && { [STORIES]: at(stories) }),
    ...(realistic && { [REALISTIC]: at(realistic) }),
  };
}
