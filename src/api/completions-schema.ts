import * as z from 'zod';
import type { ChatRequest } from '../engine/index.ts';
import { invalidRequest } from './errors.ts';
import type { Limits } from './options.ts';
import { chatSchema, foldSeed, parse } from './request-schemas.ts';

/*
 * The legacy completions body (`POST /v1/completions`) and its conversion to engine requests: a raw prompt, continued
 * without the chat template. Sampling fields are the chat body's, validated alike.
 */

/** The legacy API's default length: a completion without `max_tokens` is 16 tokens at most. */
const DEFAULT_MAX_TOKENS = 16;

/** The legacy API's bound on `logprobs` (most likely tokens reported at each step). */
const MAX_LOGPROBS = 5;

const optional = <T extends z.ZodType>(schema: T) => schema.nullish();

function completionsSchema(limits: Limits) {
  return chatSchema(limits)
    .pick({
      model: true,
      temperature: true,
      top_p: true,
      presence_penalty: true,
      frequency_penalty: true,
      logit_bias: true,
      n: true,
      stream: true,
      stream_options: true,
      stop: true,
      seed: true,
    })
    .extend({
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
      suffix: optional(
        z.string().max(0, '`suffix` (text after the insertion point) is not supported by these models.'),
      ),
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
    if (p.stream_options != null && p.stream !== true) {
      throw invalidRequest('`stream_options` is only allowed when `stream` is true.', 'stream_options');
    }
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
    const stop = p.stop == null ? [] : typeof p.stop === 'string' ? [p.stop] : p.stop;
    const requests = prompts.map((prompt) => {
      const request: ChatRequest & { prompt: string } = {
        messages: [],
        prompt,
        temperature: p.temperature ?? 1,
        topP: p.top_p ?? 1,
        presencePenalty: p.presence_penalty ?? 0,
        frequencyPenalty: p.frequency_penalty ?? 0,
        stop,
        n,
      };
      if (p.max_tokens != null) request.maxTokens = p.max_tokens;
      // Without one, the legacy default, cut to the room the context window leaves (never an error of its own).
      else request.defaultMaxTokens = DEFAULT_MAX_TOKENS;
      if (p.seed != null) request.seed = foldSeed(p.seed);
      if (p.logprobs != null) request.logprobs = p.logprobs;
      if (p.logit_bias != null) {
        request.logitBias = Object.fromEntries(Object.entries(p.logit_bias).map(([id, bias]) => [Number(id), bias]));
      }
      return request;
    });
    return {
      model: p.model,
      stream: p.stream === true,
      includeUsage: p.stream_options?.include_usage === true,
      echo: p.echo === true,
      requests,
    };
  };
}
