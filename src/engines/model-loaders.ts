import type {
  ChatEvent,
  ChatRequest,
  ChatResult,
  EmbedResult,
  LoadProgress,
  ModelTask,
  RunsOn,
  TranscribeRequest,
  TranscribeResult,
  TranscriptEvent,
} from '../engine-interface/index.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import type { TaskQueue } from './task-queue.ts';

/*
 * What a loaded model is, whichever engine loads it: what each engine's loaders (`src/engines/<name>/<name>-loaders.ts`)
 * return, and what they are given. A leaf of the engine contract, with `engine-descriptor.ts`: it imports no engine and
 * no registry, so every engine can import it without a circle (the registry of loaders is `loader-registry.ts`).
 */

/** What a loaded model's run takes: the caller's abort, and (chat) a listener for each event as it happens. */
export interface RunOptions {
  /** Aborting stops the run (a generation within a token) and rejects it with an `aborted` EngineError. */
  signal?: AbortSignal | undefined;
  /** Called synchronously for every event, in order, as tokens are generated. */
  onEvent?: ((event: ChatEvent) => void) | undefined;
  /** How this realm fetches and decodes a request's images (`LocalEngineOptions.imageAccess`). */
  imageAccess?: ImageAccess | undefined;
}

/**
 * What every loaded model may say of itself: where it computes, as its runtime found it once loaded (llama.cpp's GPU
 * backend, or the CPU where it found none), for the loaded-model reports (`ready` progress, `/v1/models`,
 * `lantern.models()`). Set by the engine's loader (`runningOn`).
 */
export interface Loaded {
  readonly runsOn?: RunsOn;
}

/** `model`, saying where it runs: what a loader returns once its runtime has told it. */
export function runningOn<M extends object>(model: M, runsOn: RunsOn): M & { readonly runsOn: RunsOn } {
  return Object.assign(model, { runsOn });
}

/** A loaded chat model, whichever engine runs it. */
export interface ChatModel extends Loaded {
  /** The context window in tokens, where known before tokenizing: a prompt that cannot fit it is refused unread. */
  readonly contextLength?: number;
  generate(request: ChatRequest, options?: RunOptions): Promise<ChatResult>;
}

/** A loaded embedding model. */
export interface EmbeddingModel extends Loaded {
  /** The longest input in tokens, where known before tokenizing: an input that cannot fit it is refused unread. */
  readonly maxInputTokens?: number;
  embed(input: string[], options?: Omit<RunOptions, 'onEvent'>): Promise<EmbedResult>;
}

/** A loaded text-to-speech model: it says one piece of text (a sentence, or part of a long one) at a time. */
export interface SynthesisModel extends Loaded {
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
export interface TranscriptionModel extends Loaded {
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

/** How one engine loads its candidates, for the tasks its descriptor lists (`src/engines/<name>/<name>-loaders.ts`). */
export type EngineLoaders<C> = {
  [T in ModelTask]?: (candidate: C, context: LoadContext) => Promise<TaskModel<T>>;
};

/** Where a browser's engine worker runs its models: on WebGPU (an adapter exists, and was not declined), or WebAssembly. */
export type RealmDevice = 'webgpu' | 'wasm';

/**
 * What an engine sets up once in a browser's engine worker for its loads (`BROWSER_REALMS` in `browser-realms.ts`):
 * its runtime, such as onnxruntime-web's binary for transformers.js. Started as the worker starts, rather than by the
 * first load, so that a page that is ready can go offline before it runs a model (issue 42). Browser-only code: the
 * engine's loaders, which Node runs too, never import it.
 */
export interface RealmSetUp {
  /** Starts the set-up for the worker's device; `base` is the worker's own URL, which the app's files are relative to. */
  start(device: RealmDevice, base: string): RealmRuntime;
}

/** An engine's runtime in a browser's engine worker, as its realm set-up started it. */
export interface RealmRuntime {
  /**
   * Resolves once the engine's candidates may load; rejects (an EngineError that says what to do) where the runtime
   * cannot be had yet, and the next call tries again. Loads of other engines never wait for it, nor fail with it.
   */
  ready(): Promise<void>;
  /** Resolves once the runtime is loaded: true when it is kept for offline starts, otherwise why it is not. */
  readonly kept: Promise<true | string>;
  /** Called once a model of the engine has loaded: what only a load needed may be let go. */
  loaded(): void;
}
