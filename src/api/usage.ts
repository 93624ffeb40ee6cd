import type { TokenUsage } from '../engine-interface/index.ts';
import type { ResponseUsage } from './responses/wire.ts';

/*
 * Token usage on the wire: the engine's count, in the shape of each API. Cached prompt tokens (prefix reuse) are
 * reported as the OpenAI API reports its prompt caching.
 */

/** Chat completions' and completions' usage (openai-node's `CompletionUsage`). */
export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Present when part of the prompt came from the prefix cache, as the OpenAI API reports its prompt caching. */
  prompt_tokens_details?: { cached_tokens: number };
  /**
   * Present when a reasoning model thought (how many of the completion's tokens were its thought) or the engine
   * speculated (how many proposed tokens the model accepted and did not, as the OpenAI API reports Predicted Outputs).
   */
  completion_tokens_details?: {
    reasoning_tokens: number;
    accepted_prediction_tokens?: number;
    rejected_prediction_tokens?: number;
  };
}

export function completionUsage(usage: TokenUsage): CompletionUsage {
  const { promptTokens, completionTokens, cachedPromptTokens, reasoningTokens } = usage;
  const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = usage;
  const speculated = accepted !== undefined && rejected !== undefined;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(cachedPromptTokens && { prompt_tokens_details: { cached_tokens: cachedPromptTokens } }),
    ...((reasoningTokens !== undefined || speculated) && {
      completion_tokens_details: {
        reasoning_tokens: reasoningTokens ?? 0,
        ...(speculated && { accepted_prediction_tokens: accepted, rejected_prediction_tokens: rejected }),
      },
    }),
  };
}

/** The Responses API's usage (its `input_tokens`, `output_tokens` and their details). */
export function responseUsage(usage: TokenUsage): ResponseUsage {
  const { promptTokens, completionTokens, cachedPromptTokens = 0, reasoningTokens = 0 } = usage;
  return {
    input_tokens: promptTokens,
    // The prompt tokens a continued conversation found in the engine's prefix cache.
    input_tokens_details: { cached_tokens: cachedPromptTokens, cache_write_tokens: 0 },
    output_tokens: completionTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: promptTokens + completionTokens,
  };
}

/** Two engine requests' usage together (a text completion of several prompts runs one per prompt). */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  const cached = (a.cachedPromptTokens ?? 0) + (b.cachedPromptTokens ?? 0);
  const thought = a.reasoningTokens !== undefined || b.reasoningTokens !== undefined;
  const speculated = a.acceptedPredictionTokens !== undefined || b.acceptedPredictionTokens !== undefined;
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    ...(cached > 0 && { cachedPromptTokens: cached }),
    ...(thought && { reasoningTokens: (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0) }),
    ...(speculated && {
      acceptedPredictionTokens: (a.acceptedPredictionTokens ?? 0) + (b.acceptedPredictionTokens ?? 0),
      rejectedPredictionTokens: (a.rejectedPredictionTokens ?? 0) + (b.rejectedPredictionTokens ?? 0),
    }),
  };
}
