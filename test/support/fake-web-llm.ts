import type { ChatCompletionChunk, ChatCompletionRequestStreaming, MLCEngineConfig } from '@mlc-ai/web-llm';
import type { CreateWebLLMEngine, WebLLMEngine } from '../../src/engines/web-llm/web-llm-chat-model.ts';

/** An error with one of web-llm's error class names, as its engine throws them. */
export function webLLMError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** Tokens of a text, for the fake: its words. */
export const fakeTokens = (text: unknown) => String(text).split(/\s+/).filter(Boolean).length;

/** What web-llm prefilled for a request: whether it kept its cache (multi-round chat) and how many tokens it added. */
export interface FakePrefill {
  reused: boolean;
  tokens: number;
}

/**
 * A stand-in for web-llm's MLCEngine, for unit tests of the adapter: the same `chat.completions.create` shape and the
 * behaviours that matter to it. Requests hold a per-model lock for as long as their stream is open (released when it
 * ends or is closed early), as web-llm's do; each token is one chunk; `finish_reason` comes with the last token, then a
 * usage chunk whose `completion_tokens` includes the end-of-reply token when the reply ended on its own. A reply of
 * `max_tokens` tokens or more ends with `length`. `interruptGenerate` reproduces web-llm#447: the generation after an
 * interrupt comes back empty.
 *
 * Its KV cache behaves as web-llm 0.2.x's (`preparePrefillInput`): it holds one conversation, and a request whose
 * messages before the last are exactly that conversation (system message, roles, texts, its own last reply) reuses it,
 * unless the last reply did not end on its own (`length`, or its stream closed early: web-llm's "abort"); a reused
 * request prefills, and counts in `usage.prompt_tokens`, only its last message.
 */
export class FakeWebLLM implements WebLLMEngine {
  readonly requests: ChatCompletionRequestStreaming[] = [];
  /** What the model "says" for a request (default: ten tokens that depend on the seed). */
  reply: (request: ChatCompletionRequestStreaming) => string[] = (request) =>
    Array.from({ length: 10 }, (_, i) => `t${i}${request.seed ?? ''} `);
  /** Throw this from the first step of the next generation (like a prefill failure). */
  failNext: Error | undefined;
  /** How many context tokens a prompt has; over `contextWindow`, web-llm refuses it. */
  contextWindow = 4096;
  readonly config: MLCEngineConfig | undefined;
  tokensGenerated = 0;
  /** What each request prefilled, in order. */
  readonly prefills: FakePrefill[] = [];
  #locked = false;
  #interrupted = false;
  /** The conversation in the KV cache (every message, the last reply included), and how its last reply ended. */
  #conversation: { role: string; content: string }[] = [];
  #finish: 'stop' | 'length' | 'abort' | undefined;

  constructor(config?: MLCEngineConfig) {
    this.config = config;
  }

  get locked(): boolean {
    return this.#locked;
  }

  interruptGenerate(): void {
    this.#interrupted = true;
  }

  async unload(): Promise<void> {}

  readonly chat = {
    completions: {
      create: async (request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>> => {
        this.requests.push(structuredClone(request));
        return this.#generate(request);
      },
    },
  };

  async *#generate(request: ChatCompletionRequestStreaming): AsyncGenerator<ChatCompletionChunk> {
    while (this.#locked) await new Promise((resolve) => setTimeout(resolve, 1));
    this.#locked = true;
    try {
      const failure = this.failNext;
      this.failNext = undefined;
      if (failure) throw failure;
      const history = request.messages.slice(0, -1).map((m) => ({ role: m.role, content: String(m.content) }));
      const reused =
        this.#finish === 'stop' &&
        history.some((m) => m.role !== 'system') &&
        JSON.stringify(history) === JSON.stringify(this.#conversation);
      // Until this reply ends on its own, the next request starts afresh (an error, an early close: "abort").
      this.#finish = 'abort';
      this.#conversation = [];
      const allTokens = request.messages.reduce((n, m) => n + fakeTokens(m.content), 0);
      const promptTokens = reused ? fakeTokens(request.messages.at(-1)!.content) : allTokens;
      this.prefills.push({ reused, tokens: promptTokens });
      if (allTokens > this.contextWindow) {
        throw webLLMError(
          'ContextWindowSizeExceededError',
          `Prompt tokens exceed context window size: number of prompt tokens: ${allTokens}; context window size: ${this.contextWindow}`,
        );
      }
      // web-llm#447: a generation that follows an interrupt produces nothing.
      const tokens = this.#interrupted ? [] : this.reply(request);
      this.#interrupted = false;
      const limit = request.max_tokens ?? Infinity;
      const emitted = tokens.slice(0, limit);
      const finish = tokens.length >= limit ? 'length' : 'stop';
      const conversation = [...history, request.messages.at(-1)!, { role: 'assistant', content: emitted.join('') }].map(
        (m) => ({ role: m.role, content: String(m.content) }),
      );
      for (let i = 0; i < emitted.length; i++) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        this.tokensGenerated += 1;
        const last = i === emitted.length - 1;
        yield this.#chunk([
          {
            index: 0,
            delta: { role: 'assistant', content: emitted[i]! },
            finish_reason: last ? finish : null,
            logprobs: null,
          },
        ]);
      }
      // Reached only if the stream was read to its end: closed early, the reply stays an "abort".
      this.#finish = finish;
      this.#conversation = conversation;
      // The end-of-reply token was sampled (and counted) too, when the reply ended on its own.
      const completionTokens = emitted.length + (finish === 'stop' ? 1 : 0);
      if (request.stream_options?.include_usage) {
        yield {
          ...this.#chunk([]),
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
          },
        } as ChatCompletionChunk;
      }
    } finally {
      this.#locked = false;
    }
  }

  #chunk(choices: ChatCompletionChunk['choices']): ChatCompletionChunk {
    return {
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 0,
      model: 'fake',
      choices,
    } as ChatCompletionChunk;
  }
}

/** A `create` for WebLLMChatModel.load that builds a FakeWebLLM, or fails as web-llm does on an unfit device. */
export function fakeCreate(options: { fail?: Error } = {}): CreateWebLLMEngine & { engines: FakeWebLLM[] } {
  const engines: FakeWebLLM[] = [];
  const create = async (_modelId: string, config: MLCEngineConfig) => {
    config.initProgressCallback?.({ progress: 0.5, timeElapsed: 0, text: 'Fetching param cache[1/2]' });
    if (options.fail) throw options.fail;
    config.initProgressCallback?.({ progress: 1, timeElapsed: 0, text: 'Finish loading on WebGPU' });
    const engine = new FakeWebLLM(config);
    engines.push(engine);
    return engine;
  };
  return Object.assign(create, { engines });
}
