import type { Context } from 'hono';
import type { ChatEvent, FinishReason, GeneratedTokenLogprob, TokenUsage } from '../../engine-interface/index.ts';
import { newId } from '../ids.ts';
import { parseJsonObject } from '../request-body.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { eventStream } from '../sse.ts';
import { addUsage, completionUsage } from '../usage.ts';
import { completionsParser } from './schema.ts';
import type { Completion, CompletionChoice, CompletionLogprobs } from './wire.ts';

/** A text completion ends on its own or at a limit: nothing else can end a raw prompt's continuation. */
const toFinishReason = (reason: FinishReason): CompletionChoice['finish_reason'] =>
  reason === 'length' ? 'length' : 'stop';

/**
 * One choice's log probabilities in the legacy shape, as they arrive: each token's offset in the choice's text is
 * where the text decoded from the tokens before it ends (the token's bytes, decoded as a stream, so that a token
 * holding part of a character moves the offset only when the character is complete).
 */
class LegacyLogprobs {
  readonly #decoder = new TextDecoder();
  #offset: number;

  /** @param start - where the generated text starts in the choice's text: after the prompt, with `echo`. */
  constructor(start: number) {
    this.#offset = start;
  }

  next(tokens: GeneratedTokenLogprob[]): CompletionLogprobs {
    const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
    for (const token of tokens) {
      out.tokens.push(token.token);
      out.token_logprobs.push(token.logprob);
      // Keyed by token text, which may be any string (`__proto__` included): a map without a prototype.
      const top: Record<string, number> = Object.create(null);
      for (const alt of token.topLogprobs) top[alt.token] ??= alt.logprob;
      // The legacy API always lists the sampled token too: up to `logprobs` + 1 entries.
      top[token.token] ??= token.logprob;
      out.top_logprobs.push(top);
      out.text_offset.push(this.#offset);
      this.#offset += this.#decoder.decode(Uint8Array.from(token.bytes), { stream: true }).length;
    }
    return out;
  }
}

/**
 * `POST /v1/completions`: raw prompts continued as they are, as one text completion or a stream of chunks. Each prompt
 * runs as its own engine request of `n` choices, in order; choice `i` of prompt `p` is `choices[p × n + i]`.
 */
export function createCompletion({ engine, limits, now, ownedBy, errorBody }: RouteDeps) {
  const parse = completionsParser(limits);
  return async (c: Context<Env>) => {
    const { model, stream, includeUsage, echo, requests } = parse(await parseJsonObject(c.get('body')));
    // Prompts are cached per key: no key's prompts reach another's answers or `cached_tokens` (issue 41).
    for (const request of requests) request.cacheScope = c.get('key').id;
    const id = newId('cmpl-');
    const created = Math.floor(now() / 1000);
    const n = requests[0]!.n;
    const served = new ServedBy(model, ownedBy);
    const { onServe } = served;
    let usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
    const completion = (choices: CompletionChoice[]): Completion => ({
      id,
      object: 'text_completion',
      created,
      model: served.model,
      system_fingerprint: served.fingerprint,
      choices,
    });

    if (!stream) {
      const choices: CompletionChoice[] = [];
      for (const [p, request] of requests.entries()) {
        const result = await engine.chat(model, request, { signal: c.req.raw.signal, onServe });
        const start = echo ? request.prompt.length : 0;
        result.choices.forEach((choice, i) =>
          choices.push({
            index: p * n + i,
            text: (echo ? request.prompt : '') + choice.text,
            logprobs: choice.logprobs ? new LegacyLogprobs(start).next(choice.logprobs) : null,
            finish_reason: toFinishReason(choice.finishReason),
          }),
        );
        usage = addUsage(usage, result.usage);
      }
      return served.label(c.json<Completion>({ ...completion(choices), usage: completionUsage(usage) }));
    }

    const chunk = (choices: CompletionChoice[], last: TokenUsage | null = null): Completion =>
      includeUsage ? { ...completion(choices), usage: last && completionUsage(last) } : completion(choices);
    const response = await eventStream(
      async (send, signal) => {
        for (const [p, request] of requests.entries()) {
          const start = echo ? request.prompt.length : 0;
          const logprobs = Array.from({ length: n }, () => new LegacyLogprobs(start));
          const begun = new Set<number>();
          const onEvent = (event: ChatEvent) => {
            if (event.type !== 'delta' && event.type !== 'finish') return;
            const index = p * n + event.choice;
            // An echoed prompt opens its choice, with the choice's first token (a refused prompt gets its status).
            if (echo && !begun.has(event.choice)) {
              begun.add(event.choice);
              send(chunk([{ index, text: request.prompt, logprobs: null, finish_reason: null }]));
            }
            send(
              chunk([
                event.type === 'delta'
                  ? {
                      index,
                      text: event.text,
                      logprobs: event.logprobs ? logprobs[event.choice]!.next(event.logprobs) : null,
                      finish_reason: null,
                    }
                  : { index, text: '', logprobs: null, finish_reason: toFinishReason(event.reason) },
              ]),
            );
          };
          usage = addUsage(usage, (await engine.chat(model, request, { signal, onEvent, onServe })).usage);
        }
        if (includeUsage) send(chunk([], usage));
      },
      { signal: c.req.raw.signal, errorBody: (error) => errorBody(error, c.get('requestId')) },
    );
    return served.label(response);
  };
}
