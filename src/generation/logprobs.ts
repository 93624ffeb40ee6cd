import type { GeneratedTokenLogprob } from '../engine-interface/index.ts';
import type { NativeToken } from './sampling-plan.ts';

/** What `logprobs` reports a token as: its text (alone) and its exact bytes. */
export interface TokenText {
  text(token: number): string;
  bytes(token: number): Uint8Array;
}

/**
 * The log probability of `token` and of the `top` most likely tokens, under `softmax(logits / temperature)`: the
 * distribution the token was drawn from, after penalties, `logit_bias` and any constraint (masked tokens are
 * -Infinity and never listed). Greedy decoding (temperature 0) reports the distribution at temperature 1, as the
 * OpenAI API does. `top_p` is not applied: a token outside the nucleus still has its probability.
 */
export function tokenLogprob(
  logits: Float32Array,
  token: number,
  temperature: number,
  top: number,
  words: TokenText,
): GeneratedTokenLogprob {
  const t = temperature > 0 ? temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i]! - max) / t);
  const logZ = Math.log(sum);
  const logprob = (i: number) => (logits[i]! - max) / t - logZ;
  const entry = (i: number) => ({ token: words.text(i), logprob: logprob(i), bytes: [...words.bytes(i)] });
  return { ...entry(token), topLogprobs: topIndices(logits, top).map(entry) };
}

/** The indices of the `k` largest finite values, largest first (ties: lower index first). */
export function topIndices(values: Float32Array, k: number): number[] {
  const best: number[] = [];
  if (k <= 0) return best;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v === -Infinity || Number.isNaN(v)) continue;
    if (best.length === k && v <= values[best[k - 1]!]!) continue;
    let at = best.length < k ? best.length : k - 1;
    while (at > 0 && values[best[at - 1]!]! < v) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

/** A token an engine drew itself as `logprobs` reports it, spelled by `words`, with `top` of its alternatives. */
export function nativeLogprob(drawn: NativeToken, top: number, words: TokenText): GeneratedTokenLogprob {
  if (drawn.logprob === undefined || (top > 0 && !drawn.top)) {
    throw new Error('the engine drew a token without the logprobs its plan wants');
  }
  const entry = (token: number, logprob: number) => ({
    token: words.text(token),
    logprob,
    bytes: [...words.bytes(token)],
  });
  return {
    ...entry(drawn.token, drawn.logprob),
    topLogprobs: (drawn.top ?? []).slice(0, top).map((t) => entry(t.token, t.logprob)),
  };
}
