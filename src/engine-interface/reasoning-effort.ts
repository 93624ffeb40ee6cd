/** OpenAI's `reasoning_effort` values: `none` and `minimal` leave a thinking mode off; the others turn it on. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

/** Whether a reasoning effort turns a model's thinking mode on (what a request sends, or a model's default). */
export const thinksAt = (effort: string | null | undefined) =>
  effort != null && effort !== 'none' && effort !== 'minimal';
