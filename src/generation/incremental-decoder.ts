/**
 * Turns token ids, one at a time, into the text each adds. Decoding tokens one by one is wrong for most tokenizers:
 * byte-level tokens can split a UTF-8 character (decoding to U+FFFD until the rest arrives), and SentencePiece
 * drops the leading space of the first token it decodes. So each step decodes a window that starts one step back
 * and emits what it adds beyond that step's text (the method of vLLM's detokenizer).
 */
export class IncrementalDecoder {
  readonly #decode: (ids: number[]) => string;
  readonly #ids: number[] = [];
  #prefixOffset = 0;
  #readOffset = 0;

  /** @param decode - decodes ids to text, skipping special tokens. */
  constructor(decode: (ids: number[]) => string) {
    this.#decode = decode;
  }

  /** Adds a token; returns the text it completes, possibly empty while a character is still incomplete. */
  push(id: number): string {
    this.#ids.push(id);
    const prefix = this.#decode(this.#ids.slice(this.#prefixOffset, this.#readOffset));
    const full = this.#decode(this.#ids.slice(this.#prefixOffset));
    if (full.length <= prefix.length || full.endsWith('\uFFFD')) return '';
    this.#prefixOffset = this.#readOffset;
    this.#readOffset = this.#ids.length;
    return full.slice(prefix.length);
  }

  /** At the end: whatever is still held back (an incomplete character decodes as U+FFFD). */
  flush(): string {
    if (this.#readOffset === this.#ids.length) return '';
    const prefix = this.#decode(this.#ids.slice(this.#prefixOffset, this.#readOffset));
    const full = this.#decode(this.#ids.slice(this.#prefixOffset));
    this.#readOffset = this.#ids.length;
    return full.slice(prefix.length);
  }
}
