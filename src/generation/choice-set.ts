import {
  ChatResultBuilder,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type TokenUsage,
} from '../engine-interface/index.ts';
import { ChoicePipeline, type ChoicePipelineOptions } from './choice-pipeline.ts';

/** How a request's choices read what is generated, beyond the request itself. */
export interface ChoiceSetOptions extends Pick<ChoicePipelineOptions, 'calls' | 'decode' | 'endTokens' | 'maxTokens'> {
  /** Whether the model thinks first: its thought is reported apart and counted. */
  thinking: boolean;
  /** Receives each event as it happens (after the result has it). */
  onEvent?: ((event: ChatEvent) => void) | undefined;
}

/**
 * The choices of one generation, the same for every engine the core drives: a ChoicePipeline per choice (the request's
 * stops, calls, constraint and log probabilities), the result built from their events, and the completion's usage
 * summed from the pipelines, so that no engine counts tokens its own way.
 */
export class ChoiceSet {
  readonly pipelines: readonly ChoicePipeline[];
  readonly #results: ChatResultBuilder;
  readonly #thinking: boolean;

  constructor(request: ChatRequest, choices: number, options: ChoiceSetOptions) {
    const logprobs = request.logprobs !== undefined;
    const results = new ChatResultBuilder({ choices, logprobs });
    const onEvent = (event: ChatEvent) => {
      results.add(event);
      options.onEvent?.(event);
    };
    this.#results = results;
    this.#thinking = options.thinking;
    this.pipelines = Array.from(
      { length: choices },
      (_, index) =>
        new ChoicePipeline(index, {
          onEvent,
          stop: request.stop,
          calls: options.calls,
          constraint: request.constraint,
          logprobs,
          decode: options.decode,
          endTokens: options.endTokens,
          maxTokens: options.maxTokens,
          reasoning: options.thinking,
        }),
    );
  }

  /**
   * The result, its usage the prompt's (`prompt`) and the completion's summed over the pipelines, plus `extraTokens`
   * generated that no pipeline saw (an end token an engine drew without handing it over).
   */
  result(
    prompt: Pick<TokenUsage, 'promptTokens' | 'cachedPromptTokens'>,
    more: Pick<TokenUsage, 'acceptedPredictionTokens' | 'rejectedPredictionTokens'> & { extraTokens?: number } = {},
  ): ChatResult {
    const { extraTokens = 0, ...predictions } = more;
    const sum = (count: (pipeline: ChoicePipeline) => number) =>
      this.pipelines.reduce((total, pipeline) => total + count(pipeline), 0);
    const cached = prompt.cachedPromptTokens ?? 0;
    return this.#results.result({
      promptTokens: prompt.promptTokens,
      completionTokens: sum((p) => p.tokens) + extraTokens,
      ...(this.#thinking && { reasoningTokens: sum((p) => p.reasoningTokens) }),
      ...(cached > 0 && { cachedPromptTokens: cached }),
      ...predictions,
    });
  }
}
