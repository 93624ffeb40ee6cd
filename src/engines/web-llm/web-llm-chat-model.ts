import type {
  ChatCompletionChunk,
  ChatCompletionRequestStreaming,
  InitProgressReport,
  MLCEngineConfig,
} from '@mlc-ai/web-llm';
import {
  EngineError,
  throwIfAborted,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EngineErrorKind,
  type FinishReason,
  type LoadProgress,
} from '../../engine/index.ts';
import { StopSequenceMatcher } from '../generation/stop-sequences.ts';
import type { WebLLMCandidate } from '../model-profile.ts';
import { HeldConversation } from './held-conversation.ts';

/** The part of web-llm's MLCEngine that this adapter uses; tests stand a fake with the same shape in its place. */
export interface WebLLMEngine {
  chat: {
    completions: {
      create(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
    };
  };
  unload(): Promise<void>;
}

export type CreateWebLLMEngine = (modelId: string, config: MLCEngineConfig) => Promise<WebLLMEngine>;

/** web-llm, loaded only when a web-llm model is chosen: it is large, and useless without WebGPU. */
const createMLCEngine: CreateWebLLMEngine = async (modelId, config) =>
  (await import('@mlc-ai/web-llm')).CreateMLCEngine(modelId, config);

/**
 * web-llm's errors cross its worker boundary as strings and its classes may come from another bundle, so they are
 * told apart by name. Anything not listed is an internal error.
 */
const ERROR_KINDS: Readonly<Record<string, EngineErrorKind>> = {
  ContextWindowSizeExceededError: 'context_length_exceeded',
  SystemMessageOrderError: 'invalid_request',
  MessageOrderError: 'invalid_request',
  UnsupportedRoleError: 'invalid_request',
  ContentTypeError: 'invalid_request',
  // Loading: the chain moves on to its next candidate.
  WebGPUNotAvailableError: 'load_failed',
  WebGPUNotFoundError: 'load_failed',
  FeatureSupportError: 'load_failed',
  ShaderF16SupportError: 'load_failed',
  ModelNotFoundError: 'load_failed',
  MissingModelWasmError: 'load_failed',
  IntegrityError: 'load_failed',
  // A lost device leaves the engine unusable: an internal error, after which the host replaces the worker.
  DeviceLostError: 'internal',
};

/** Any web-llm failure as a typed EngineError. */
export function toEngineError(error: unknown, fallback: EngineErrorKind = 'internal'): EngineError {
  if (error instanceof EngineError) return error;
  const name = error instanceof Error ? error.name : '';
  const kind = ERROR_KINDS[name] ?? fallback;
  const message = error instanceof Error ? error.message : String(error);
  return new EngineError(kind, message, {
    cause: error,
    ...(kind === 'context_length_exceeded' && { param: 'messages' }),
  });
}

export interface WebLLMLoadOptions {
  /** The public model ID the progress events are reported under. */
  id: string;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
  /** Creates the engine (default: web-llm's `CreateMLCEngine`). */
  create?: CreateWebLLMEngine;
}

/**
 * A chat model on web-llm (WebGPU), behind the engine interface. Every choice is one streamed web-llm request (web-llm
 * refuses `n > 1` when streaming): the first token of each arrives as it is generated. Stop sequences are matched here
 * rather than by web-llm, so a stop sequence split across tokens never leaks into the output. A request ends by
 * closing web-llm's stream, which releases its per-model lock at once; `interruptGenerate` is never called, because
 * its flag is shared by all requests and has left later generations empty (web-llm#447).
 *
 * Prefix reuse is web-llm's own: it keeps the KV cache of its last conversation when the next request extends it (see
 * HeldConversation). Messages go to it as the client sent them and replies come back as web-llm wrote them, so a
 * client that sends the history back gets that reuse turn after turn. With `n > 1`, choice 0 runs last, so the
 * conversation web-llm holds afterwards is the one a client most likely continues.
 */
export class WebLLMChatModel {
  readonly #engine: WebLLMEngine;
  readonly #held = new HeldConversation();

  private constructor(engine: WebLLMEngine) {
    this.#engine = engine;
  }

  static async load(candidate: WebLLMCandidate, options: WebLLMLoadOptions): Promise<WebLLMChatModel> {
    const { id, onProgress } = options;
    const total = candidate.downloadBytes ?? 0;
    const config: MLCEngineConfig = {
      initProgressCallback: (report: InitProgressReport) =>
        onProgress?.({
          status: 'progress_total',
          model: id,
          progress: report.progress * 100,
          loaded: Math.round(report.progress * total),
          total,
        }),
    };
    try {
      return new WebLLMChatModel(await (options.create ?? createMLCEngine)(candidate.model, config));
    } catch (error) {
      throw toEngineError(error, 'load_failed');
    }
  }

