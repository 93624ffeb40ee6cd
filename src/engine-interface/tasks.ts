import type {
  ChatEvent,
  ChatOptions,
  ChatRequest,
  ChatResult,
  EmbedOptions,
  EmbedRequest,
  EmbedResult,
  Engine,
  EngineRuns,
  SpeakOptions,
  SpeakRequest,
  SpeakResult,
  SpeechEvent,
  TranscribeOptions,
  TranscribeRequest,
  TranscribeResult,
  TranscriptEvent,
} from './types.ts';

/**
 * Every task a model does, declared once: its request, the options a caller gives (`CallOptions` and its listeners),
 * the events a run reports as it goes (`never`: none) and its result. Every layer carries a task by one generic `run`
 * (the router, the local engine, the engine worker's protocol and its client, a remote model), and keeps what differs
 * between tasks in one table keyed by task, so that a new task is an entry here and an entry in each table where it
 * differs (TypeScript refuses the build until every table has one): its route in the router, its serving in the local
 * engine (`SERVE`), its loaders (`ModelLoaders`), its remote translation (`REMOTE_TASKS`), its run report and transfers
 * in the worker (`WORKER_TASKS`), and its resend rule in the worker's client (`PORT_TASKS`).
 */
export interface TaskTypes {
  /** Chat, and the text routes built on it (completions, responses). */
  chat: { request: ChatRequest; options: ChatOptions; event: ChatEvent; result: ChatResult };
  embeddings: { request: EmbedRequest; options: EmbedOptions; event: never; result: EmbedResult };
  /** Speech to text (`/v1/audio/transcriptions` and `/translations`). */
  transcription: {
    request: TranscribeRequest;
    options: TranscribeOptions;
    event: TranscriptEvent;
    result: TranscribeResult;
  };
  /** Text to speech (`/v1/audio/speech`): encoded audio, sentence by sentence. */
  speech: { request: SpeakRequest; options: SpeakOptions; event: SpeechEvent; result: SpeakResult };
}

/**
 * What a model does: chat (and the text routes built on it), embeddings, speech to text
 * (`/v1/audio/transcriptions` and `/translations`) or text to speech (`/v1/audio/speech`). One of `TaskTypes`' keys.
 */
export type ModelTask = keyof TaskTypes;

export type TaskRequest<T extends ModelTask> = TaskTypes[T]['request'];
export type TaskOptions<T extends ModelTask> = TaskTypes[T]['options'];
/** What a run of the task reports as it goes (`never` for a task that reports nothing before its result). */
export type TaskEvent<T extends ModelTask> = TaskTypes[T]['event'];
export type TaskResult<T extends ModelTask> = TaskTypes[T]['result'];

/**
 * The engine interface's per-task methods (`engine.chat(...)`, what the routes call), each `run` of its task: an
 * engine implements `models()` and `run`, and this gives it the rest.
 *
 * @example
 * return withTaskMethods({ models: async () => cards, run: (task, model, request, options) => … });
 */
export function withTaskMethods(engine: EngineRuns): Engine {
  return {
    models: () => engine.models(),
    run: (task, model, request, options) => engine.run(task, model, request, options),
    chat: (model, request, options) => engine.run('chat', model, request, options),
    embed: (model, request, options) => engine.run('embeddings', model, request, options),
    transcribe: (model, request, options) => engine.run('transcription', model, request, options),
    speak: (model, request, options) => engine.run('speech', model, request, options),
  };
}
