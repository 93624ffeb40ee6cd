/**
 * Reads a streamed `POST /v1/chat/completions` answer (server-sent events) into its chunks, as openai-node's
 * `ChatCompletionChunk`s: only the fields the session reads are typed.
 */

export interface ChatChunk {
  choices?: {
    index: number;
    delta?: {
      content?: string | null;
      tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  error?: { message?: string; type?: string; code?: string | null };
}

/** Each `data:` event of the stream, parsed, until `[DONE]` or the end of the body. */
export async function* readChatStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatChunk> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const event = text.slice(0, end);
        text = text.slice(end + 2);
        const data = event
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trimStart())
          .join('\n');
        if (data === '') continue;
        if (data === '[DONE]') return;
        yield JSON.parse(data) as ChatChunk;
      }
    }
  } finally {
    // Stops the request when the reader leaves early (a cancelled response, a bad chunk).
    await reader.cancel().catch(() => {});
  }
}
