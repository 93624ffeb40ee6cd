import type { ChatEvent, ChatRequest, ChatResult, EmbedResult, LoadProgress } from '../engine/index.ts';
import {
  isHubModel,
  ONNX_FILES,
  type LocalCandidate,
  type TransformersCandidate,
  type WebLLMCandidate,
} from './model-profile.ts';
import { ensureStorageFor } from './storage-check.ts';
import { TransformersChatModel } from './transformers/chat-model.ts';
import { TransformersEmbeddingModel } from './transformers/embedding-model.ts';

/** What a loaded model's run takes: the caller's abort, and (chat) a listener for each event as it happens. */
export interface RunOptions {
  /** Aborting stops the run (a generation within a token) and rejects it with an `aborted` EngineError. */
  signal?: AbortSignal | undefined;
  /** Called synchronously for every event, in order, as tokens are generated. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
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

export interface LoadContext {
  /** The public model ID that asked for the model (progress events are reported under it). */
  id: string;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
}

/** How candidates become loaded models; `createEngine` takes other loaders in tests. */
export interface ModelLoaders {
  chat(candidate: LocalCandidate, context: LoadContext): Promise<ChatModel>;
  embeddings(candidate: LocalCandidate, context: LoadContext): Promise<EmbeddingModel>;
}

/**
 * The real loaders: transformers.js for `transformers` candidates, web-llm (imported on first use) for `web-llm`
 * ones. Before a download from the Hugging Face hub, the storage quota is checked against the model's size.
 */
export const DEFAULT_LOADERS: ModelLoaders = {
  async chat(candidate, context) {
    if (candidate.engine === 'web-llm') return loadWebLLM(candidate, context);
    await ensureStorage(candidate);
    return TransformersChatModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      prefixCacheBytes: candidate.prefixCacheBytes,
      contextWindow: candidate.contextWindow,
    });
  },
  async embeddings(candidate, context) {
    if (candidate.engine === 'web-llm') {
      throw new Error('web-llm candidates are for chat: embeddings run on transformers.js.');
    }
    await ensureStorage(candidate);
    return TransformersEmbeddingModel.load(candidate.model, {
      ...transformersOptions(candidate, context),
      maxInputTokens: candidate.maxInputTokens,
    });
  },
};

async function loadWebLLM(candidate: WebLLMCandidate, context: LoadContext): Promise<ChatModel> {
  const [{ WebLLMChatModel }, webllm] = await Promise.all([
    import('./web-llm/web-llm-chat-model.ts'),
    import('@mlc-ai/web-llm'),
  ]);
  if (candidate.downloadBytes && !(await webllm.hasModelInCache(candidate.model))) {
    await ensureStorageFor(candidate.model, candidate.downloadBytes);
  }
  return WebLLMChatModel.load(candidate, context);
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

/** Where transformers.js stores what it downloads in a browser (its `env.cacheKey`). */
const TRANSFORMERS_CACHE = 'transformers-cache';

/** Checks the quota for a hub model that is not cached yet; models the app serves itself (paths, URLs) are exempt. */
async function ensureStorage(candidate: TransformersCandidate): Promise<void> {
  if (!isHubModel(candidate.model) || !candidate.downloadBytes || typeof caches === 'undefined') return;
  const weights = `https://huggingface.co/${candidate.model}/resolve/main/onnx/${ONNX_FILES[candidate.dtype ?? 'fp32']}`;
  if (await (await caches.open(TRANSFORMERS_CACHE)).match(weights)) return;
  await ensureStorageFor(`${candidate.model} (${candidate.dtype ?? 'fp32'})`, candidate.downloadBytes);
}
