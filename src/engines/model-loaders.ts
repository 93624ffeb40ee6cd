import type {
  ChatEvent,
  ChatRequest,
  ChatResult,
  EmbedResult,
  LoadProgress,
  TranscribeRequest,
  TranscribeResult,
  TranscriptEvent,
} from '../engine-interface/index.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import { prepareCandidate } from './model-downloads.ts';
import { type LocalCandidate, type TransformersCandidate, type WebLLMCandidate } from '../models/model-profile.ts';
import type { TaskQueue } from './task-queue.ts';
import { TransformersChatModel } from './transformers/chat-model.ts';
import { TransformersEmbeddingModel } from './transformers/embedding-model.ts';
import { TransformersSpeechModel } from './transformers/speech-model.ts';

/** What a loaded model's run takes: the caller's abort, and (chat) a listener for each event as it happens. */
export interface RunOptions {
  /** Aborting stops the run (a generation within a token) and rejects it with an `aborted` EngineError. */
  signal?: AbortSignal | undefined;
  /** Called synchronously for every event, in order, as tokens are generated. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
  /** How this realm fetches and decodes a request's images (`LocalEngineOptions.imageAccess`). */
  imageAccess?: ImageAccess | undefined;
}

/** A loaded chat model, whichever engine runs it. */
export interface ChatModel {
  /** The context window in tokens, where known before tokenizing: a prompt that cannot fit it is refused unread. */
  readonly contextLength?: number;
  generate(request: ChatRequest, options?: RunOptions): Promise<ChatResult>;
}

/** A loaded embedding model. */
export interface EmbeddingModel {
  /** The longest input in tokens, where known before tokenizing: an input that cannot fit it is refused unread. */
  readonly maxInputTokens?: number;
  embed(input: string[], options?: Omit<RunOptions, 'onEvent'>): Promise<EmbedResult>;
}

/** A loaded speech-to-text model. */
export interface SpeechModel {
  /** The rate its audio is decoded and resampled to. */
  readonly sampleRate: number;
  /** Refuses, naming the parameter, what the model cannot do (a language it does not know, translation, words). */
  check(request: Omit<TranscribeRequest, 'audio'>): void;
  /** Takes its turns in the realm's queue itself, a window of audio at a time. */
  transcribe(
    samples: Float32Array,
    request: Omit<TranscribeRequest, 'audio'>,
    options?: { signal?: AbortSignal | undefined; onEvent?: ((event: TranscriptEvent) => void) | undefined },
  ): Promise<TranscribeResult>;
}

export interface LoadContext {
  /** The public model ID that asked for the model (progress events are reported under it). */
  id: string;
  /**
   * The realm's queue: every model run in one realm goes through it, one at a time (see TaskQueue). A transformers.js
   * chat model runs each forward pass of its batch there; other models run each request there whole.
   */
  queue: TaskQueue;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
}

/** How candidates become loaded models; `createEngine` takes other loaders in tests. */
export interface ModelLoaders {
  chat(candidate: LocalCandidate, context: LoadContext): Promise<ChatModel>;
  embeddings(candidate: LocalCandidate, context: LoadContext): Promise<EmbeddingModel>;
  transcription(candidate: LocalCandidate, context: LoadContext): Promise<SpeechModel>;
}

/**
 * The real loaders: transformers.js for `transformers` candidates, web-llm (imported on first use) for `web-llm`
 * ones. In a browser, a downloaded model's files are first made ready in Lantern's store (`prepareCandidate`: the
 * quota checked, transfers resumed and verified), so the engine reads them from there.
 */
export const DEFAULT_LOADERS: ModelLoaders = {
  async chat(candidate, context) {
    await prepareCandidate(candidate, context);
    if (candidate.engine === 'web-llm') return loadWebLLM(candidate, context);
    return TransformersChatModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      prefixCacheBytes: candidate.prefixCacheBytes,
      contextWindow: candidate.contextWindow,
      batch: candidate.batch,
      queue: context.queue,
      images: candidate.images,
    });
  },
  async embeddings(candidate, context) {
    if (candidate.engine === 'web-llm') {
      throw new Error('web-llm candidates are for chat: embeddings run on transformers.js.');
    }
    await prepareCandidate(candidate, context);
    return TransformersEmbeddingModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      maxInputTokens: candidate.maxInputTokens,
    });
  },

  async transcription(candidate, context) {
    if (candidate.engine === 'web-llm') {
      throw new Error('web-llm candidates are for chat: speech to text runs on transformers.js.');
    }
    await prepareCandidate(candidate, context);
    return TransformersSpeechModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      queue: context.queue,
    });
  },
};

async function loadWebLLM(candidate: WebLLMCandidate, context: LoadContext): Promise<ChatModel> {
  const { WebLLMChatModel } = await import('./web-llm/web-llm-chat-model.ts');
  const model = await WebLLMChatModel.load(candidate, context);
  // web-llm decodes one request at a time (its own lock): each runs whole in the realm's queue.
  return {
    generate: (request, options) => context.queue.run(() => model.generate(request, options), options?.signal),
  };
}

function transformersOptions(candidate: TransformersCandidate, context: LoadContext) {
  return {
    id: context.id,
    onProgress: context.onProgress,
    // transformers.js calls the CPU `wasm` in browsers and `cpu` in Node.
    device: candidate.device === 'webgpu' ? ('webgpu' as const) : isNode() ? ('cpu' as const) : ('wasm' as const),
    ...(candidate.dtype && { dtype: candidate.dtype }),
  };
}

const isNode = () => typeof process !== 'undefined' && process.versions?.node !== undefined;