  async generate(request: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    const choices: ChatResult['choices'] = [];
    const usage = { promptTokens: 0, completionTokens: 0 };
    let cachedPromptTokens = 0;
    // From the last choice to the first: web-llm keeps only its last conversation's cache (see the class comment).
    for (let index = request.n - 1; index >= 0; index--) {
      const choice = await this.#generateChoice(request, index, options);
      choices[index] = { text: choice.text, finishReason: choice.finishReason };
      usage.promptTokens = choice.promptTokens; // the same prompt for every choice: counted once
      usage.completionTokens += choice.completionTokens;
      cachedPromptTokens = Math.max(cachedPromptTokens, choice.cachedPromptTokens);
    }
    return { choices, usage: { ...usage, ...(cachedPromptTokens > 0 && { cachedPromptTokens }) } };
  }

  async #generateChoice(request: ChatRequest, index: number, { signal, onEvent }: ChatOptions) {
    throwIfAborted(signal);
    const cachedPromptTokens = this.#held.reusedBy(request.messages);
    // Until this choice ends on its own, web-llm will start the next request afresh.
    this.#held.forget();
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = await this.#engine.chat.completions.create(toWebLLMRequest(request, index));
    } catch (error) {
      throw toEngineError(error);
    }
    const iterator = stream[Symbol.asyncIterator]();
    const stops = new StopSequenceMatcher(request.stop);
    let text = '';
    let deltas = 0;
    let finishReason: FinishReason = 'stop';
    let webLLMFinish: string | null = null;
    let stopped = false;
    let usage: ChatCompletionChunk['usage'];
    let finished = false;
    const emit = (piece: string) => {
      if (!piece) return;
      text += piece;
      onEvent?.({ type: 'delta', choice: index, text: piece });
    };
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) {
          finished = true;
          break;
        }
        // Checked between tokens: an abort stops the generation within one token.
        throwIfAborted(signal);
        const chunk = next.value;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        const content = choice.delta.content ?? '';
        if (content) {
          deltas += 1;
          const matched = stops.push(content);
          emit(matched.text);
          if (matched.stopped) {
            stopped = true;
            break;
          }
        }
        if (choice.finish_reason) {
          webLLMFinish = choice.finish_reason;
          finishReason = choice.finish_reason === 'length' ? 'length' : 'stop';
        }
      }
    } catch (error) {
      throw toEngineError(error);
    } finally {
      // Closing the stream early runs web-llm's own cleanup: the generation stops and its lock is released.
      if (!finished) await iterator.return?.().catch(() => {});
    }
    if (stopped) finishReason = 'stop';
    else emit(stops.flush());
    // web-llm's usage counts only the tokens it prefilled: with its cache reused, the rest of the prompt was held.
    const promptTokens = cachedPromptTokens + (usage?.prompt_tokens ?? 0);
    if (finished && webLLMFinish === 'stop' && usage) {
      this.#held.hold(request.messages, text, promptTokens, usage.completion_tokens);
    }
    onEvent?.({ type: 'finish', choice: index, reason: finishReason });
    return {
      text,
      finishReason,
      promptTokens,
      cachedPromptTokens,
      // Without a usage chunk (a stop sequence ended the stream early), each content chunk was one token.
      completionTokens: usage?.completion_tokens ?? deltas,
    };
  }
}

/**
 * The engine request for one choice, in web-llm's (OpenAI-shaped) terms. A seeded request gives choice `i` the seed
 * `seed + i`, so choices differ from each other and the whole answer still repeats for the same seed.
 */
export function toWebLLMRequest(request: ChatRequest, index: number): ChatCompletionRequestStreaming {
  const out: ChatCompletionRequestStreaming = {
    messages: request.messages.map((m) => ({
      role: m.role,
      content: m.content,
    })) as ChatCompletionRequestStreaming['messages'],
    stream: true,
    stream_options: { include_usage: true },
    n: 1,
    temperature: request.temperature,
    top_p: request.topP,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
  };
  if (request.maxTokens !== undefined) out.max_tokens = request.maxTokens;
  if (request.seed !== undefined) out.seed = request.seed + index;
  if (request.logitBias) out.logit_bias = { ...request.logitBias };
  return out;
}
