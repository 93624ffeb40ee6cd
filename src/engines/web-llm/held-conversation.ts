import type { ChatMessage, FunctionCall } from '../../engine-interface/index.ts';

/**
 * A message as web-llm is sent it: its role and text, or a user turn's text and image parts; a user turn's `name` is
 * the role web-llm writes it under (Lantern names only a last assistant turn sent as a user's: `endingWebLLMTakes`).
 */
export interface WebLLMMessage {
  role: string;
  name?: string;
  content: string | WebLLMPart[];
}

/** A part of a user turn with images, as `webLLMMessages` writes it. */
export type WebLLMPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/**
 * The conversation whose KV cache web-llm holds after a request, as Lantern tracks it, and how many tokens that cache
 * covers.
 *
 * web-llm keeps one conversation per model and reuses its cache when a request's messages before the last one make
 * the same conversation (`preparePrefillInput`, `compareConversationObject` in @mlc-ai/web-llm 0.2.86): the same
 * system message as it is sent (the tools' description included: Lantern writes it there), then each message's role
 * and text, the last reply as web-llm itself wrote it; and only if that reply ended on its own (finish reason `stop`:
 * a reply cut by `max_tokens` or closed early is rebuilt from scratch). Then it prefills only the new round, and its
 * `usage.prompt_tokens` counts only that round: Lantern adds back the tokens the cache already held, so that
 * `prompt_tokens` is the whole prompt, and reports them as cached. So the held conversation is compared as web-llm
 * compares it: on the messages sent to web-llm, not on the client's.
 *
 * The client sends back the replies Lantern gave it, which may differ from what web-llm holds (Lantern removes the
 * empty thinking block web-llm adds when thinking is off, and reads tool calls out of the text): a request that
 * continues the held conversation, as the client sees it, is sent with web-llm's own version of its replies. A thinking
 * model's past replies then lose their thought (`withoutPastThoughts`, applied after `asHeld`): web-llm holds a reply
 * with its thought, so the request after a reply with one is prefilled whole (`cachedFor` says 0, as web-llm compares),
 * while a reply without one (thinking off: web-llm's empty block) is sent as web-llm holds it, and its next request
 * reuses the cache. Each past reply is sent the same way on every later turn, so the comparison holds turn after turn.
 *
 * A request web-llm refuses before it touches its conversation (its request and generation-config checks, its seed,
 * the conversation it builds from the messages) leaves the held one as it was; any other that does not end on its own
 * (cut, closed early, failed in or after its prefill, a raw prompt) leaves web-llm to start the next one afresh.
 *
 * web-llm's cache is one key's at a time (ChatRequest.cacheScope): a request of another scope than the last one's
 * makes web-llm start afresh ({@link claim}), so that it never extends, and its timing and `cached_tokens` never tell,
 * another key's conversation (issue 41).
 */
export class HeldConversation {
  /** The scope of the last request web-llm was sent: whose conversation its cache may hold. */
  #scope: string | undefined;
  #held:
    | {
        /** The client's messages, its reply last (as the client sends it back). */
        client: ChatMessage[];
        /** The client's assistant turns, by index, that go to web-llm as it wrote them. */
        replies: Map<number, string>;
        /** What web-llm holds: the messages it was sent, then its reply as it wrote it. */
        sent: WebLLMMessage[];
        /** The tokens its cache holds. */
        tokens: number;
      }
    | undefined;

