import type { RunsOn } from '../../engine-interface/index.ts';
import { defaultCpuThreads } from '../cpu-threads.ts';
import { runningOn, type EngineLoaders, type LoadContext } from '../model-loaders.ts';
import { TransformersChatModel } from './chat-model.ts';
import { TransformersEmbeddingModel } from './embedding-model.ts';
import { TransformersSpeechModel } from './speech-model.ts';
import type { TransformersCandidate } from './transformers-engine.ts';

/** transformers.js' loaders (`ENGINE_LOADERS` in `loader-registry.ts`): its files are ready when they are called. */
export const TRANSFORMERS_LOADERS: EngineLoaders<TransformersCandidate> = {
  chat: async (candidate, context) =>
    runningOn(
      await TransformersChatModel.load(candidate.model, {
        ...transformersOptions(candidate, context),
        prefixCacheBytes: candidate.prefixCacheBytes,
        contextWindow: candidate.contextWindow,
        batch: candidate.batch,
        queue: context.queue,
        images: candidate.images,
        draft: candidate.draft,
      }),
      runsOn(candidate),
    ),
  embeddings: async (candidate, context) =>
    runningOn(
      await TransformersEmbeddingModel.load(candidate.model, {
        ...transformersOptions(candidate, context),
        maxInputTokens: candidate.maxInputTokens,
      }),
      runsOn(candidate),
    ),
  transcription: async (candidate, context) =>
    runningOn(
      await TransformersSpeechModel.load(candidate.model, {
        ...transformersOptions(candidate, context),
        queue: context.queue,
      }),
      runsOn(candidate),
    ),
  speech: async (candidate, context) => {
    if (!candidate.speech) throw new Error('a text-to-speech candidate lists its voices (`speech.voices`)');
    // Imported on first use: its phonemizer (phonemize's English rules and tables, 4 MB in a browser) loads with it.
    const { TransformersVoiceModel } = await import('./voice-model.ts');
    const model = await TransformersVoiceModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      speech: candidate.speech,
      hub: candidate.hub,
    });
    return runningOn(model, runsOn(candidate));
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

/**
 * Where onnxruntime runs the candidate: it creates a session on the device asked or fails, never silently elsewhere.
 * Node's threads are the session's (`intraOpNumThreads`); a browser's WebAssembly threads are onnxruntime-web's choice.
 */
function runsOn(candidate: TransformersCandidate): RunsOn {
  if (candidate.device === 'webgpu') return { device: 'webgpu' };
  return isNode() ? { device: 'cpu', threads: candidate.threads ?? defaultCpuThreads() } : { device: 'wasm' };
}

const isNode = () => typeof process !== 'undefined' && process.versions?.node !== undefined;
