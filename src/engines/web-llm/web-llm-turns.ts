import type { ChatMessage } from '../../engine-interface/index.ts';
import { WEB_LLM_CACHES, webLLMFileUrl } from './web-llm-cache.ts';
import type { WebLLMMessage } from './held-conversation.ts';

/*
 * The conversation as web-llm 0.2.86 must be sent it to answer as the CPU engines answer: without the thoughts of past
 * replies, and ending on a turn it takes last.
 */

/** What a thinking model's reply opens with when it does not think: web-llm's empty block (`forwardPrefill`). */
const EMPTY_THINKING_BLOCK = '<think>\n\n</think>\n\n';
const THOUGHT_END = '</think>';

/**
 * A thinking model's conversation without the thoughts of its past replies: each assistant turn before the last user
 * turn that holds a thinking block (`</think>`) keeps only what follows it, after an empty block. Qwen3's own template
 * drops them there too (`content.split('</think>')[-1]`, for turns before its `last_query_index`), and with them kept,
 * Qwen3-0.6B cuts its replies short from the second turn (mlc-llm#3482; mlc-llm#3484 adds a `qwen3` template that
 * web-llm 0.2.86's `qwen2` one lacks). Turns after the last user turn (a tool loop in progress) keep their thought, as
 * in the template.
 *
 * The empty block stays because web-llm holds every reply whose thinking was off with one (it writes it itself): so
 * a past turn is sent the same way whether its model thought or not, and a conversation whose thinking is off (the
 * default) is sent as web-llm holds it, keeping its prefix cache turn after turn. A reply with a thought cannot: web-llm
 * holds its thought in its KV cache, and has no way to drop it, so the request after it is prefilled whole.
 */
export function withoutPastThoughts(messages: readonly ChatMessage[]): ChatMessage[] {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  return messages.map((m, i) => {
    if (i > lastUser || m.role !== 'assistant' || !m.content.includes(THOUGHT_END)) return m;
    const answer = m.content.slice(m.content.lastIndexOf(THOUGHT_END) + THOUGHT_END.length).replace(/^\n+/, '');
    const { reasoning: _thought, ...rest } = m;
    return { ...rest, content: EMPTY_THINKING_BLOCK + answer };
  });
}

/**
 * The messages web-llm is sent, ending on a turn it takes last. web-llm refuses a conversation whose last message is
 * not a user's or a tool's (`MessageOrderError`, in `postInitAndCheckFields` and
 * `getConversationFromChatCompletionRequest`), which the CPU engines and OpenAI answer: the template's turns, then the
 * assistant's header (`add_generation_prompt`), so that the model replies after the last turn.
 *
 * - A last assistant turn goes as a user turn named with the template's assistant role (`assistantRole`, e.g.
 *   `<|im_start|>assistant`): web-llm writes a user turn with its `name` as the role (`appendMessage`,
 *   `preparePrefillInput`), so the prompt is the assistant turn, closed, then a new assistant header, as the CPU
 *   engines' prompt is. Without the role (the model's config unread), an empty user turn follows it.
 * - A conversation of system messages only gets an empty user turn after them: web-llm writes its system message only
 *   through its template's system slot, before the first turn, so a user turn must follow it.
 */
export function endingWebLLMTakes(
  messages: readonly WebLLMMessage[],
  assistantRole: string | undefined,
): WebLLMMessage[] {
  const last = messages.at(-1);
  if (!last || last.role === 'user' || last.role === 'tool') return [...messages];
  if (last.role === 'assistant' && assistantRole !== undefined) {
    return [...messages.slice(0, -1), { role: 'user', name: assistantRole, content: last.content }];
  }
  return [...messages, { role: 'user', content: '' }];
}

/**
 * The assistant role of the model's conversation template (`conv_template.roles.assistant` in the mlc-chat-config.json
 * web-llm keeps in its `webllm/config` cache); undefined when it cannot be read.
 */
export async function readAssistantRole(
  modelId: string,
  storage: CacheStorage | undefined = globalThis.caches,
): Promise<string | undefined> {
  if (!storage) return undefined;
  const cache = await storage.open(WEB_LLM_CACHES.config);
  const response = await cache.match(webLLMFileUrl(modelId, 'mlc-chat-config.json'));
  if (!response) return undefined;
  const config = (await response.json()) as { conv_template?: { roles?: { assistant?: unknown } } };
  const role = config.conv_template?.roles?.assistant;
  return typeof role === 'string' && role !== '' ? role : undefined;
}
