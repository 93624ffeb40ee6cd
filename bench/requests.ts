import { chatRequest } from '../test/support/chat-request.ts';

/**
 * The requests every benchmark sends: greedy, and running to exactly `tokens` tokens because the special tokens (ids
 * 0–2 in both the bundled model and stories260K, among them every end-of-reply token) are banned.
 */
const PROMPT = 'Tell me a story.';
const BANNED = { 0: -100, 1: -100, 2: -100 };

/** The body of a streamed /v1/chat/completions request. */
export const endlessStream = (model: string, tokens: number) => ({
  model,
  stream: true as const,
  messages: [{ role: 'user' as const, content: PROMPT }],
  temperature: 0,
  max_tokens: tokens,
  logit_bias: BANNED,
});

/** The same request, as the engine takes it when called directly. */
export const endlessEngineRequest = (tokens: number) =>
  chatRequest({ messages: [{ role: 'user', content: PROMPT }], maxTokens: tokens, logitBias: BANNED });
