/**
 * Keeps constrained output valid UTF-8. XGrammar 0.1.27 accepts byte sequences that are not UTF-8 inside strings
 * (lead bytes F5–F7, overlong or out-of-range four-byte sequences such as `F0 8E` or `F4 90`), which decode to U+FFFD
 * and break `maxLength` and patterns. Byte-level vocabularies have single-byte tokens for all of them, so Lantern
 * masks, at each step, every token whose bytes would not continue valid UTF-8 from where the text stands.
 */

/**
 * A UTF-8 decoder state: 0 at a character boundary; otherwise `remaining * 8 + range`, where `range` says which bytes
 * may come next (0: 80–BF, 1: A0–BF, 2: 80–9F, 3: 90–BF, 4: 80–8F), as in the Unicode standard's table 3-7.
 */
export type Utf8State = number;

const RANGES: readonly (readonly [number, number])[] = [
  [0x80, 0xbf],
  [0xa0, 0xbf],
  [0x80, 0x9f],
  [0x90, 0xbf],
  [0x80, 0x8f],
];

/** The state after `byte`, or -1 when the byte cannot come next. */
export function utf8Step(state: Utf8State, byte: number): Utf8State {
  if (state === 0) {
    if (byte < 0x80) return 0;
    if (byte >= 0xc2 && byte <= 0xdf) return 1 * 8;
    if (byte === 0xe0) return 2 * 8 + 1;
    if (byte === 0xed) return 2 * 8 + 2;
    if (byte >= 0xe1 && byte <= 0xef) return 2 * 8;
    if (byte === 0xf0) return 3 * 8 + 3;
    if (byte >= 0xf1 && byte <= 0xf3) return 3 * 8;
    if (byte === 0xf4) return 3 * 8 + 4;
    return -1;
  }
  const [lo, hi] = RANGES[state % 8]!;
  if (byte < lo || byte > hi) return -1;
  const remaining = Math.floor(state / 8) - 1;
  return remaining === 0 ? 0 : remaining * 8;
}

/** The state after all of `bytes`, or -1. */
export function utf8Run(state: Utf8State, bytes: Uint8Array): Utf8State {
  for (let i = 0; i < bytes.length && state !== -1; i++) state = utf8Step(state, bytes[i]!);
  return state;
}

/**
 * Per vocabulary: where each token leaves the decoder when it starts at a boundary (the common case), precomputed, and
 * which tokens may appear in constrained text at all: special tokens never do, except the reply-ending ones (whose
 * spelling is not part of the text).
 */
export class Utf8Table {
  readonly #bytes: readonly Uint8Array[];
  readonly #fromBoundary: Int8Array;
  /** 1 where a token may come next at a character boundary. */
  readonly #atBoundary: Uint8Array;
  readonly #special: ReadonlySet<number>;

  constructor(
    bytes: readonly Uint8Array[],
    special: ReadonlySet<number> = new Set(),
    stops: ReadonlySet<number> = new Set(),
  ) {
    this.#bytes = bytes;
    this.#special = special;
    this.#fromBoundary = Int8Array.from(bytes, (b) => utf8Run(0, b));
    this.#atBoundary = Uint8Array.from(bytes, (_, t) =>
      special.has(t) ? (stops.has(t) ? 1 : 0) : this.#fromBoundary[t]! >= 0 ? 1 : 0,
    );
  }

  /** Whether token `t` may come next with the decoder in `state`, as a fast predicate for a whole-vocabulary pass. */
  fitsAfter(state: Utf8State): (t: number) => boolean {
    const atBoundary = this.#atBoundary;
    if (state === 0) return (t) => atBoundary[t] === 1;
    // Mid-character: only continuation bytes fit, and no reply-ending token (the character is unfinished).
    return (t) => !this.#special.has(t) && this.next(state, t) !== -1;
  }

  /** The state after `token` from `state`, or -1 when the token would break UTF-8 there. */
  next(state: Utf8State, token: number): Utf8State {
    if (state === 0) return this.#fromBoundary[token] ?? -1;
    const bytes = this.#bytes[token];
    return bytes ? utf8Run(state, bytes) : -1;
  }
}
