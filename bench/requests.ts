import type OpenAI from 'openai';
import { chatRequest } from '../test/support/chat-request.ts';

/**
 * The requests every benchmark sends: greedy, and running to exactly `tokens` tokens because the special tokens (ids
 * 0–2 in both the bundled model and stories260K, among them every end-of-reply token) are banned.
 */
const PROMPT = 'Tell me a story.';
/** The conversation every such request sends. */
export const ENDLESS_MESSAGES = [{ role: 'user' as const, content: PROMPT }];
const BANNED = { 0: -100, 1: -100, 2: -100 };

/** The body of a /v1/chat/completions request, not streamed. */
export const endlessRequest = (model: string, tokens: number) => ({
  model,
  messages: ENDLESS_MESSAGES.map((message) => ({ ...message })),
  temperature: 0,
  max_tokens: tokens,
  logit_bias: BANNED,
});

/** The body of a streamed /v1/chat/completions request. */
export const endlessStream = (model: string, tokens: number) => ({
  ...endlessRequest(model, tokens),
  stream: true as const,
});

/** The same request, as the engine takes it when called directly. */
export const endlessEngineRequest = (tokens: number) =>
  chatRequest({ messages: ENDLESS_MESSAGES.map((message) => ({ ...message })), maxTokens: tokens, logitBias: BANNED });

/** A question about one image (a data URL), as the engine takes it when called directly: greedy, 8 tokens at most. */
export const imageChatRequest = (url: string, question: string) =>
  chatRequest({
    messages: [{ role: 'user', content: question, images: [{ url, detail: 'auto', at: 0, param: 'image' }] }],
    maxTokens: 8,
  });

/** The same question about one image (a data URL), as the wire sends it: the image, then the text. */
export const imageMessages = (url: string, question: string): OpenAI.ChatCompletionMessageParam[] => [
  {
    role: 'user',
    content: [
      { type: 'image_url', image_url: { url } },
      { type: 'text', text: question },
    ],
  },
];

/** A greedy chat of 8 tokens at most, streamed through /v1: ms to its first text, its usage, its reply. */
export async function streamedFirstToken(client: OpenAI, model: string, messages: OpenAI.ChatCompletionMessageParam[]) {
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model,
    messages,
    temperature: 0,
    max_tokens: 8,
    stream: true,
    stream_options: { include_usage: true },
  });
  let ms = 0;
  let reply = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const text = chunk.choices[0]?.delta.content;
    if (text && !ms) ms = performance.now() - started;
    reply += text ?? '';
    usage = chunk.usage ?? usage;
  }
  return { ms, reply, usage: usage! };
}
