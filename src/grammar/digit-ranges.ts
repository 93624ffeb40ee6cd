/**
 * Numeric ranges as grammar (EBNF) that Lantern writes itself. XGrammar 0.1.27 writes a range's digits loosely:
 * `minimum: 0, maximum: 120` admits 129 (`"1" [0-2] [0-9]`), 443..462 admits 440 to 469, 1100..1999 admits 1000,
 * `minimum: -5` alone admits a bare `-` and no negative number, `maximum: -7` alone admits -1; a decimal's integer part
 * alike (mlc-ai/xgrammar#661). So Lantern's schema compiler (schema-grammar.ts) writes a bounded `integer` or `number`
 * with one of these expressions.
 *
 * The expressions are digit tries: at each position the alternatives begin with disjoint digit classes. A plain list of
 * alternatives (`"-" [2-9] [0-9] [0-9] | "-" [1-9] [0-9] [0-9] [0-9] | "-" [1-9] [0-9] [0-9] [0-9] [0-9]`) is
 * matched loosely by XGrammar 0.1.27 itself: that one accepts `-1000111`. Checked against XGrammar's own matcher in
 * digit-ranges.test.ts.
 */

/** The digits allowed at one position, as a bit mask (bit d: digit d). */
type Digits = number;

const ANY = 0x3ff;
const only = (d: number): Digits => 1 << d;
const span = (from: number, to: number): Digits => ((1 << (to + 1)) - 1) & ~((1 << from) - 1);

/** The same-length digit strings [a, b] (leading zeros allowed: these are the tails of longer numbers). */
function sameLength(a: string, b: string): Digits[][] {
  if (a === b) return [[...a].map((d) => only(Number(d)))];
  let i = 0;
  while (a[i] === b[i]) i++;
  const prefix = [...a.slice(0, i)].map((d) => only(Number(d)));
  const tail = a.length - i - 1;
  let [from, to] = [Number(a[i]), Number(b[i])];
  const out: Digits[][] = [];
  // The lowest digit here, when its tail does not start at 0…0: then only tails from `a`'s on.
  if (!/^0*$/.test(a.slice(i + 1))) {
    for (const rest of sameLength(a.slice(i + 1), '9'.repeat(tail))) out.push([...prefix, only(from), ...rest]);
    from += 1;
  }
  // Likewise the highest, when its tail does not run to 9…9.
  if (!/^9*$/.test(b.slice(i + 1))) {
    for (const rest of sameLength('0'.repeat(tail), b.slice(i + 1))) out.push([...prefix, only(to), ...rest]);
    to -= 1;
  }
  if (from <= to) out.push([...prefix, span(from, to), ...Array<Digits>(tail).fill(ANY)]);
  return out;
}

/** The integers [lo, hi] (0 ≤ lo ≤ hi < 2^53) as JSON writes them (no leading zeros), one sequence per piece. */
function magnitudes(lo: number, hi: number): Digits[][] {
  const [a, b] = [String(lo), String(hi)];
  const out: Digits[][] = [];
  for (let length = a.length; length <= b.length; length++) {
    const low = length === a.length ? a : `1${'0'.repeat(length - 1)}`;
    out.push(...sameLength(low, length === b.length ? b : '9'.repeat(length)));
  }
  return out;
}

/** A digit class: `"7"`, `[2-9]`, `[0-35-9]`. */
function digitClass(mask: Digits): string {
  const runs: string[] = [];
  for (let d = 0; d <= 9; d++) {
    if (!(mask & only(d)) || (d > 0 && mask & only(d - 1))) continue;
    let end = d;
    while (end < 9 && mask & only(end + 1)) end++;
    runs.push(end === d ? `${d}` : `${d}-${end}`);
  }
  return runs.length === 1 && runs[0]!.length === 1 ? `"${runs[0]}"` : `[${runs.join('')}]`;
}

/**
 * The sequences as a trie: the digits that lead to the same rest share one alternative, so no two alternatives begin
 * alike; `""` where a sequence may end. Empty text when only the end remains.
 */
function trie(sequences: Digits[][]): string {
  const ends = sequences.some((s) => s.length === 0);
  const rests = new Map<string, Digits>(); // the expression of the rest → the digits that lead to it
  const memo = new Map<string, string>();
  for (let d = 0; d <= 9; d++) {
    const after = sequences.filter((s) => s.length > 0 && s[0]! & only(d));
    if (after.length === 0) continue;
    const key = after.map((s) => s.join(',')).join(';');
    if (!memo.has(key)) memo.set(key, trie(after.map((s) => s.slice(1))));
    const rest = memo.get(key)!;
    rests.set(rest, (rests.get(rest) ?? 0) | only(d));
  }
  const alternatives = [...rests].map(([rest, mask]) => (rest ? `${digitClass(mask)} ${rest}` : digitClass(mask)));
  if (alternatives.length === 0) return '';
  if (ends) alternatives.push('""');
  return alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' | ')})`;
}

/**
 * An EBNF expression for the integers [lo, hi] (|lo|, |hi| < 2^53) as JSON writes them.
 *
 * @example
 * integerRange(-3, 12); // '(("-" [1-3]) | ([02-9] | "1" ([0-2] | "")))'
 */
export function integerRange(lo: number, hi: number): string {
  const parts = [
    ...(lo < 0 ? [`("-" ${trie(magnitudes(Math.max(1, -hi), -lo))})`] : []),
    ...(hi >= 0 ? [trie(magnitudes(Math.max(0, lo), hi))] : []),
  ];
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Up to six decimals after a point, nested so that no two alternatives begin alike. */
const DECIMALS = `("." [0-9] ([0-9] ([0-9] ([0-9] ([0-9] [0-9]?)?)?)?)?)?`;

/**
 * An EBNF expression for the numbers whose integer part is in [lo, hi], with up to six decimals (as many as
 * XGrammar's own number rule), never an exponent: a value stays within one unit of its integer part.
 */
export function decimalRange(lo: number, hi: number): string {
  return `(${integerRange(lo, hi)} ${DECIMALS})`;
}
