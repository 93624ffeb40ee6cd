import type { SamplingConfig } from '@wllama/wllama/esm/index.js';
import type { NativeSampling, NativeStep, SamplingPlan } from '../../generation/sampling-plan.ts';

/**
 * What of a plan wllama 2.3.7's own sampler draws (one llama.cpp sampler chain per wllama instance, in the order logit
 * bias, penalties, top-k, top-p, min-p, temperature, the draw):
 * - `logit_bias`, added to the logits, on any token, the end tokens included;
 * - presence and frequency penalties over the row's generated tokens: llama.cpp's penalty sampler subtracts
 *   `count × frequency + (count > 0) × presence`, OpenAI's formula, with its repetition penalty left at 1 and its window
 *   the whole context (see {@link samplerConfig}).
 * Greedy only: wllama seeds its sampler with the seed given at load, never a request's, so a draw at a temperature
 * could not follow the request's seed (the logits path draws those). No grammar: wllama 2.3.7 follows a token in its
 * sampler with `wcommon_sampler_accept(…, accept_grammar = false)` in both `sampling_accept` and `sampling_init`'s past
 * tokens (cpp/actions.hpp), so its grammar never leaves its root: each draw would be checked against the grammar's
 * first character. No logprobs: `getLogits` gives the model's raw softmax sorted over the whole vocabulary, not the
 * distribution after bias and penalties, and its sort is a third of a step on a 32,000-token model.
 */
export const WLLAMA2_SAMPLING: NativeSampling = Object.freeze({
  temperature: false,
  nucleus: false,
  penalties: true,
  logitBias: true,
  grammar: false,
  logprobs: -1,
});

/** The calls of wllama 2 (2.3.7) its sampler is driven through. */
export interface WllamaSamplerCalls {
  samplingInit(config: SamplingConfig, pastTokens?: number[]): Promise<void>;
  samplingAccept(tokens: number[]): Promise<void>;
}

/**
 * A plan (one WLLAMA2_SAMPLING covers) as wllama's sampler configuration: greedy, its bias, and its penalties counted
 * over a window of the whole context (`penalty_last_n`: llama.cpp's default, 64 tokens, would forget the start of a
 * long reply; -1 means no window at all to its penalty sampler, not the context).
 */
export function samplerConfig(plan: SamplingPlan, contextLength: number, vocabularySize: number): SamplingConfig {
  const config: SamplingConfig = { temp: 0 };
  if (plan.logitBias) {
    const { ids, values } = plan.logitBias;
    const bias: { token: number; bias: number }[] = [];
    // As the logits path, which skips ids past the vocabulary.
    for (let i = 0; i < ids.length; i++) if (ids[i]! < vocabularySize) bias.push({ token: ids[i]!, bias: values[i]! });
    if (bias.length > 0) config.logit_bias = bias;
  }
  if (penalized(plan)) {
    Object.assign(config, {
      penalty_last_n: contextLength,
      penalty_repeat: 1,
      penalty_freq: plan.frequencyPenalty,
      penalty_present: plan.presencePenalty,
    });
  }
  return config;
}

const penalized = (plan: SamplingPlan) => plan.presencePenalty !== 0 || plan.frequencyPenalty !== 0;

/**
 * wllama's one sampler, kept on the plan of the row it draws for. It is set again only for a configuration other than
 * the one it holds, or where its penalties' history is not the row's (a new row, or a token the core wrote in place of
 * a draw); tokens the row has that the sampler did not follow (its own draws, and the core's forced tokens) are handed
 * to it before the next draw, so that its penalties count exactly the row's generated tokens. A configuration without
 * penalties keeps no history: nothing is handed over.
 */
export class WllamaSampler {
  readonly #calls: WllamaSamplerCalls;
  readonly #contextLength: number;
  readonly #vocabularySize: number;
  /** The configuration the sampler holds, as a key; undefined: not known (never set, or a call failed). */
  #key: string | undefined;
  /** The tokens its penalties count since it was set (empty where it counts none). */
  #followed: number[] = [];
  /** The last plan set and its key: a row's plan is one object for all its steps. */
  #plan: { plan: SamplingPlan; key: string; config: SamplingConfig } | undefined;

  constructor(calls: WllamaSamplerCalls, contextLength: number, vocabularySize: number) {
    this.#calls = calls;
    this.#contextLength = contextLength;
    this.#vocabularySize = vocabularySize;
  }

  /**
   * The calls that put the sampler on `step` before its draw, sent at once (wllama's worker answers in the order it is
   * asked, so they run before a draw sent after them, and cost no round trip of their own).
   */
  prepare({ plan, generated }: NativeStep): Promise<void>[] {
    if (this.#plan?.plan !== plan) {
      const config = samplerConfig(plan, this.#contextLength, this.#vocabularySize);
      this.#plan = { plan, key: JSON.stringify(config), config };
    }
    const { key, config } = this.#plan;
    const counts = penalized(plan);
    if (key !== this.#key || (counts && !this.#extends(generated))) {
      this.#key = key;
      this.#followed = counts ? [...generated] : [];
      return [this.#guard(this.#calls.samplingInit(config, this.#followed.slice()))];
    }
    if (!counts || generated.length === this.#followed.length) return [];
    const caught = generated.slice(this.#followed.length);
    this.#followed.push(...caught);
    return [this.#guard(this.#calls.samplingAccept(caught))];
  }

  /** Forgets what the sampler holds (a call to wllama failed): the next step sets it again. */
  forget(): void {
    this.#key = undefined;
  }

  /**
   * Whether the row's tokens extend those the sampler followed. A row's first draw has no tokens (a new row sets the
   * sampler again); after that only the last one followed can differ from the row's (a token the core wrote in place
   * of a draw): each before it was checked a step earlier.
   */
  #extends(generated: readonly number[]): boolean {
    const followed = this.#followed;
    if (generated.length === 0) return followed.length === 0;
    if (generated.length < followed.length) return false;
    return followed.length === 0 || generated[followed.length - 1] === followed.at(-1);
  }

  #guard(call: Promise<void>): Promise<void> {
    return call.catch((error: unknown) => {
      this.forget();
      throw error;
    });
  }
}
