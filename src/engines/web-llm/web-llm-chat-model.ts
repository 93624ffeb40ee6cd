import type {
  ChatCompletionChunk,
  ChatCompletionRequestStreaming,
  ChatCompletionTokenLogprob,
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
  type GeneratedTokenLogprob,
  type LoadProgress,
} from '../../engine/index.ts';
import { constraintGrammar, invalidOutput, violation } from '../generation/output-constraint.ts';
import { StopSequenceMatcher } from '../generation/stop-sequences.ts';
import type { WebLLMCandidate } from '../model-profile.ts';

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
 * A constraint reaches web-llm as the same grammar text the transformers.js engine runs
 * (`response_format: {type: "grammar"}`, which web-llm compiles with its own XGrammar and applies as a mask), not as
 * web-llm's schema string, whose defaults allow unbounded whitespace and skip Lantern's narrowing; each constrained
 * choice is validated before its end is reported. Log probabilities are web-llm's own.
 */
export class WebLLMChatModel {
  readonly #engine: WebLLMEngine;

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
    if (request.logprobs !== undefined && request.logprobs > WEB_LLM_MAX_TOP_LOGPROBS) {
      throw new EngineError(
        'invalid_request',
        `This model (web-llm) reports at most ${WEB_LLM_MAX_TOP_LOGPROBS} \`top_logprobs\`; ${request.logprobs} were asked for.`,
        { param: 'top_logprobs' },
      );
    }
    const grammar = request.constraint ? await constraintGrammar(request.constraint) : undefined;
    const choices: ChatResult['choices'] = [];
    const usage = { promptTokens: 0, completionTokens: 0 };
    for (let index = 0; index < request.n; index++) {
      const choice = await this.#generateChoice(request, index, options, grammar);
      choices.push({
        text: choice.text,
        finishReason: choice.finishReason,
        ...(request.logprobs !== undefined && { logprobs: choice.logprobs }),
      });
      usage.promptTokens = choice.promptTokens; // the same prompt for every choice: counted once
      usage.completionTokens += choice.completionTokens;
    }
    return { choices, usage };
  }

  async #generateChoice(request: ChatRequest, index: number, { signal, onEvent }: ChatOptions, grammar?: string) {
    throwIfAborted(signal);
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = await this.#engine.chat.completions.create(toWebLLMRequest(request, index, grammar));
    } catch (error) {
      throw toEngineError(error);
    }
    const iterator = stream[Symbol.asyncIterator]();
    const stops = new StopSequenceMatcher(request.stop);
    let text = '';
    let deltas = 0;
    let finishReason: FinishReason = 'stop';
    let stopped = false;
    let usage: ChatCompletionChunk['usage'];
    let finished = false;
    const logprobs: GeneratedTokenLogprob[] = [];
    const pending: GeneratedTokenLogprob[] = [];
    const emit = (piece: string) => {
      if (!piece) return;
      text += piece;
      // A delta carries the tokens generated since the last one (stop-sequence matching may hold text back).
      const tokens = pending.splice(0);
      logprobs.push(...tokens);
      onEvent?.({
        type: 'delta',
        choice: index,
        text: piece,
        ...(request.logprobs !== undefined && { logprobs: tokens }),
      });
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
        if (request.logprobs !== undefined)
          pending.push(...fromWebLLMLogprobs(choice.logprobs?.content, request.logprobs));
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
        if (choice.finish_reason) finishReason = choice.finish_reason === 'length' ? 'length' : 'stop';
      }
    } catch (error) {
      throw toEngineError(error);
    } finally {
      // Closing the stream early runs web-llm's own cleanup: the generation stops and its lock is released.
      if (!finished) await iterator.return?.().catch(() => {});
    }
    if (stopped) finishReason = 'stop';
    else emit(stops.flush());
    // A constrained choice that ended on its own must hold a valid answer: never report an invalid one as done.
    const why = request.constraint && finishReason === 'stop' ? violation(request.constraint, text) : undefined;
    if (why) throw invalidOutput(index, why);
    onEvent?.({ type: 'finish', choice: index, reason: finishReason });
    return {
      text,
      finishReason,
      logprobs,
      promptTokens: usage?.prompt_tokens ?? 0,
      // Without a usage chunk (a stop sequence ended the stream early), each content chunk was one token.
      completionTokens: usage?.completion_tokens ?? deltas,
    };
  }
}

/** web-llm refuses `top_logprobs` over 5 (its `postInitAndCheckGenerationConfigValues`). */
const WEB_LLM_MAX_TOP_LOGPROBS = 5;

/** web-llm's log probabilities of one chunk, with the requested number of alternatives. */
function fromWebLLMLogprobs(
  content: ChatCompletionTokenLogprob[] | null | undefined,
  top: number,
): GeneratedTokenLogprob[] {
  return (content ?? []).map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: t.bytes ?? [],
    topLogprobs: t.top_logprobs
      .slice(0, top)
      .map((alt) => ({ token: alt.token, logprob: alt.logprob, bytes: alt.bytes ?? [] })),
  }));
}

/**
 * The engine request for one choice, in web-llm's (OpenAI-shaped) terms. A seeded request gives choice `i` the seed
 * `seed + i`, so choices differ from each other and the whole answer still repeats for the same seed. `grammar` is
 * the constraint's grammar text. Log probabilities ask for at least one alternative: web-llm records none at all
 * with `top_logprobs: 0`.
 */
export function toWebLLMRequest(request: ChatRequest, index: number, grammar?: string): ChatCompletionRequestStreaming {
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
  if (grammar !== undefined) out.response_format = { type: 'grammar', grammar };
  if (request.logprobs !== undefined) {
    out.logprobs = true;
    out.top_logprobs = Math.max(1, request.logprobs);
  }
  return out;
}
