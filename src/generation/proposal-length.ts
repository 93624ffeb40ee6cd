/**
 * How many tokens a speculating row proposes next, adapted to how many of its last proposal the model accepted: a
 * proposal taken whole doubles the next one; one taken in part sets the next to what was accepted plus one; after one
 * of which nothing was taken, the row skips 1, 2, 4, … steps before it proposes again. Free text, which a proposer
 * rarely guesses, then costs almost nothing. Each proposer (prompt lookup, a draft model) keeps one per row.
 */
export class ProposalLength {
  readonly #bounds: { start: number; min: number; max: number };
  #length: number;
  /** Steps to skip before proposing again, after a proposal of which nothing was accepted. */
  #skip = 0;
  #misses = 0;
  /** The last proposal's length, and how many of its tokens the model has accepted. */
  #last: { proposed: number; accepted: number } | undefined;
  /** Over the request: tokens proposed, and accepted. */
  proposed = 0;
  accepted = 0;

  constructor(bounds: { start: number; min: number; max: number } = { start: 4, min: 2, max: 16 }) {
    this.#bounds = bounds;
    this.#length = bounds.start;
  }

  /** The length of the next proposal, at most `limit`: 0 where this step skips. */
  next(limit: number): number {
    this.#learn();
    if (this.#skip > 0) {
      this.#skip -= 1;
      return 0;
    }
    return Math.min(this.#length, limit);
  }

  /** A proposal of `count` tokens was made (after `next`). */
  made(count: number): void {
    if (count === 0) return;
    this.#last = { proposed: count, accepted: 0 };
    this.proposed += count;
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
    const { start, min, max } = this.#bounds;
    if (accepted === 0) {
      this.#misses += 1;
      this.#skip = Math.min(MAX_SKIP, 2 ** (this.#misses - 1));
      this.#length = start;
      return;
    }
    this.#misses = 0;
    this.#length = accepted === last.proposed ? Math.min(max, this.#length * 2) : Math.max(min, accepted + 1);
  }
}

/** The most steps a row goes without proposing after a run of failed proposals. */
const MAX_SKIP = 32;
