import type { ChatMessage, FunctionCall } from '../../engine/index.ts';

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
 *
 * The client sends back the replies Lantern gave it, which may differ from what web-llm holds (Lantern removes the
 * empty thinking block web-llm adds when thinking is off): a request that continues the held conversation, as the
 * client sees it, is sent with web-llm's own version of it.
 */
export class HeldConversation {
  #held: { client: ChatMessage[]; history: ChatMessage[]; tokens: number } | undefined;

  /**
   * When this request continues the conversation web-llm holds: that conversation's messages as web-llm holds them
   * (to send in place of all but the client's last message) and the tokens its cache holds. Undefined otherwise.
   */
  reuseFor(messages: readonly ChatMessage[]): { history: ChatMessage[]; tokens: number } | undefined {
    const held = this.#held;
    if (!held || messages.length !== held.client.length + 1) return undefined;
    const same = held.client.every((m, i) => sameMessage(m, messages[i]!));
    return same ? { history: held.history, tokens: held.tokens } : undefined;
  }

  /**
   * After a reply that web-llm ended on its own: it now holds the messages it was sent and its reply as it wrote it
   * (`raw`: with the empty thinking block it adds, say), which a client sends back as `clientMessages` and `reply`
   * (its text, and its tool calls as the assistant message's `tool_calls`).
   * Its cache holds the whole prompt and every generated token but the last (the end-of-reply token, counted in
   * `completionTokens` but never fed back).
   */
  hold(
    clientMessages: readonly ChatMessage[],
    reply: { text: string; toolCalls: FunctionCall[] },
    sentMessages: readonly ChatMessage[],
    raw: string,
    promptTokens: number,
    completionTokens: number,
  ): void {
    this.#held = {
      client: [
        ...clientMessages,
        { role: 'assistant', content: reply.text, toolCalls: reply.toolCalls.map(withoutId) },
      ],
      history: [...sentMessages, { role: 'assistant', content: raw }],
      tokens: promptTokens + completionTokens - 1,
    };
  }

  /** After anything else (a reply cut short, closed early or failed): web-llm will start the next request afresh. */
  forget(): void {
    this.#held = undefined;
  }
}

/** The same message as the client sends it back: role, text, and tool calls by name and arguments (their ids are the API's). */
function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  const [x, y] = [a.toolCalls ?? [], b.toolCalls ?? []];
  return (
    a.role === b.role &&
    a.content === b.content &&
    x.length === y.length &&
    x.every((call, i) => call.name === y[i]!.name && call.arguments === y[i]!.arguments)
  );
}

const withoutId = (call: FunctionCall) => ({ id: '', name: call.name, arguments: call.arguments });
