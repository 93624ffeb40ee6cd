import {
  modelNotFound,
  type CallOptions,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type ModelCard,
  type ModelTask,
  type TranscribeOptions,
  type TranscribeRequest,
  type TranscribeResult,
} from '../../src/engine-interface/index.ts';
import type { LocalChatOptions, LocalEngine, LocalTarget } from '../../src/engines/local-engine.ts';

/** What a fake chat gets: the engine interface's options, or a local engine's (which add `onBackend`). */
type FakeChatOptions = ChatOptions & LocalChatOptions;

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
  ];
  /** Every chat call, with the signal it got. */
  readonly chats: { model: string; request: ChatRequest; signal: AbortSignal | undefined }[] = [];
  readonly embeds: { model: string; request: EmbedRequest }[] = [];
  readonly transcriptions: { model: string; request: TranscribeRequest }[] = [];

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

  async models(): Promise<ModelCard[]> {
    return this.cards;
  }

  /**
   * A public ID (the engine interface: found among `cards` for its task, or a 404 before any work, as every engine
   * does, and its card told to `onServe`), or a local target (a local engine's).
   */
  async chat(model: string | LocalTarget, request: ChatRequest, options: FakeChatOptions = {}): Promise<ChatResult> {
    this.#serve(model, 'chat', options);
    this.chats.push({ model: idOf(model), request, signal: options.signal });
    return this.onChat(request, options);
  }

  async embed(model: string | LocalTarget, request: EmbedRequest, options: EmbedOptions = {}): Promise<EmbedResult> {
    this.#serve(model, 'embeddings', options);
    this.embeds.push({ model: idOf(model), request });
    return this.onEmbed(request);
  }

  async transcribe(
    model: string | LocalTarget,
    request: TranscribeRequest,
    options: TranscribeOptions = {},
  ): Promise<TranscribeResult> {
    this.#serve(model, 'transcription', options);
    this.transcriptions.push({ model: idOf(model), request });
    return this.onTranscribe(request, options);
  }

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
