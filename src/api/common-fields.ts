import * as z from 'zod';
import { invalidRequest } from './errors.ts';
import type { Limits } from './options.ts';
import { optional } from './request-validation.ts';

/*
 * The request fields that the generation routes share (chat completions, completions, and the Responses API's first
 * three), validated alike, and their conversion to the engine request's terms.
 */

/** The shared fields of a generation body, in the order their problems are reported. */
export function samplingFields(limits: Limits) {
  return {
    model: z.string().min(1),
    temperature: optional(z.number().min(0).max(2)),
    top_p: optional(z.number().min(0).max(1)),
    presence_penalty: optional(z.number().min(-2).max(2)),
    frequency_penalty: optional(z.number().min(-2).max(2)),
    // Counted before its entries are checked: a map of 300,000 entries is refused without walking it.
    logit_bias: optional(
      z
        .unknown()
        .refine(
          (bias) => typeof bias !== 'object' || bias === null || Object.keys(bias).length <= limits.maxLogitBias,
          {
            error: (issue) =>
              `Invalid 'logit_bias': at most ${limits.maxLogitBias} token ids may be biased, but ` +
              `${Object.keys(issue.input as object).length} were given.`,
            abort: true,
          },
        )
        .pipe(
          z.record(
            z.string().regex(/^\d+$/, 'The keys of `logit_bias` must be token ids: integers, written as strings.'),
            z.number().min(-100).max(100),
          ),
        ),
    ),
    n: optional(z.int().min(1).max(limits.maxChoices)),
    stream: optional(z.boolean()),
    stream_options: optional(z.object({ include_usage: optional(z.boolean()) })),
    stop: optional(z.union([z.string().min(1), z.array(z.string().min(1)).max(limits.maxStopSequences)])),
    // The OpenAI API takes any 64-bit integer; JSON numbers past 2^53 arrive rounded, and still must be accepted.
    seed: optional(
      z
        .number()
        .refine(
          (x) => Number.isInteger(x) && x >= -(2 ** 63) && x <= 2 ** 64,
          "Invalid 'seed': expected an integer of at most 64 bits.",
        ),
    ),
  };
}

type SamplingBody = { [K in keyof ReturnType<typeof samplingFields>]?: z.output<ReturnType<typeof samplingFields>[K]> };

/**
 * The engine request's sampling fields, with the OpenAI API's defaults (temperature and top_p 1, no penalties), and
 * what a streamed answer carries. `stream_options` without `stream` is refused as the OpenAI API refuses it.
 */
export function samplingOf(p: SamplingBody) {
  if (p.stream_options != null && p.stream !== true) {
    throw invalidRequest('`stream_options` is only allowed when `stream` is true.', 'stream_options');
  }
  return {
    stream: p.stream === true,
    includeUsage: p.stream_options?.include_usage === true,
    request: {
      temperature: p.temperature ?? 1,
      topP: p.top_p ?? 1,
      presencePenalty: p.presence_penalty ?? 0,
      frequencyPenalty: p.frequency_penalty ?? 0,
      stop: p.stop == null ? [] : typeof p.stop === 'string' ? [p.stop] : p.stop,
      n: p.n ?? 1,
      ...(p.seed != null && { seed: foldSeed(p.seed) }),
      ...(p.logit_bias != null && {
        logitBias: Object.fromEntries(Object.entries(p.logit_bias).map(([id, bias]) => [Number(id), bias])),
      }),
    },
  };
}

/**
 * A seed of up to 64 bits as the engines' seed, a safe integer: safe seeds as they are; others by their 64-bit two's
 * complement with the 11 bits above the 53rd folded into the low ones, so that nearby large seeds stay apart.
 */
export function foldSeed(seed: number): number {
  if (Number.isSafeInteger(seed)) return seed;
  const bits = BigInt.asUintN(64, BigInt(seed));
  return Number((bits & ((1n << 53n) - 1n)) ^ (bits >> 53n));
}
