import * as z from 'zod';
import type { ChatRequest } from '../../engine-interface/index.ts';
import { samplingFields, samplingOf } from '../common-fields.ts';
import { invalidRequest } from '../errors.ts';
import type { Limits } from '../options.ts';
import { optional, parse } from '../request-validation.ts';

/*
 * The legacy completions body (`POST /v1/completions`) and its conversion to engine requests: a raw prompt, continued
 * without the chat template. Sampling fields are the chat body's, validated alike.
 */

/** The legacy API's default length: a completion without `max_tokens` is 16 tokens at most. */
const DEFAULT_MAX_TOKENS = 16;

/** The legacy API's bound on `logprobs` (most likely tokens reported at each step). */
const MAX_LOGPROBS = 5;

function completionsSchema(limits: Limits) {
  return z.object(samplingFields(limits)).extend({
    prompt: z.union([z.string(), z.array(z.string()).min(1).max(limits.maxChoices)], {
      error: (issue) =>
        Array.isArray(issue.input) && issue.input.some((x) => typeof x === 'number' || Array.isArray(x))
          ? 'Token-array prompts are not supported: send the text, a string or an array of strings.'
          : undefined,
    }),
    max_tokens: optional(z.int().min(1).max(limits.maxTokens)),
    echo: optional(z.boolean()),
    logprobs: optional(z.int().min(0).max(MAX_LOGPROBS)),
    best_of: optional(z.int().min(1).max(limits.maxChoices)),
    suffix: optional(z.string().max(0, '`suffix` (text after the insertion point) is not supported by these models.')),
  });
}

/** A validated completions request: one engine request per prompt, and what the answer's shape depends on. */
export interface CompletionsParams {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** Whether each choice's text starts with its prompt. */
  echo: boolean;
  /** One per prompt, in order; each has `n` choices. */
  requests: (ChatRequest & { prompt: string })[];
}

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function completionsParser(limits: Limits): (body: unknown) => CompletionsParams {
  const schema = completionsSchema(limits);
  return (body) => {
    const p = parse(schema, body);
    const { stream, includeUsage, request: sampling } = samplingOf(p);
    const prompts = typeof p.prompt === 'string' ? [p.prompt] : p.prompt;
    const n = p.n ?? 1;
    // Every prompt is generated `n` times: together they are the choices the limit bounds.
    if (prompts.length * n > limits.maxChoices) {
      throw invalidRequest(
        `Invalid 'n': ${prompts.length} prompts × n = ${n} asks for ${prompts.length * n} choices; the limit is ` +
          `${limits.maxChoices}.`,
        'n',
        'invalid_value',
      );
    }
    // `best_of` equal to `n` is what every request does; more would need a ranking this API does not do.
    if (p.best_of != null && p.best_of !== n) {
      throw invalidRequest('`best_of` other than `n` is not supported.', 'best_of', 'invalid_value');
    }
    if (p.echo === true && p.logprobs != null) {
      throw invalidRequest(
        "The prompt's log probabilities (`echo` with `logprobs`) are not supported; send one or the other.",
        'echo',
        'invalid_value',
      );
    }
    const requests = prompts.map((prompt) => {
      const request: ChatRequest & { prompt: string } = { messages: [], prompt, ...sampling };
      if (p.max_tokens != null) request.maxTokens = p.max_tokens;
      // Without one, the legacy default, cut to the room the context window leaves (never an error of its own).
      else request.defaultMaxTokens = DEFAULT_MAX_TOKENS;
      if (p.logprobs != null) request.logprobs = p.logprobs;
      return request;
    });
    return {
      model: p.model,
      stream,
      includeUsage,
      echo: p.echo === true,
      requests,
    };
  };
}
