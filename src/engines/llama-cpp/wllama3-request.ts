/*
 * A request's plan as wllama 3 runs it: wllama 3 (llama.cpp's server loop compiled to WebAssembly) takes whole
 * completions, sampled natively, and streams their text back; it has no call that feeds tokens or hands a distribution
 * over. So a plan runs on it whole or not at all, and what it cannot run as Lantern means it is named here, before any
 * work. Its text goes through the choice pipeline (stops, calls, reasoning, the final constraint check), as web-llm's.
 */

/**
 * What of a request's plan wllama 3 is asked to execute: the fields of the generation core's per-row plan (issue 64's
 * `plan` piece, extending NativeDraw) that reach llama.cpp's sampler. Written here against that shape until it lands.
 */
export interface Wllama3Plan {
  /** 0: greedy. */
  readonly temperature: number;
  readonly topP: number;
  /** A 31-bit seed for this row (the request's, mixed with the row's index); none: llama.cpp's own randomness. */
  readonly seed?: number | undefined;
  /** The most tokens this row may generate; -1: as many as its window holds. */
  readonly maxTokens: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  /** token id → bias, added to the logits (OpenAI's `logit_bias`). */
  readonly logitBias?: Readonly<Record<number, number>> | undefined;
  /** The output constraint as llama.cpp GBNF (the gbnf piece's translation), or none. */
  readonly grammar?: string | undefined;
  /** Log probabilities wanted: the alternatives listed at each step (0: the chosen token's alone). */
  readonly logprobs?: number | undefined;
}

/**
 * Why wllama 3 cannot run a plan as Lantern defines it (and the request parameter that asks for it), or undefined when
 * it can run it whole. It has no logits path to fall back on: a request with such a plan is refused (a 400 naming
 * `param`). (Each reason was seen in wllama 3.13: see docs/models.md.)
 */
export function wllama3Gap(plan: Wllama3Plan): { param: string; reason: string } | undefined {
  // llama.cpp's server feeds the prompt's tokens to the penalty sampler too: a token of the prompt is penalised before
  // it was ever generated, where OpenAI's (and Lantern's) penalties count the generated tokens only.
  const penalty =
    plan.presencePenalty !== 0 ? 'presence_penalty' : plan.frequencyPenalty !== 0 ? 'frequency_penalty' : '';
  if (penalty) return { param: penalty, reason: 'presence and frequency penalties (llama.cpp counts the prompt too)' };
  // wllama 3.13 writes each listed token's text into JSON: a token that holds part of a character (any byte-level
  // tokenizer's, on emoji and most CJK) fails the whole request.
  if (plan.logprobs !== undefined)
    return {
      param: 'logprobs',
      reason: 'logprobs (wllama 3.13 fails the request on a token that holds part of a character)',
    };
  return undefined;
}

/** llama.cpp's server samples with these unless told otherwise; OpenAI's sampling has none of them. */
const OFF = {
  top_k: 0,
  min_p: 0,
  typical_p: 1,
  repeat_penalty: 1,
  dry_multiplier: 0,
  xtc_probability: 0,
  mirostat: 0,
} as const;

/**
 * The completion request wllama 3 runs for one row: the rendered prompt (wllama 3 reads text only: a prompt of token
 * ids is refused), llama.cpp's defaults that OpenAI's sampling lacks switched off, and `cache_prompt` as the caller's
 * scope rule allows (see PromptReuse).
 */
export function completionRequest(prompt: string, plan: Wllama3Plan, reuse: boolean) {
  const gap = wllama3Gap(plan);
  if (gap !== undefined) throw new Error(`wllama 3 cannot run this plan: ${gap.reason}`);
  return {
    prompt,
    stream: true as const,
    max_tokens: plan.maxTokens,
    temperature: plan.temperature,
    top_p: plan.topP,
    ...(plan.seed !== undefined && { seed: plan.seed }),
    ...OFF,
    // OpenAI's order: the temperature scales the logits, then the nucleus is cut from them. llama.cpp's own chain cuts
    // the nucleus first, which for top_p < 1 under a temperature other than 1 draws from another set of tokens.
    samplers: ['temperature', 'top_p'],
    // [id, bias] pairs: llama.cpp's server reads an object's keys as text to tokenize, unless they are numbers.
    ...(plan.logitBias && { logit_bias: Object.entries(plan.logitBias).map(([id, bias]) => [Number(id), bias]) }),
    ...(plan.grammar !== undefined && { grammar: plan.grammar }),
    cache_prompt: reuse,
    // Every chunk then carries the counts so far (timings), so that a row the core stops early (a stop sequence, its
    // calls made) is still counted as llama.cpp counted it.
    timings_per_token: true,
  };
}

/** Tokens a row has counted: its prompt's (those taken from the cache included) and those it generated. */
export interface Wllama3Counts {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

/** What one streamed chunk of wllama 3's completion carries for Lantern. */
export interface Wllama3Piece {
  text: string;
  /** The counts so far, where the chunk carries them (llama.cpp's per-token timings). */
  counts?: Wllama3Counts | undefined;
  /** Set on the row's last chunk: why it ended and what it counted. */
  end?: ({ reason: 'stop' | 'length' } & Wllama3Counts) | undefined;
}

/** A chunk as wllama 3 streams a completion (`text_completion`, OpenAI's shape, with llama.cpp's usage). */
export interface Wllama3Chunk {
  choices: { text: string; finish_reason: 'stop' | 'length' | 'content_filter' | null }[];
  usage?: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details?: { cached_tokens?: number };
  } | null;
  /** llama.cpp's timings: `prompt_n` the prompt's tokens it decoded, `cache_n` those it reused, `predicted_n` generated. */
  timings?: { prompt_n: number; cache_n: number; predicted_n: number } | undefined;
}

/** A streamed chunk as Lantern reads it. */
export function pieceOf(chunk: Wllama3Chunk): Wllama3Piece {
  const choice = chunk.choices[0];
  const text = choice?.text ?? '';
  const reason = choice?.finish_reason;
  const timings = chunk.timings;
  const counts = timings && {
    promptTokens: timings.prompt_n + timings.cache_n,
    completionTokens: timings.predicted_n,
    cachedTokens: timings.cache_n,
  };
  if (!reason) return counts ? { text, counts } : { text };
  const usage = chunk.usage;
  const end = {
    // Content filters are not llama.cpp's: a grammar that completes ends the row as `stop`.
    reason: reason === 'length' ? ('length' as const) : ('stop' as const),
    promptTokens: usage?.prompt_tokens ?? counts?.promptTokens ?? 0,
    completionTokens: usage?.completion_tokens ?? counts?.completionTokens ?? 0,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? counts?.cachedTokens ?? 0,
  };
  return counts ? { text, counts, end } : { text, end };
}

/**
 * Whether a request may start from what earlier requests left in the context (`ChatRequest.cacheScope`): wllama 3
 * picks the sequence a request runs on itself (its request path reads no `id_slot`) and restores prompts across its
 * sequences, so Lantern cannot keep one scope's keys and values from another's prompt. Reuse stays on while every
 * request since the model loaded shared one scope (an app of one tenant, the common case), and is off for good once
 * a second scope has been served.
 */
export class PromptReuse {
  readonly #scopes = new Set<string | undefined>();

  /** Whether a request of `scope` may reuse what the context holds; counts the scope as served. */
  admit(scope: string | undefined): boolean {
    this.#scopes.add(scope);
    return this.#scopes.size === 1;
  }
}
