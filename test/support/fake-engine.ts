import {
  modelNotFound,
  withTaskMethods,
  type CallOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type ModelCard,
  type ModelTask,
  type SpeakOptions,
  type SpeakRequest,
  type SpeakResult,
  type TaskOptions,
  type TaskRequest,
  type TaskResult,
  type TranscribeOptions,
  type TranscribeRequest,
  type TranscribeResult,
} from '../../src/engine-interface/index.ts';
import type { LocalEngine, LocalRunOptions, LocalTarget } from '../../src/engines/local-engine.ts';

/** What a fake call gets: the engine interface's options, or a local engine's (which add `onBackend`). */
type FakeOptions<T extends ModelTask> = TaskOptions<T> & LocalRunOptions<T>;
type FakeChatOptions = FakeOptions<'chat'>;

/** How the fake runs one task: noted among its calls, then answered by the test's hook. */
type FakeTask<T extends ModelTask> = (
  model: string,
  request: TaskRequest<T>,
  options: FakeOptions<T>,
) => Promise<TaskResult<T>>;

/**
 * An engine for unit tests of the layers above engines: it speaks the engine interface (src/api's) and the local
 * engine's (the router's, the engine worker's), and lets a test decide what a generation does. Product code and
 * end-to-end tests use real engines.
 */
export class FakeEngine implements Engine, LocalEngine {
  readonly cards: ModelCard[] = [
    { id: 'chat-model', task: 'chat', created: 1 },
    { id: 'embed-model', task: 'embeddings', created: 2 },
    { id: 'speech-model', task: 'transcription', created: 3 },
    { id: 'voice-model', task: 'speech', created: 4 },
  ];
  /** Every chat call, with the signal it got. */
  readonly chats: { model: string; request: ChatRequest; signal: AbortSignal | undefined }[] = [];
  readonly embeds: { model: string; request: EmbedRequest }[] = [];
  readonly transcriptions: { model: string; request: TranscribeRequest }[] = [];
  readonly speeches: { model: string; request: SpeakRequest }[] = [];

  /** What a chat call does; by default each choice says "hi there" in two tokens and stops. */
  onChat: (request: ChatRequest, options: FakeChatOptions) => Promise<ChatResult> = async (request, options) => {
    for (let choice = 0; choice < request.n; choice++) {
      options.onEvent?.({ type: 'delta', choice, text: 'hi' });
      options.onEvent?.({ type: 'delta', choice, text: ' there' });
      options.onEvent?.({ type: 'finish', choice, reason: 'stop' });
    }
    return {
      choices: Array.from({ length: request.n }, () => ({ text: 'hi there', finishReason: 'stop' as const })),
      usage: { promptTokens: 3, completionTokens: 2 * request.n },
    };
  };

  onEmbed: (request: EmbedRequest) => Promise<EmbedResult> = async (request) => ({
    embeddings: request.input.map((text, i) => Float32Array.from([i, text.length, 0.1])),
    usage: { promptTokens: request.input.length * 2 },
  });

  /** What a transcription does; by default two segments, "Hello there." and " General Kenobi.", over 3.5 s. */
  onTranscribe: (request: TranscribeRequest, options: TranscribeOptions) => Promise<TranscribeResult> = async (
    request,
    options,
  ) => {
    const segment = { tokens: [1, 2], avgLogprob: -0.1, compressionRatio: 1, noSpeechProb: 0.01, temperature: 0 };
    const segments = [
      { ...segment, start: 0, end: 1.5, text: 'Hello there.', windowStart: 0 },
      { ...segment, start: 1.5, end: 3.5, text: ' General Kenobi.', windowStart: 0 },
    ];
    options.onEvent?.({ type: 'delta', text: 'Hello there.' });
    options.onEvent?.({ type: 'delta', text: ' General Kenobi.' });
    return {
      text: 'Hello there. General Kenobi.',
      language: request.language ?? 'en',
      duration: 3.5,
      segments,
      ...(request.words && {
        words: ['Hello', 'there', 'General', 'Kenobi'].map((word, i) => ({ word, start: i, end: i + 0.8 })),
      }),
      usage: { outputTokens: 4 },
    };
  };

  /** What a speech call does; by default the input's characters as bytes, in two chunks, said in 1 s. */
  onSpeak: (request: SpeakRequest, options: SpeakOptions) => Promise<SpeakResult> = async (request, options) => {
    const bytes = new TextEncoder().encode(request.input);
    const half = Math.ceil(bytes.length / 2);
    options.onEvent?.({ type: 'audio', bytes: bytes.slice(0, half) });
    options.onEvent?.({ type: 'progress', characters: request.input.length, total: request.input.length });
    options.onEvent?.({ type: 'audio', bytes: bytes.slice(half) });
    return { seconds: 1, sampleRate: 24_000, usage: { inputTokens: bytes.length, outputTokens: 40 } };
  };

  async models(): Promise<ModelCard[]> {
    return this.cards;
  }

  /** The engine interface's method per task, each `run` of its task. */
  readonly chat: Engine['chat'];
  readonly embed: Engine['embed'];
  readonly transcribe: Engine['transcribe'];
  readonly speak: Engine['speak'];

  constructor() {
    ({ chat: this.chat, embed: this.embed, transcribe: this.transcribe, speak: this.speak } = withTaskMethods(this));
  }

  /**
   * A public ID (the engine interface: found among `cards` for its task, or a 404 before any work, as every engine
   * does, and its card told to `onServe`), or a local target (a local engine's).
   */
  async run<T extends ModelTask>(
    task: T,
    model: string | LocalTarget,
    request: TaskRequest<T>,
    options: FakeOptions<T> = {},
  ): Promise<TaskResult<T>> {
    this.#serve(model, task, options);
    const run: FakeTask<T> = this.#tasks[task];
    return run(idOf(model), request, options);
  }

  /** Each task's calls and hook. */
  readonly #tasks: { [T in ModelTask]: FakeTask<T> } = {
    chat: (model, request, options) => {
      this.chats.push({ model, request, signal: options.signal });
      return this.onChat(request, options);
    },
    embeddings: (model, request) => {
      this.embeds.push({ model, request });
      return this.onEmbed(request);
    },
    transcription: (model, request, options) => {
      this.transcriptions.push({ model, request });
      return this.onTranscribe(request, options);
    },
    speech: (model, request, options) => {
      this.speeches.push({ model, request });
      return this.onSpeak(request, options);
    },
  };

  #serve(model: string | LocalTarget, task: ModelTask, options: CallOptions): void {
    if (typeof model !== 'string') return;
    const card = this.cards.find((c) => c.id === model && c.task === task);
    if (!card) throw modelNotFound(model);
    options.onServe?.({ model: card, backend: `fake:${model}` });
  }
}

const idOf = (model: string | LocalTarget) => (typeof model === 'string' ? model : model.id);

/** Resolves once `signal` aborts. */
export const aborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
