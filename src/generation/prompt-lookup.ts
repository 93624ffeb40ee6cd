import { ProposalLength } from './proposal-length.ts';

/**
 * Prompt lookup: speculation with no draft model (n-gram speculation, as llama.cpp's lookup decoding and vLLM's
 * `[ngram]` speculator do it). Much of what a model writes repeats its input: a quoted passage, an edited file, JSON
 * extracted from text, the last turn restated. The tokens that followed the last few tokens generated, where they
 * appeared before (in the prompt or the reply so far, or in the client's own prediction), are proposed as the next
 * ones, and the decode loop checks them all in one forward pass.
 *
 * The proposal's length adapts to how much of the last one the model accepted (ProposalLength), so that free text,
 * which rarely repeats, costs almost nothing.
 */
export class PromptLookup {
  /** The client's prediction (OpenAI's Predicted Outputs), searched first. */
  readonly #prediction: readonly number[];
  readonly #length = new ProposalLength();

  constructor(prediction: readonly number[] = []) {
    this.#prediction = prediction;
  }

  /** Over the request: tokens proposed, and accepted. */
  get proposed(): number {
    return this.#length.proposed;
  }
  get accepted(): number {
    return this.#length.accepted;
  }

  /**
   * The tokens likely to come after `context` (the prompt's `promptLength` tokens, then what was generated), at most
   * `limit`.
   */
  propose(context: readonly number[], promptLength: number, limit: number): number[] {
    const generated = context.length - promptLength;
    const length = this.#length.next(limit);
    if (length === 0) return [];
    let proposal: number[] = [];
    if (this.#prediction.length > 0) {
      // Nothing generated yet: the prediction's own beginning.
      proposal =
        generated === 0
          ? this.#prediction.slice(0, length)
          : continuation(this.#prediction, context, this.#prediction.length, length);
    }
    if (proposal.length === 0) proposal = continuation(context, context, context.length - 1, length);
    this.#length.made(proposal.length);
    return proposal;
  }

  /** The model drew the next token of the last proposal. */
  accept(): void {
    this.#length.accept();
  }
}

/** The n-grams matched: the longest that occurs wins, and an n-gram of one token is too common to be worth a pass. */
const MAX_NGRAM = 4;
const MIN_NGRAM = 2;

/**
 * The tokens that follow, in `source` (its first `end` tokens), the latest earlier occurrence of `context`'s last
 * n-gram (the longest of MAX_NGRAM…MIN_NGRAM tokens that occurs), at most `length` of them.
 */
function continuation(source: readonly number[], context: readonly number[], end: number, length: number): number[] {
  for (let n = Math.min(MAX_NGRAM, context.length); n >= MIN_NGRAM; n--) {
    const tail = context.length - n;
    // The latest occurrence that ends before `end` and leaves something after it.
    for (let at = Math.min(end, source.length - 1) - n; at >= 0; at--) {
      let i = 0;
      while (i < n && source[at + i] === context[tail + i]) i++;
      if (i === n) {
        const next = source.slice(at + n, Math.min(at + n + length, source.length));
        // Positions that are not tokens (an image's, negative) are never proposed.
        const image = next.findIndex((token) => token < 0);
        return image < 0 ? next : next.slice(0, image);
      }
    }
  }
  return [];
}
