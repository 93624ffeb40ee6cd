/**
 * Cuts streamed text into sentences as they complete, so speech for the first sentence is asked for while the model
 * is still writing the next. `Intl.Segmenter` decides where sentences end (its last segment may still grow, so it is
 * held back until more text comes or the stream ends).
 */

/** A sentence held back this long without an end is cut at its last clause break: speech should not wait for it. */
const LONGEST_SENTENCE = 240;

export class SentenceCutter {
  #pending = '';
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
    this.#pending = last;
    return done.filter((s) => s.trim().length > 0);
  }

  /** The stream ended: what is left, as the last piece (or nothing). */
  flush(): string[] {
    const rest = this.#pending;
    this.#pending = '';
    return rest.trim().length > 0 ? [rest] : [];
  }
}
