import type { ChatMessage } from '../../engine/index.ts';

/**
 * The conversation whose KV cache web-llm holds after a request, as Lantern tracks it, and how many tokens that cache
 * covers.
 *
 * web-llm keeps one conversation per model and reuses its cache when a request's messages before the last one are
 * exactly that conversation: the system message, then each message's role and text, the last reply as web-llm itself
 * produced it (`preparePrefillInput`, `compareConversationObject` in @mlc-ai/web-llm 0.2.x); and only if that reply
 * ended on its own (finish reason `stop`: a reply cut by `max_tokens` or closed early is rebuilt from scratch). Then it
 * prefills only the new round, and its `usage.prompt_tokens` counts only that round: Lantern adds back the tokens the
 * cache already held, so that `prompt_tokens` is the whole prompt, and reports them as cached.
 */
export class HeldConversation {
  #held: { messages: ChatMessage[]; tokens: number } | undefined;

  /** How many tokens of this request's prompt web-llm will take from its cache (0 when it starts afresh). */
  reusedBy(messages: readonly ChatMessage[]): number {
    const held = this.#held;
    if (!held || messages.length !== held.messages.length + 1) return 0;
    const same = held.messages.every((m, i) => m.role === messages[i]!.role && m.content === messages[i]!.content);
    return same ? held.tokens : 0;
  }

  /**
   * After a reply that web-llm ended on its own: it now holds the request's messages and this reply. Its cache holds
   * the whole prompt and every generated token but the last (the end-of-reply token, counted in `completionTokens`
   * but never fed back).
   */
  hold(messages: readonly ChatMessage[], reply: string, promptTokens: number, completionTokens: number): void {
    this.#held = {
      messages: [...messages, { role: 'assistant', content: reply }],
      tokens: promptTokens + completionTokens - 1,
    };
  }

  /** After anything else (a reply cut short, closed early or failed): web-llm will start the next request afresh. */
  forget(): void {
    this.#held = undefined;
  }
}
