import type { SamplingParams } from './sampling.ts';

/**
 * How one row (choice) of a request picks its tokens, compiled once per request by `generateTokens`: what an engine
 * needs to draw the row's tokens itself, in its own runtime, instead of handing Lantern each token's distribution. Its
 * sampling values are the logits path's own (SamplingParams: top_p after the temperature, OpenAI's order; penalties
 * over the tokens the row generated, not the prompt's; `logit_bias` added before anything else).
 */
export interface SamplingPlan extends Readonly<SamplingParams> {
  /** This row's 31-bit seed (see rowSeed): the engine mixes in the position, so that each step draws afresh. */
  readonly seed: number;
  /** The output constraint as llama.cpp GBNF (root rule `root`): only tokens it allows are drawn. */
  readonly grammar?: string | undefined;
  /** The alternatives `logprobs` reports beside each drawn token; undefined: no logprobs at all. */
  readonly logprobs?: number | undefined;
}

/**
 * What of a plan an engine's batch draws itself (DecodeBatch.executes): a row runs natively only when its plan needs
 * nothing more. Greedy with nothing else is always covered.
 */
export interface NativeSampling {
  /** Draws at a temperature, from the row's seed. */
  readonly temperature: boolean;
  /** Applies top_p after the temperature, as OpenAI does. */
  readonly nucleus: boolean;
  /** Presence and frequency penalties over the generated tokens. */
  readonly penalties: boolean;
  readonly logitBias: boolean;
  /** Constrains draws with a GBNF grammar. */
  readonly grammar: boolean;
  /** The most alternatives it reports beside a drawn token's logprob; -1: no logprobs. */
  readonly logprobs: number;
}

/** Whether an engine that executes `native` draws the whole of `plan` itself. */
export function executesPlan(native: NativeSampling | undefined, plan: SamplingPlan): boolean {
  if (!native) return false;
  if (plan.temperature > 0 && !native.temperature) return false;
  if (plan.temperature > 0 && plan.topP < 1 && !native.nucleus) return false;
  if ((plan.presencePenalty !== 0 || plan.frequencyPenalty !== 0) && !native.penalties) return false;
  if (plan.logitBias && !native.logitBias) return false;
  if (plan.grammar !== undefined && !native.grammar) return false;
  if (plan.logprobs !== undefined && plan.logprobs > native.logprobs) return false;
  return true;
}

/** A row's step run natively: its plan, and the tokens it generated so far (what its penalties count). */
export interface NativeStep {
  readonly plan: SamplingPlan;
  readonly generated: readonly number[];
}

/**
 * A token an engine drew itself; where its plan wants logprobs, its log probability under the distribution it was drawn
 * from (after the plan's bias, penalties and grammar, at its temperature; 1 for greedy, as OpenAI reports it), and the
 * plan's `logprobs` most likely tokens, most likely first: a handful of numbers, never a vocabulary's.
 */
export interface NativeToken {
  readonly token: number;
  readonly logprob?: number | undefined;
  readonly top?: readonly { readonly token: number; readonly logprob: number }[] | undefined;
}

/** What a forward pass gives of a row's next token: its logits (the logits path), or the token drawn natively. */
export type StepOutput = Float32Array | NativeToken;

/** The greedy plan with nothing else: the one every engine covers (a draft model's proposals). */
export const GREEDY_PLAN: SamplingPlan = Object.freeze({
  temperature: 0,
  topP: 1,
  seed: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
});
