/** Where a reasoning model's reply is: before its thought, inside it, between it and the answer, or in the answer. */
type Place = 'opening' | 'thought' | 'gap' | 'answer';

/** The tag that opens a thought. */
export const THOUGHT_START = '<think>';
const OPEN = THOUGHT_START;
/** The tag that ends a thought (Qwen3's, DeepSeek-R1's). */
export const THOUGHT_END = '</think>';

/** The longest end of `text` that begins `tag` (what may still become it when more text comes). */
function partialTagAtEnd(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (tag.startsWith(text.slice(text.length - n))) return n;
  }
  return 0;
}

/**
 * Splits a reasoning model's streamed reply into its thought and its answer, however the pieces fall: the reply is
 * `<think>` (which a template may already have written into the prompt, as DeepSeek-R1's do), the thought, `</think>`,
 * white space, then the answer (the Qwen3 and DeepSeek-R1 form, which vLLM's and llama.cpp's reasoning parsers read).
 * The tags and the white space around the thought are dropped; a reply that never closes its thought is all thought
 * (it ran out of tokens while thinking, as OpenAI's reasoning models report an empty answer then).
 */
export class ThoughtSplitter {
  #place: Place = 'opening';
  /** Text held back: what may still be a tag, or white space that may end the thought. */
  #held = '';
  /** Whether any of the thought has gone out (white space before it is dropped). */
  #begun = false;

  /** Whether the answer has begun (or the gap before it): later text is all answer. */
  get inAnswer(): boolean {
    return this.#place === 'gap' || this.#place === 'answer';
  }

  /** Whether the answer's text has begun: the tokens from here on are the answer's. */
  get answering(): boolean {
    return this.#place === 'answer';
  }

  /** The next piece of the reply, as the part of it that is thought and the part that is answer. */
  push(piece: string): { thought: string; answer: string } {
    if (this.#place === 'answer') return { thought: '', answer: piece };
    let text = this.#held + piece;
    this.#held = '';
    let thought = '';
    if (this.#place === 'opening') {
      const start = text.trimStart();
      if (start === '' || (start.length < OPEN.length && OPEN.startsWith(start))) {
        this.#held = text;
        return { thought: '', answer: '' };
      }
      text = start.startsWith(OPEN) ? start.slice(OPEN.length) : start;
      this.#place = 'thought';
    }
    if (this.#place === 'thought') {
      if (!this.#begun) text = text.trimStart();
      const end = text.indexOf(THOUGHT_END);
      if (end === -1) {
        // Held back: what may begin the closing tag, and trailing white space (dropped if the tag follows).
        const partial = partialTagAtEnd(text, THOUGHT_END);
        const body = text.slice(0, text.length - partial);
        const kept = body.trimEnd();
        this.#held = body.slice(kept.length) + text.slice(text.length - partial);
        if (kept) this.#begun = true;
        return { thought: kept, answer: '' };
      }
      thought = text.slice(0, end).trimEnd();
      text = text.slice(end + THOUGHT_END.length);
      this.#place = 'gap';
    }
    // The gap: white space between the thought and the answer.
    const answer = text.trimStart();
    if (answer !== '') this.#place = 'answer';
    return { thought, answer };
  }

  /** The end of the reply: a thought still open keeps what was held (but trailing white space). */
  flush(): string {
    const held = this.#held;
    this.#held = '';
    if (this.inAnswer) return '';
    const text = this.#place === 'opening' ? held.trimStart() : held;
    return text.trimEnd();
  }
}
