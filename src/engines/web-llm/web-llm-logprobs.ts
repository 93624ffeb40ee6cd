import type { LogitProcessor } from '@mlc-ai/web-llm';
import type { GeneratedTokenLogprob } from '../../engine-interface/index.ts';
import { tokenLogprob, type TokenText } from '../../generation/logprobs.ts';
import { adjustLogits, logitBiasOf, type SamplingParams } from '../../generation/sampling.ts';

/** What web-llm's grammar mask writes over a masked token's logit (`apply_bitmask_inplace`: float32's lowest). */
const MASKED = -3.4e38;

/** The sampling values of one generation that weigh on its distribution, as web-llm is sent them. */
export interface LogprobRequest {
  /** How many alternatives each token lists. */
  top: number;
  /** The sampling temperature sent (0: greedy, reported at 1). */
  temperature: number;
  logitBias?: Readonly<Record<string, number>> | undefined;
  presencePenalty?: number | undefined;
  frequencyPenalty?: number | undefined;
  /** How tokens are spelled (their text and exact bytes). */
  words: TokenText;
}

/**
 * Log probabilities by Lantern's rule (src/generation/logprobs.ts, the transformers.js engine's), read inside
 * web-llm as a LogitProcessor: web-llm's own are computed at the sampling temperature (at temperature 0, 0 for the
 * token and -Infinity for the others), list tokens the grammar masked, spell a token by its text alone (U+FFFD for
 * part of a character), and drop the tokens of a chunk it holds back until a character is whole (lib/index.js
 * `sampleFromRawLogits`, `getTokenLogprob`, `makeStreamDeltaChunk`).
 *
 * web-llm calls a model's processor (`logitProcessorRegistry`) at every step with the logits on the CPU, after its
 * grammar mask and before `logit_bias`, the penalties and the temperature (`sampleFromRawLogits`, 13561; the processor at 13686), then with
 * the token it sampled (`processSampledToken`, in `commitSamplerState`, before the token's chunk is made). The
 * recorder keeps that step's logits, adds `logit_bias` and the penalties as web-llm then does (mlc-llm's
 * `apply_penalty_inplace`: `logit -= presence + count × frequency` for each token generated so far, the formula of
 * Lantern's own sampler, whose `adjustLogits` applies them here; repetition is sent neutral), and reports the token
 * from them: the distribution at the sampling temperature (1 when greedy), masked tokens left out. It leaves the
 * logits as they are. One generation at a time: web-llm's lock runs them one by one.
 *
 * web-llm takes a processor only when it loads a model (`logitProcessorRegistry`), and then runs it at every step of
 * every generation: a copy of the logits to the CPU, a wait for the GPU, and two copies back (about 600 KB each way for
 * a 150k vocabulary, and a new array each step), whether anything reads them or not. So the recorder is registered at
 * load and then attached to the model's pipeline (WebLLMPipeline) only for a generation that asks for log
 * probabilities. Nothing else reads the logits: the tokens sampled are read from the pipeline's output ids.
 */
export class LogprobRecorder implements LogitProcessor {
  #request: LogprobRequest | undefined;
  /** The request's `logit_bias` and penalties, as `adjustLogits` takes them. */
  #adjust: SamplingParams | undefined;
  #logits: Float32Array | undefined;
  readonly #counts = new Map<number, number>();
  #pending: GeneratedTokenLogprob[] = [];

  /** Records the generation about to start; `undefined` records nothing (no log probabilities asked for). */
  begin(request: LogprobRequest | undefined): void {
    this.#request = request;
    this.#adjust = request && {
      temperature: request.temperature,
      topP: 1,
      presencePenalty: request.presencePenalty ?? 0,
      frequencyPenalty: request.frequencyPenalty ?? 0,
      logitBias: request.logitBias && logitBiasOf(request.logitBias),
    };
    this.#logits = undefined;
    this.#counts.clear();
    this.#pending = [];
  }

  /** The entries of the tokens sampled since the last call. */
  take(): GeneratedTokenLogprob[] {
    const taken = this.#pending;
    this.#pending = [];
    return taken;
  }

  processLogits(logits: Float32Array): Float32Array {
    if (this.#request) {
      this.#logits ??= new Float32Array(logits.length);
      this.#logits.set(logits);
    }
    return logits;
  }

  processSampledToken(token: number): void {
    const request = this.#request;
    const logits = this.#logits;
    if (!request || !this.#adjust || !logits) return;
    adjustLogits(logits, this.#adjust, this.#counts);
    for (let i = 0; i < logits.length; i++) if (logits[i]! <= MASKED) logits[i] = -Infinity;
    this.#pending.push(tokenLogprob(logits, token, request.temperature, request.top, request.words));
    this.#counts.set(token, (this.#counts.get(token) ?? 0) + 1);
  }

  resetState(): void {}
}
