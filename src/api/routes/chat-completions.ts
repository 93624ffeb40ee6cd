import type { Context } from 'hono';
import type { ChatEvent, GeneratedTokenLogprob, TokenUsage } from '../../engine/index.ts';
import { newCompletionId, systemFingerprint } from '../ids.ts';
import { readJsonObject } from '../read-json.ts';
import { eventStream } from '../sse.ts';
import type { ChatCompletion, ChatCompletionChunk, ChoiceLogprobs, CompletionUsage } from '../wire.ts';
import { requireModel, type Env, type RouteDeps } from './route-deps.ts';

const toUsage = (usage: TokenUsage): CompletionUsage => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  ...(usage.cachedPromptTokens && { prompt_tokens_details: { cached_tokens: usage.cachedPromptTokens } }),
});

/** Engine log probabilities in the wire's shape. */
const toLogprobs = (tokens: GeneratedTokenLogprob[]): ChoiceLogprobs => ({
  content: tokens.map((t) => ({
    token: t.token,
    logprob: t.logprob,
    bytes: t.bytes,
    top_logprobs: t.topLogprobs.map((top) => ({ token: top.token, logprob: top.logprob, bytes: top.bytes })),
  })),
  refusal: null,
});

/** `POST /v1/chat/completions`, as one JSON completion or as a stream of chunks. */
export function createChatCompletion({ engine, limits, parsers, now, ownedBy, errorBody }: RouteDeps) {
  return async (c: Context<Env>) => {
    const { model, stream, includeUsage, request } = parsers.chat(await readJsonObject(c.req.raw, limits.maxBodyBytes));
    const fingerprint = systemFingerprint(await requireModel(engine, model, 'chat'), ownedBy);
    const id = newCompletionId();
    const created = Math.floor(now() / 1000);

    if (!stream) {
      const result = await engine.chat(model, request, { signal: c.req.raw.signal });
      return c.json<ChatCompletion>({
        id,
        object: 'chat.completion',
        created,
        model,
        choices: result.choices.map((choice, index) => ({
          index,
          message: { role: 'assistant', content: choice.text, refusal: null },
          logprobs: choice.logprobs ? toLogprobs(choice.logprobs) : null,
          finish_reason: choice.finishReason,
        })),
        usage: toUsage(result.usage),
        system_fingerprint: fingerprint,
      });
    }

    const chunk = (choices: ChatCompletionChunk['choices'], usage: CompletionUsage | null = null) => {
      const out: ChatCompletionChunk = {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: fingerprint,
        choices,
      };
      if (includeUsage) out.usage = usage;
      return out;
    };
    return eventStream(
      async (send, signal) => {
        let begun = false;
        const onEvent = (event: ChatEvent) => {
          // Each choice opens with its role. Sent with the first token rather than up front, so that a request the
          // engine refuses (a prompt over the context window) still gets its own status code instead of a stream.
          if (!begun) {
            begun = true;
            for (let index = 0; index < request.n; index++) {
              send(chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
            }
          }
          send(
            chunk([
              event.type === 'delta'
                ? {
                    index: event.choice,
                    delta: { content: event.text },
                    logprobs: event.logprobs ? toLogprobs(event.logprobs) : null,
                    finish_reason: null,
                  }
                : { index: event.choice, delta: {}, logprobs: null, finish_reason: event.reason },
            ]),
          );
        };
        const result = await engine.chat(model, request, { signal, onEvent });
        if (includeUsage) send(chunk([], toUsage(result.usage)));
      },
      {
        signal: c.req.raw.signal,
        errorBody: (error) => errorBody(error, c.get('requestId')),
        onDone: c.get('generation')?.release,
      },
    );
  };
}
