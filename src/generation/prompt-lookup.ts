/**
 * Prompt lookup: speculation with no draft model (n-gram speculation, as llama.cpp's lookup decoding and vLLM's
 * `[ngram]` speculator do it). Much of what a model writes repeats its input: a quoted passage, an edited file, JSON
 * extracted from text, the last turn restated. The tokens that followed the last few tokens generated, where they
 * appeared before (in the prompt or the reply so far, or in the client's own prediction), are proposed as the next
 * ones, and the decode loop checks them all in one forward pass.
 *
 * The proposal's length adapts to how much of the last one the model accepted, and a row whose proposals keep failing
 * stops proposing for a while (longer each time), so that free text, which rarely repeats, costs almost nothing.
 */
export class PromptLookup {
  /** The client's prediction (OpenAI's Predicted Outputs), searched first. */
  readonly #prediction: readonly number[];
  /** How many tokens to propose next. */
  #length = START_LENGTH;
  /** Steps to skip before proposing again, after a proposal of which nothing was accepted. */
  #skip = 0;
  #misses = 0;
  /** The last proposal's length, and how many of its tokens the model has accepted. */
  #last: { proposed: number; accepted: number } | undefined;
  /** Over the request: tokens proposed, and accepted. */
  proposed = 0;
  accepted = 0;

  constructor(prediction: readonly number[] = []) {
    this.#prediction = prediction;
  }

  /**
   * The tokens likely to come after `context` (the prompt's `promptLength` tokens, then what was generated), at most
   * `limit`.
   */
  propose(context: readonly number[], promptLength: number, limit: number): number[] {
    const generated = context.length - promptLength;
    this.#learn();
    if (this.#skip > 0) {
      this.#skip -= 1;
      return [];
    }
    const length = Math.min(this.#length, limit);
    let proposal: number[] = [];
    if (this.#prediction.length > 0) {
      // Nothing generated yet: the prediction's own beginning.
      proposal =
        generated === 0
          ? this.#prediction.slice(0, length)
          : continuation(this.#prediction, context, this.#prediction.length, length);
    }
    if (proposal.length === 0) proposal = continuation(context, context, context.length - 1, length);
    if (proposal.length > 0) {
      this.#last = { proposed: proposal.length, accepted: 0 };
      this.proposed += proposal.length;
    }
    return proposal;
  }

  /** The model drew the next token of the last proposal. */
  accept(): void {
    if (this.#last) this.#last.accepted += 1;
    this.accepted += 1;
  }

  /** Adapts to the last proposal's outcome. */
  #learn(): void {
    const last = this.#last;
    if (!last) return;
    this.#last = undefined;
    const { accepted } = last;
    if (accepted === 0) {
      this.#misses += 1;
      this.#skip = Math.min(MAX_SKIP, 2 ** (this.#misses - 1));
      this.#length = START_LENGTH;
      return;
    }
    this.#misses = 0;
    this.#length =
      accepted === last.proposed ? Math.min(MAX_LENGTH, this.#length * 2) : Math.max(MIN_LENGTH, accepted + 1);
  }
}

/** Tokens proposed first, and the bounds of the adapted length. */
const START_LENGTH = 4;
const MIN_LENGTH = 2;
const MAX_LENGTH = 16;
/** The most steps a row goes without proposing after a run of failed proposals. */
const MAX_SKIP = 32;
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
