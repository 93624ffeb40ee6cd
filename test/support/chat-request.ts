import type { ChatRequest } from '../../src/engine-interface/index.ts';

/** An engine chat request with the API's defaults (greedy here), for tests and benchmarks that call engines directly. */
export const chatRequest = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
  messages: [{ role: 'user', content: 'hi' }],
  temperature: 0,
  topP: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  stop: [],
  n: 1,
  ...overrides,
});
