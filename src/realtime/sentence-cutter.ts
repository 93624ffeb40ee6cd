/**
 * Cuts streamed text into sentences as they complete, so speech for the first sentence is asked for while the model
 * is still writing the next. `Intl.Segmenter` decides where sentences end (its last segment may still grow, so it is
 * held back until more text comes or the stream ends).
 */

/**
 * The first piece of an answer may end at a clause break (a comma, a semicolon, a colon, a dash) once it is this long:
 * the first audio is what the user waits for, and a clause is a natural place to pause.
 */
const FIRST_CLAUSE = 20;
const CLAUSE_BREAK = /[,;:\u2014](\s)/g;

/** A sentence held back this long without an end is cut at its last clause break: speech should not wait for it. */
const LONGEST_SENTENCE = 240;

export class SentenceCutter {
  #pending = '';
  #first = true;
  readonly #segmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });

  /** Adds a text delta; returns the sentences it completed (with their trailing spaces). */
  push(delta: string): string[] {
    this.#pending += delta;
    const segments = [...this.#segmenter.segment(this.#pending)].map((s) => s.segment);
    const done: string[] = segments.slice(0, -1);
    let last = segments.at(-1) ?? '';
    if (last.length > LONGEST_SENTENCE) {
      const cut = Math.max(
        last.lastIndexOf(', '),
        last.lastIndexOf('; '),
        last.lastIndexOf(': '),
        last.lastIndexOf(' '),
      );
      if (cut > 0) {
        done.push(last.slice(0, cut + 1));
        last = last.slice(cut + 1);
      }
    }
    if (this.#first && done.length === 0) {
      // The earliest clause break past FIRST_CLAUSE characters; the rest waits for its sentence as usual.
      for (const match of last.matchAll(CLAUSE_BREAK)) {
        const cut = match.index + 1;
        if (cut < FIRST_CLAUSE) continue;
        done.push(last.slice(0, cut + 1));
        last = last.slice(cut + 1);
        break;
      }
    }
    this.#pending = last;
    const pieces = done.filter((s) => s.trim().length > 0);
    if (pieces.length > 0) this.#first = false;
    return pieces;
  }

  /** The stream ended: what is left, as the last piece (or nothing). */
  flush(): string[] {
    const rest = this.#pending;
    this.#pending = '';
    return rest.trim().length > 0 ? [rest] : [];
  }
}
