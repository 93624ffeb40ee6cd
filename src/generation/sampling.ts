import type { Random } from './seeded-random.ts';

/** How the next token is picked from a row of logits. */
export interface SamplingParams {
  /** 0: greedy (the logits are left for an argmax). Otherwise the softmax temperature. */
  temperature: number;
  /** Nucleus: only the most likely tokens whose probabilities sum to at least `topP` may be drawn. */
  topP: number;
  presencePenalty: number;
  frequencyPenalty: number;
  logitBias?: LogitBias | undefined;
}

/**
 * `logit_bias` as parallel arrays, built once per request: walking the request's record on every token, for every
 * choice, allocated an array per entry per step (300,000 entries held the engine for minutes).
 */
export interface LogitBias {
  ids: Int32Array;
  values: Float32Array;
}

/** The request's `logit_bias` (token id → bias) as {@link LogitBias}. */
export function logitBiasOf(bias: Readonly<Record<number, number>>): LogitBias {
  const entries = Object.entries(bias);
  return {
    ids: Int32Array.from(entries, ([id]) => Number(id)),
    values: Float32Array.from(entries, ([, value]) => value),
  };
}

/**
 * Applies `logit_bias` and the presence and frequency penalties in place, with the OpenAI API's formula:
 * `logit[t] += bias[t] - count[t] * frequency - (count[t] > 0) * presence`, where `count` counts the tokens
 * generated so far.
 */
export function adjustLogits(logits: Float32Array, params: SamplingParams, counts: ReadonlyMap<number, number>): void {
  if (params.logitBias) {
    const { ids, values } = params.logitBias;
    for (let i = 0; i < ids.length; i++) {
      const t = ids[i]!;
      if (t < logits.length) logits[t] = logits[t]! + values[i]!;
    }
  }
  if (params.presencePenalty !== 0 || params.frequencyPenalty !== 0) {
    for (const [t, count] of counts) {
      logits[t] = logits[t]! - count * params.frequencyPenalty - params.presencePenalty;
    }
  }
}

/**
 * Draws a token from `softmax(logits / temperature)` restricted to the top-p nucleus. `scratch` is a buffer of the
 * vocabulary's size, reused across steps to avoid an allocation per token.
 */
export function sampleToken(
  logits: Float32Array,
  params: SamplingParams,
  random: Random,
  scratch: Float32Array = new Float32Array(logits.length),
): number {
  const sum = nucleus(logits, params, scratch);
  return sum === 0 ? argmax(logits) : drawFrom(scratch, sum, random);
}

/**
 * Writes the unnormalized probabilities of `softmax(logits / temperature)` within the top-p nucleus into `probs` (0
 * outside it), and gives their sum: 0 where the logits have no finite maximum (nothing to draw from).
 */
function nucleus(logits: Float32Array, params: SamplingParams, probs: Float32Array): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  if (max === -Infinity || Number.isNaN(max)) return 0;

  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    const p = Math.exp((logits[i]! - max) / params.temperature);
    probs[i] = p;
    sum += p;
  }

  if (params.topP < 1) {
    // The nucleus is every token at least as likely as the one where the sorted cumulative mass reaches top_p.
    // A native sort of the probabilities alone is much faster than sorting indices with a comparator.
    const sorted = Float32Array.from(probs.subarray(0, logits.length)).sort();
    const target = params.topP * sum;
    let cumulative = 0;
    let threshold = sorted[sorted.length - 1]!;
    for (let i = sorted.length - 1; i >= 0; i--) {
      cumulative += sorted[i]!;
      threshold = sorted[i]!;
      if (cumulative >= target) break;
    }
    sum = 0;
    for (let i = 0; i < logits.length; i++) {
      if (probs[i]! < threshold) probs[i] = 0;
      sum += probs[i]!;
    }
  }
  return sum;
}

/** A token drawn in proportion to `probs` (unnormalized, summing to `sum`). */
function drawFrom(probs: Float32Array, sum: number, random: Random): number {
  let r = random() * sum;
  let last = 0;
  for (let i = 0; i < probs.length; i++) {
    if (probs[i]! === 0) continue;
    last = i;
    r -= probs[i]!;
    if (r < 0) return i;
  }
  return last; // rounding left a sliver of mass: the last candidate takes it
}

export function argmax(values: Float32Array): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}