  /**
   * Before a request of `scope` goes to web-llm: when web-llm's conversation may be another scope's, forgets it and
   * has web-llm drop it (`reset`: its `resetChat`); the conversation is `scope`'s from then on. A reset that fails
   * leaves it the other scope's, so that the next request of `scope` tries again. The caller runs one request at a
   * time, so that none comes between the reset and the request.
   */
  async claim(scope: string | undefined, reset: () => Promise<void>): Promise<void> {
    if (scope === this.#scope) return;
    this.forget();
    await reset();
    this.#scope = scope;
  }

  /**
   * The request's messages to send to web-llm: when they continue the held conversation as the client sees it, its
   * replies as web-llm wrote them (with no calls apart: their text holds them); otherwise as they are.
   */
  asHeld(messages: readonly ChatMessage[]): ChatMessage[] {
    const held = this.#held;
    if (!held || !this.#continues(messages)) return [...messages];
    return messages.map((m, i) => {
      const raw = held.replies.get(i);
      return raw === undefined ? m : { role: 'assistant', content: raw };
    });
  }

  /**
   * The tokens web-llm's cache holds for a request sent with these messages: those of the held conversation when the
   * messages before the last are that conversation, as web-llm compares them (and it holds a message besides the
   * system one: web-llm starts afresh otherwise); 0 otherwise.
   */
  cachedFor(sent: readonly WebLLMMessage[]): number {
    const held = this.#held;
    if (!held) return 0;
    const history = sent.slice(0, -1);
    const reused =
      history.length === held.sent.length &&
      history.some((m) => m.role !== 'system') &&
      history.every((m, i) => sameTurn(m, held.sent[i]!));
    return reused ? held.tokens : 0;
  }

  /**
   * After a reply that web-llm ended on its own: it now holds the messages it was sent (`sent`, the last included) and
   * its reply as it wrote it (`raw`: with the empty thinking block it adds, say). The client sends them back as its
   * messages (`clientMessages`) and the `reply` (its text, and its tool calls as the assistant message's `tool_calls`). Its cache holds the whole prompt
   * and every generated token but the last (the end-of-reply token, counted in `completionTokens` but never fed back).
   */
  hold(
    clientMessages: readonly ChatMessage[],
    reply: { text: string; toolCalls: FunctionCall[] },
    sent: readonly WebLLMMessage[],
    raw: string,
    promptTokens: number,
    completionTokens: number,
  ): void {
    const replies = new Map(this.#continues(clientMessages) ? this.#held!.replies : []);
    replies.set(clientMessages.length, raw);
    this.#held = {
      client: [
        ...clientMessages,
        { role: 'assistant', content: reply.text, toolCalls: reply.toolCalls.map(withoutId) },
      ],
      replies,
      sent: [...sent, { role: 'assistant', content: raw }],
      tokens: promptTokens + completionTokens - 1,
    };
  }

  /** Whether the client's messages before the last are the held conversation, as the client got it. */
  #continues(messages: readonly ChatMessage[]): boolean {
    const held = this.#held;
    return (
      held !== undefined &&
      messages.length === held.client.length + 1 &&
      held.client.every((m, i) => sameMessage(m, messages[i]!))
    );
  }

  /** After a request that web-llm will not continue: it starts the next one afresh. */
  forget(): void {
    this.#held = undefined;
  }
}

/** The same turn as web-llm compares it (`compareConversationObject`): role, the role it is written under, content. */
const sameTurn = (a: WebLLMMessage, b: WebLLMMessage) =>
  a.role === b.role && a.name === b.name && sameContent(a.content, b.content);

/**
 * The same content as web-llm compares it (`compareConversationObject`): the same text, or as many parts, each the same
 * text or the same image URL. A new array with the same parts is the same content, as it is to web-llm.
 */
function sameContent(a: WebLLMMessage['content'], b: WebLLMMessage['content']): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return (
    a.length === b.length &&
    a.every((part, i) => {
      const other = b[i]!;
      if (part.type === 'text') return other.type === 'text' && part.text === other.text;
      return other.type === 'image_url' && part.image_url.url === other.image_url.url;
    })
  );
}

/**
 * The same message as the client sends it back: role, text, images (by URL, where they sit), and tool calls by name
 * and arguments (their ids are the API's).
 */
function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  const [x, y] = [a.toolCalls ?? [], b.toolCalls ?? []];
  const [p, q] = [a.images ?? [], b.images ?? []];
  return (
    a.role === b.role &&
    a.content === b.content &&
    p.length === q.length &&
    p.every((image, i) => image.url === q[i]!.url && image.at === q[i]!.at) &&
    x.length === y.length &&
    x.every((call, i) => call.name === y[i]!.name && call.arguments === y[i]!.arguments)
  );
}

const withoutId = (call: FunctionCall) => ({ id: '', name: call.name, arguments: call.arguments });
