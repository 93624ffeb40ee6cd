/** OpenAI's `reasoning_effort` values: `none` and `minimal` leave a thinking mode off; the others turn it on. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];

/** Whether a reasoning effort turns a model's thinking mode on (what a request sends, or a model's default). */
export const thinksAt = (effort: string | null | undefined) =>
  effort != null && effort !== 'none' && effort !== 'minimal';

/**
 * The share of a reply's tokens (its `max_tokens`, or the default limit) that a thought may take at each effort that
 * thinks. A thought that reaches it is closed there and the model answers, so that a small `max_tokens` still leaves
 * the answer room (a forced tool call, a JSON reply) and the effort bounds what a thought costs, as OpenAI's does.
 * `max` sets no bound but `max_tokens` itself.
 */
export const THOUGHT_SHARES = { low: 0.25, medium: 0.5, high: 0.75, xhigh: 0.9, max: 1 } as const;

/**
 * The most tokens a thought may take (its closing tag included) in a reply of at most `maxTokens`, at `effort`; an
 * effort that does not think (a request that switched thinking on by `enable_thinking` alone) or none counts as
 * `medium`. Infinity where nothing but `maxTokens` bounds it.
 */
export function thoughtBudget(effort: ReasoningEffort | undefined, maxTokens: number): number {
  const share =
    effort !== undefined && thinksAt(effort)
      ? THOUGHT_SHARES[effort as keyof typeof THOUGHT_SHARES]
      : THOUGHT_SHARES.medium;
  return share >= 1 ? Infinity : Math.max(1, Math.floor(maxTokens * share));
}
