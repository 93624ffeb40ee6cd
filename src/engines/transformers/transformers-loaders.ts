import type { EngineLoaders, LoadContext } from '../model-loaders.ts';
import { TransformersChatModel } from './chat-model.ts';
import { TransformersEmbeddingModel } from './embedding-model.ts';
import { TransformersSpeechModel } from './speech-model.ts';
import type { TransformersCandidate } from './transformers-engine.ts';

/** transformers.js' loaders (`ENGINE_LOADERS` in `loader-registry.ts`): its files are ready when they are called. */
export const TRANSFORMERS_LOADERS: EngineLoaders<TransformersCandidate> = {
  chat: (candidate, context) =>
    TransformersChatModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      prefixCacheBytes: candidate.prefixCacheBytes,
      contextWindow: candidate.contextWindow,
      batch: candidate.batch,
      queue: context.queue,
      images: candidate.images,
      draft: candidate.draft,
    }),
  embeddings: (candidate, context) =>
    TransformersEmbeddingModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      maxInputTokens: candidate.maxInputTokens,
    }),
  transcription: (candidate, context) =>
    TransformersSpeechModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      queue: context.queue,
    }),
  speech: async (candidate, context) => {
    if (!candidate.speech) throw new Error('a text-to-speech candidate lists its voices (`speech.voices`)');
    // Imported on first use: its phonemizer (phonemize's English rules and tables, 4 MB in a browser) loads with it.
    const { TransformersVoiceModel } = await import('./voice-model.ts');
    return TransformersVoiceModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      speech: candidate.speech,
      hub: candidate.hub,
    });
  },
};

function transformersOptions(candidate: TransformersCandidate, context: LoadContext) {
  return {
    id: context.id,
    onProgress: context.onProgress,
    // transformers.js calls the CPU `wasm` in browsers and `cpu` in Node.
    device: candidate.device === 'webgpu' ? ('webgpu' as const) : isNode() ? ('cpu' as const) : ('wasm' as const),
    ...(candidate.dtype && { dtype: candidate.dtype }),
    threads: candidate.threads,
  };
}

const isNode = () => typeof process !== 'undefined' && process.versions?.node !== undefined;
