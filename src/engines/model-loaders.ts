import type {
  ChatEvent,
  ChatRequest,
  ChatResult,
  EmbedResult,
  LoadProgress,
  ModelTask,
  TranscribeRequest,
  TranscribeResult,
  TranscriptEvent,
} from '../engine-interface/index.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import { prepareCandidate } from './model-downloads.ts';
import type { LocalCandidate } from '../models/model-profile.ts';
import type { TaskQueue } from './task-queue.ts';
import { ENGINES, engineOf, type CandidateOf, type LocalEngineName } from './engine-registry.ts';
import { LLAMA_CPP_LOADERS } from './llama-cpp/llama-cpp-loaders.ts';
import { TRANSFORMERS_LOADERS } from './transformers/transformers-loaders.ts';
import { WEB_LLM_LOADERS } from './web-llm/web-llm-loaders.ts';

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

/** A loaded text-to-speech model: it says one piece of text (a sentence, or part of a long one) at a time. */
export interface SynthesisModel {
  /** The rate of the samples it writes. */
  readonly sampleRate: number;
  /** Its own voices' names. */
  readonly voices: readonly string[];
  /** Its OpenAI voice names, each to one of its own. */
  readonly openaiVoices: Readonly<Record<string, string>>;
  /** The most tokens (phonemes) it reads in one pass: longer text is cut at a pause first (`splitForSpeech`). */
  readonly maxInputTokens: number;
  /** How many tokens the model reads for `text` (to cut text that is too long for one pass): a turn's work, as is saying it. */
  tokenCount(text: string, voice: string): number;
  /** Says `text` in `voice`: mono samples at `sampleRate`. One pass of the model (run it in the realm's queue). */
  synthesize(text: string, voice: string, speed: number): Promise<{ samples: Float32Array; inputTokens: number }>;
}

/** A loaded speech-to-text model. */
export interface TranscriptionModel {
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

/** The loaded model that serves each task (what the local engine's `SERVE` runs it with). */
export interface TaskModels {
  chat: ChatModel;
  embeddings: EmbeddingModel;
  transcription: TranscriptionModel;
  speech: SynthesisModel;
}

/** A loaded model of `task`. */
export type TaskModel<T extends ModelTask> = TaskModels[T];

/** How candidates become loaded models, per task; `createEngine` takes other loaders in tests. */
export type ModelLoaders = {
  [T in ModelTask]: (candidate: LocalCandidate, context: LoadContext) => Promise<TaskModel<T>>;
};

/** How one engine loads its candidates, for the tasks its descriptor lists (`src/engines/<name>/<name>-loaders.ts`). */
export type EngineLoaders<C> = {
  [T in ModelTask]?: (candidate: C, context: LoadContext) => Promise<TaskModel<T>>;
};

/**
 * Each local engine's loaders, one line per engine: what imports the engine's library and its model classes (web-llm
 * on first use). Only the engine worker and Node load them; the descriptors (`engine-registry.ts`) say the rest.
 */
const ENGINE_LOADERS: { readonly [N in LocalEngineName]: EngineLoaders<CandidateOf<N>> } = {
  transformers: TRANSFORMERS_LOADERS,
  'web-llm': WEB_LLM_LOADERS,
  'llama.cpp': LLAMA_CPP_LOADERS,
};

/** How each task is named where a candidate's engine does not serve it (`web-llm candidates are for chat: …`). */
const TASK_WORDS: Readonly<Record<ModelTask, string>> = {
  chat: 'chat runs',
  embeddings: 'embeddings run',
  transcription: 'speech to text runs',
  speech: 'text to speech runs',
};

/** The candidate's loader for a task, or why its engine cannot serve it (before anything is downloaded). */
function loaderFor<T extends ModelTask>(
  task: T,
  candidate: LocalCandidate,
): NonNullable<EngineLoaders<LocalCandidate>[T]> {
  const engine = engineOf(candidate);
  const load = (ENGINE_LOADERS[candidate.engine] as EngineLoaders<LocalCandidate>)[task];
  if (!engine.tasks.includes(task) || !load) {
    const others = Object.values(ENGINES).filter((e) => e.local && e.tasks.includes(task));
    throw new Error(
      `${engine.name} candidates are for ${engine.tasks.join(' and ')}: ${TASK_WORDS[task]} on ` +
        `${others.map((e) => e.title).join(' or ')}.`,
    );
  }
  return load;
}

/**
 * The real loaders: each candidate's engine's (`ENGINE_LOADERS`: transformers.js; web-llm, imported on first use). In
 * a browser, a downloaded model's files are first made ready in Lantern's store (`prepareCandidate`: the quota
 * checked, transfers resumed and verified), so the engine reads them from there. A task the candidate's engine does not
 * serve is refused before anything is downloaded.
 */
export const DEFAULT_LOADERS: ModelLoaders = {
  chat: defaultLoader('chat'),
  embeddings: defaultLoader('embeddings'),
  transcription: defaultLoader('transcription'),
  speech: defaultLoader('speech'),
};

/** A task's loader: the candidate's engine's, once its files are ready. */
function defaultLoader<T extends ModelTask>(
  task: T,
): (candidate: LocalCandidate, context: LoadContext) => Promise<TaskModel<T>> {
  return async (candidate, context) => {
    const load = loaderFor(task, candidate);
    await prepareCandidate(candidate, context);
    return load(candidate, context);
  };
}
