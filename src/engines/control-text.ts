/**
 * Text a request supplies (its messages, tools, tool results and the passages file_search quotes) is read as text,
 * never as control tokens: a user who writes `<|im_end|>` must not end their turn and open a system one. The chat
 * template itself writes the control tokens, as text, and the tokenizer reads its prompt with them parsed; so before the
 * template renders, each control token's spelling in the supplied strings is swapped for a private-use character that
 * no tokenizer reads as a control token, and swapped back just before the plain-text stages of tokenization (see each
 * engine's use). A request whose strings spell no control token is rendered and tokenized exactly as it always was.
 */
export interface HiddenControlText<T> {
  /** The value with each control token's spelling in its strings replaced by a private-use character of its own. */
  value: T;
  /**
   * Turns those characters in a text rendered from `value` back into the spellings; absent when nothing was hidden
   * (the value is the one given).
   */
  reveal: ((text: string) => string) | undefined;
}

/** The first and last private-use characters of the Basic Multilingual Plane, from which stand-ins are taken. */
const PRIVATE_USE_FIRST = 0xe000;
const PRIVATE_USE_LAST = 0xf8ff;

/** A tokenizer's control tokens' spellings, which {@link ControlSpellings.hide} hides in the text a request supplies. */
export class ControlSpellings {
  /** Any one of the spellings, longest first (where one starts with another, `<|im_start|>` and `<|im_s`…, the whole). */
  readonly #spelled: RegExp | undefined;

  constructor(controls: Iterable<string>) {
    const spellings = [...new Set(controls)].filter((c) => c.length > 0).sort((a, b) => b.length - a.length);
    // One expression for all of them: a request's text is searched once, not once a spelling (Llama 3 has 256).
    this.#spelled = spellings.length ? new RegExp(spellings.map(escapeRegExp).join('|'), 'g') : undefined;
  }

  /**
   * Hides the spellings in every string of `value` (plain objects and arrays, walked through). Each spelling gets a
   * private-use character found in none of the strings nor in `avoid` (the chat template's source, whose own text must
   * come back unchanged).
   */
  hide<T>(value: T, avoid = ''): HiddenControlText<T> {
    const spelled = this.#spelled;
    if (!spelled) return { value, reveal: undefined };
    const strings: string[] = [];
    const found = new Set<string>();
    walkStrings(value, (text) => {
      strings.push(text);
      for (const [spelling] of text.matchAll(spelled)) found.add(spelling);
      return text;
    });
    if (found.size === 0) return { value, reveal: undefined };
    const taken = new Set([...strings.join(''), ...avoid]);
    const standIn = new Map<string, string>();
    const spellingOf = new Map<string, string>();
    let code = PRIVATE_USE_FIRST;
    for (const spelling of found) {
      while (code <= PRIVATE_USE_LAST && taken.has(String.fromCharCode(code))) code++;
      // 6,400 characters, each taken by the request itself: not a request anyone sends; refuse rather than misread it.
      if (code > PRIVATE_USE_LAST) throw new Error('no private-use character is left to stand in for a control token');
      const char = String.fromCharCode(code++);
      standIn.set(spelling, char);
      spellingOf.set(char, spelling);
    }
    const hidden = walkStrings(value, (text) => text.replace(spelled, (spelling) => standIn.get(spelling)!));
    const standIns = new RegExp(`[${[...spellingOf.keys()].join('')}]`, 'g');
    return { value: hidden, reveal: (text) => text.replace(standIns, (char) => spellingOf.get(char)!) };
  }
}

/**
 * `value` with each of its strings mapped, keys too (a tool's parameter names reach the prompt through `tojson`):
 * plain objects and arrays copied, anything else as it is.
 */
function walkStrings<T>(value: T, map: (text: string) => string): T {
  if (typeof value === 'string') return map(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => walkStrings(item, map)) as T;
  if (value !== null && typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return value;
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[map(key)] = walkStrings(item, map);
    return copy as T;
  }
  return value;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
