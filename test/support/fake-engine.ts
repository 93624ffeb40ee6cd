import type {
  ChatOptions,
  ChatRequest,
  ChatResult,
  EmbedRequest,
  EmbedResult,
  Engine,
  ModelCard,
} from '../../src/engine/index.ts';

/**
 * An engine for unit tests of the layer above engines (src/api): it speaks the engine interface and lets a test
 * decide what a generation does. Product code and end-to-end tests use real engines.
 */
export class FakeEngine implements Engine {
  readonly cards: ModelCard[] = [
    { id: 'chat-model', task: 'chat', created: 1 },
    { id: 'embed-model', task: 'embeddings', created: 2 },
  ];
  /** Every chat call, with the signal it got. */
  readonly chats: { model: string; request: ChatRequest; signal: AbortSignal | undefined }[] = [];
  readonly embeds: { model: string; request: EmbedRequest }[] = [];

  /** What a chat call does; by default each choice says "hi there" in two tokens and stops. */
  onChat: (request: ChatRequest, options: ChatOptions) => Promise<ChatResult> = async (request, options) => {
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

  async models(): Promise<ModelCard[]> {
    return this.cards;
  }

  chat(model: string, request: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    this.chats.push({ model, request, signal: options.signal });
    return this.onChat(request, options);
  }

  embed(model: string, request: EmbedRequest): Promise<EmbedResult> {
    this.embeds.push({ model, request });
    return this.onEmbed(request);
  }
}

/** Resolves once `signal` aborts. */
export const aborted = (signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });
