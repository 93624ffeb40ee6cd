import type { ChatCompletionChunk, ChatCompletionRequestStreaming, MLCEngineConfig } from '@mlc-ai/web-llm';
import type { CreateWebLLMEngine, WebLLMEngine } from '../../src/engines/web-llm/web-llm-chat-model.ts';

/** An error with one of web-llm's error class names, as its engine throws them. */
export function webLLMError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/**
 * A stand-in for web-llm's MLCEngine, for unit tests of the adapter: the same `chat.completions.create` shape and the
 * behaviours that matter to it. Requests hold a per-model lock for as long as their stream is open (released when it
 * ends or is closed early), as web-llm's do; each token is one chunk; `finish_reason` comes with the last token, then a
 * usage chunk. `interruptGenerate` reproduces web-llm#447: the generation after an interrupt comes back empty.
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
  #locked = false;
  #interrupted = false;

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
      const promptTokens = request.messages.reduce((n, m) => n + String(m.content).split(/\s+/).length, 0);
      if (promptTokens > this.contextWindow) {
        throw webLLMError(
          'ContextWindowSizeExceededError',
          `Prompt tokens exceed context window size: number of prompt tokens: ${promptTokens}; context window size: ${this.contextWindow}`,
        );
      }
      // web-llm#447: a generation that follows an interrupt produces nothing.
      const tokens = this.#interrupted ? [] : this.reply(request);
      this.#interrupted = false;
      const limit = request.max_tokens ?? Infinity;
      const emitted = tokens.slice(0, limit);
      for (let i = 0; i < emitted.length; i++) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        this.tokensGenerated += 1;
        const last = i === emitted.length - 1;
        yield this.#chunk([
          {
            index: 0,
            delta: { role: 'assistant', content: emitted[i]! },
            finish_reason: last ? (tokens.length > limit ? 'length' : 'stop') : null,
            logprobs: null,
          },
        ]);
      }
      if (request.stream_options?.include_usage) {
        yield {
          ...this.#chunk([]),
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: emitted.length,
            total_tokens: promptTokens + emitted.length,
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
