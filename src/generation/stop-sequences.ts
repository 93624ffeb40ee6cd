/**
 * Finds stop sequences in streamed text, which may arrive split across any number of tokens. Text that could still
 * turn out to be the start of a stop sequence is held back, so a stop sequence never leaks into the output.
 *
 * @example
 * const m = new StopSequenceMatcher(['\n\nUser:']);
 * m.push('Hi!\n');    // { text: 'Hi!', stopped: false }  ('\n' held back)
 * m.push('\nUser:');  // { text: '', stopped: true }
 */
export class StopSequenceMatcher {
  readonly #stops: string[];
  #held = '';

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s.length > 0);
  }

  /** Feeds generated text; returns what is safe to emit now and whether a stop sequence has matched. */
  push(text: string): { text: string; stopped: boolean } {
    const buffer = this.#held + text;
    let cut = -1;
    for (const stop of this.#stops) {
      const at = buffer.indexOf(stop);
      if (at !== -1 && (cut === -1 || at < cut)) cut = at;
    }
    if (cut !== -1) {
      this.#held = '';
      return { text: buffer.slice(0, cut), stopped: true };
    }
    const keep = this.#longestStopPrefixSuffix(buffer);
    this.#held = buffer.slice(buffer.length - keep);
    return { text: buffer.slice(0, buffer.length - keep), stopped: false };
  }

  /** At the end of generation: the held-back text, which turned out not to be a stop sequence. */
  flush(): string {
    const rest = this.#held;
    this.#held = '';
    return rest;
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some stop sequence. */
  #longestStopPrefixSuffix(text: string): number {
    let best = 0;
    for (const stop of this.#stops) {
      for (let n = Math.min(stop.length - 1, text.length); n > best; n--) {
        if (text.endsWith(stop.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
