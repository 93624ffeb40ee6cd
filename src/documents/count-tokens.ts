/**
 * Lantern's token count: an estimate of OpenAI's o200k tokenizer (GPT-4o's, which the Vector Stores API counts chunk
 * sizes in). The route that chunks files has no embedding model's tokenizer at hand (the model loads elsewhere, in
 * the engine worker), and carrying o200k's 200,000 merges into the service worker for an estimate of sizes would cost
 * megabytes; so the text is cut as o200k cuts it before merging (its pre-tokenizer's pattern), and each piece is
 * priced by its kind and length.
 *
 * How close: o200k averages about 4 characters a token on English prose, and pieces of prose (a word with its leading
 * space, a number of up to 3 digits, a punctuation run, a whitespace run) are mostly one token each. Measured against
 * o200k itself (js-tiktoken's `o200k_base`, while this was written): 7% over on English prose (the GPL's text, Vim's
 * user manual, Lantern's docs) and on TypeScript, 10% over on Python, 13% over on a small sample (5 KB) of Chinese,
 * Japanese and Korean, 10% under on a lock file full of base64 hashes, and far under on random strings (base64, hex:
 * a third to a half of the true count), which BPE breaks into many short tokens that no length rule can foresee.
 * Erring over on prose keeps a chunk within the size it was asked for.
 */

/**
 * o200k's pre-tokenizer: letter runs with one leading non-letter (the space before a word) and English contractions
 * (`'s`, `'ll`; the original's case-insensitive `(?i:…)` group spelled out, as JavaScript before ES2025 has no inline
 * flags), numbers in groups of up to 3 digits, punctuation runs with a leading space and trailing newlines, and
 * whitespace runs (a run before a word leaves its last space to the word). Each alternative is a capture group, so
 * that the match says which kind it is. Together they match every character.
 */
const CONTRACTION = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?";
const UPPER = '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]';
const LOWER = '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]';
const PRE_TOKEN = new RegExp(
  [
    `([^\\r\\n\\p{L}\\p{N}]?(?:${UPPER}*${LOWER}+|${UPPER}+${LOWER}*)${CONTRACTION})`,
    '(\\p{N}{1,3})',
    '( ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*)',
    '(\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)',
  ].join('|'),
  'gu',
);

/** Scripts written without spaces, where o200k spends about a token a character (Chinese, Japanese, Korean). */
const CJK = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}]/gu;
/** Hangul Jamo, the first of those scripts' blocks, start at U+1100: a word with nothing above U+10FF has none. */
const MAYBE_CJK = /[^\0-\u10ff]/;
const LEADING_NON_LETTER = /^[^\p{L}\p{M}]/u;
const LEADING_SYMBOL = /^[^\s\p{L}\p{M}]/u;

/**
 * Letter runs up to 8 letters are nearly always one token in prose (o200k's vocabulary holds most English words whole;
 * measured: 1.0 to 1.1 tokens on average for words of 1 to 8 letters after a space); longer ones, rarer words and
 * identifiers, take about one token per 4 letters.
 */
const WHOLE_WORD_LETTERS = 8;
const LETTERS_PER_TOKEN = 4;
/** o200k merges up to about 4 punctuation marks (`});\n`, `-->`) into a token. */
const SYMBOLS_PER_TOKEN = 4;
/** Runs of newlines cost a token per 16 or so; runs of spaces (indentation, alignment) a token per 80 or so. */
const NEWLINES_PER_TOKEN = 16;
const SPACES_PER_TOKEN = 80;

/** The estimated token count of one pre-token, by its kind: at least 1, and at most its number of code points. */
function preTokenCost(match: RegExpExecArray): number {
  const piece = match[0];
  if (match[1] !== undefined) {
    // Code points of those scripts, and the other letters' UTF-16 units (two for a letter past U+FFFF: the cost
    // stays within the code points).
    const cjk = MAYBE_CJK.test(piece) ? (piece.match(CJK) ?? []) : [];
    const lead = LEADING_NON_LETTER.test(piece) ? (piece.codePointAt(0)! > 0xffff ? 2 : 1) : 0;
    const letters = piece.length - cjk.join('').length - lead;
    let cost = cjk.length;
    if (letters > 0) cost += letters <= WHOLE_WORD_LETTERS ? 1 : Math.ceil(letters / LETTERS_PER_TOKEN);
    // A bracket, quote or full stop before a word (`(word`, `"word`, `。这`) is often a token of its own; a space never
    // is.
    if ((letters > 2 || cjk.length > 0) && LEADING_SYMBOL.test(piece)) cost += 1;
    return Math.max(1, cost);
  }
  if (match[2] !== undefined) return 1;
  if (match[3] !== undefined) return Math.ceil(piece.length / SYMBOLS_PER_TOKEN);
  return Math.ceil(piece.length / (piece.includes('\n') ? NEWLINES_PER_TOKEN : SPACES_PER_TOKEN));
}

/**
 * The estimated number of o200k tokens in `text` (see this module's comment for how close it comes).
 *
 * @example
 * countTokens('The quick brown fox jumps over the lazy dog.'); // 10 (o200k: 10)
 */
export function countTokens(text: string): number {
  let count = 0;
  for (const match of text.matchAll(PRE_TOKEN)) count += preTokenCost(match);
  return count;
}

/**
 * Walks `text`'s estimated tokens in order, calling `visit` with the end offset of each (`countTokens(text)` calls in
 * all, each token at least one character long). A pre-token that costs several tokens (a long word, a run of Chinese)
 * is split into that many pieces, never inside a surrogate pair, so that a chunk can end inside it: a bracket or
 * full stop that leads it (`(`, `。`) is a piece of its own, the rest pieces of about equal length.
 */
export function forEachToken(text: string, visit: (end: number) => void): void {
  for (const match of text.matchAll(PRE_TOKEN)) {
    const end = match.index + match[0].length;
    let pieces = preTokenCost(match);
    if (pieces > 1) {
      let from = match.index;
      if (match[1] !== undefined && LEADING_SYMBOL.test(match[0])) {
        from += text.codePointAt(from)! > 0xffff ? 2 : 1;
        visit(from);
        pieces -= 1;
      }
      // The code point offsets to cut between: there are at least as many as pieces, so no piece is empty.
      const offsets: number[] = [];
      for (let at = from; at < end; at += text.codePointAt(at)! > 0xffff ? 2 : 1) offsets.push(at);
      for (let piece = 1; piece < pieces; piece += 1) visit(offsets[Math.round((piece * offsets.length) / pieces)]!);
    }
    visit(end);
  }
}
