/**
 * A `pattern` as XGrammar must be given it. XGrammar 0.1.27 writes a pattern's characters into the JSON string as they
 * are, never escaped: `"a\"b"`-style quotes, backslashes and control characters come out raw, which is not JSON
 * (`^\W+$` gave raw U+0001, `^\\$` a lone `\`, `^"a"$` a bare quote). Yet a pattern is matched against the string's
 * value, after JSON's escapes are read. So the pattern given to XGrammar describes the string as JSON writes it: a
 * character JSON must escape becomes its escape (`"` → `\"`, tab → `\u0009`), and every class, `.` and class escape
 * leaves those characters out where it would have let them through raw. Checked by walks through the grammar in
 * pattern-narrowing.test.ts.
 */

/** Characters a JSON string cannot hold as they are: `"`, `\` and U+0000–U+001F. */
const unsafe = (cp: number) => cp < 0x20 || cp === 0x22 || cp === 0x5c;

/** The same characters, for the inside of a negated class. */
const UNSAFE = String.raw`"\\\x00-\x1f`;

/**
 * A regex matching the JSON escape of an unsafe character, as XGrammar must write it (`\"`, `\\`, `\u0009`): a group,
 * so that a quantifier after it repeats the whole escape.
 */
const escapeOf = (cp: number) =>
  `(?:${cp === 0x22 ? String.raw`\\"` : cp === 0x5c ? String.raw`\\\\` : String.raw`\\u00` + hex(cp)})`;

const hex = (cp: number) => cp.toString(16).padStart(2, '0');

/** One character inside a positive class: letters and digits as they are, other ASCII as `\u00XX`. */
const classChar = (cp: number) =>
  /[A-Za-z0-9]/.test(String.fromCodePoint(cp))
    ? String.fromCodePoint(cp)
    : cp < 0x80
      ? String.raw`\u00` + hex(cp)
      : String.fromCodePoint(cp);

/** A pattern XGrammar cannot be given safely; its message says why. */
export class PatternProblem extends Error {}

type Range = [number, number];

const DIGITS: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// `\s` in ASCII; the Unicode spaces it also matches are left out (narrower, and past ASCII XGrammar's classes fail).
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
];

const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };

/**
 * Reads the escape at `pattern[i]` (a backslash): the characters it stands for, or a class escape's letter, and where
 * the pattern goes on.
 */
function readEscape(pattern: string, i: number): { ranges?: Range[]; negated?: string; next: number } {
  const n = pattern[i + 1] ?? '';
  if (n === 'd') return { ranges: DIGITS, next: i + 2 };
  if (n === 'w') return { ranges: WORD, next: i + 2 };
  if (n === 's') return { ranges: SPACE, next: i + 2 };
  if (n === 'D' || n === 'W' || n === 'S') return { negated: n, next: i + 2 };
  if (n in CONTROL_ESCAPES) return { ranges: [[CONTROL_ESCAPES[n]!, CONTROL_ESCAPES[n]!]], next: i + 2 };
  if (n === 'c') {
    const cp = pattern.charCodeAt(i + 2) % 32;
    return { ranges: [[cp, cp]], next: i + 3 };
  }
  const hexEscape = /^x([0-9a-fA-F]{2})|^u([0-9a-fA-F]{4})|^u\{([0-9a-fA-F]+)\}/.exec(pattern.slice(i + 1));
  if (hexEscape) {
    const cp = parseInt(hexEscape[1] ?? hexEscape[2] ?? hexEscape[3]!, 16);
    return { ranges: [[cp, cp]], next: i + 1 + hexEscape[0].length };
  }
  // An identity escape of a syntax character (`\.`, `\/`, `\-`, `\\`).
  const cp = pattern.codePointAt(i + 1)!;
  return { ranges: [[cp, cp]], next: i + 1 + (cp > 0xffff ? 2 : 1) };
}

const UNSAFE_RANGES: Range[] = [
  [0x00, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
];

/** Ranges as a positive class of their safe characters, or the escapes of their unsafe ones, as one regex. */
function positive(ranges: Range[]): string {
  const safe: Range[] = [];
  const escapes = new Set<number>();
  for (const [from, to] of ranges) {
    let start = from;
    for (const [a, b] of UNSAFE_RANGES) {
      if (b < start || a > to) continue;
      if (start < a) safe.push([start, a - 1]);
      for (let cp = Math.max(a, start); cp <= Math.min(b, to); cp++) escapes.add(cp);
      start = b + 1;
    }
    if (start <= to) safe.push([start, to]);
  }
  const cls = safe.map(([a, b]) => (a === b ? classChar(a) : `${classChar(a)}-${classChar(b)}`)).join('');
  const parts = [...(cls ? [`[${cls}]`] : []), ...[...escapes].map(escapeOf)];
  return parts.length === 1 ? parts[0]! : `(?:${parts.join('|')})`;
}

/** A negated class escape (`\D`, `\W`, `\S`) as a class of safe characters. */
function negatedEscape(letter: string): string {
  if (letter === 'D') return `[^0-9${UNSAFE}]`;
  if (letter === 'W') return `[^0-9A-Za-z_${UNSAFE}]`;
  // Not `[^ …]`: a negated class cannot leave out the Unicode spaces (XGrammar clamps past ASCII), so printable ASCII.
  return String.raw`[!#-\[\]-~]`;
}

/** Reads the class at `pattern[i]` (`[`); returns its safe form and where the pattern goes on. */
function readClass(pattern: string, i: number): { text: string; next: number } {
  const negated = pattern[i + 1] === '^';
  let j = i + (negated ? 2 : 1);
  const ranges: Range[] = [];
  while (pattern[j] !== ']') {
    let item: Range[];
    if (pattern[j] === '\\') {
      const escape = readEscape(pattern, j);
      if (escape.negated) throw new PatternProblem(`\\${escape.negated} inside a class`);
      item = escape.ranges!;
      j = escape.next;
    } else {
      const cp = pattern.codePointAt(j)!;
      item = [[cp, cp]];
      j += cp > 0xffff ? 2 : 1;
    }
    // A range `a-b` (a `-` before `]` is a character).
    if (pattern[j] === '-' && pattern[j + 1] !== ']' && item.length === 1 && item[0]![0] === item[0]![1]) {
      const end = pattern[j + 1] === '\\' ? readEscape(pattern, j + 1) : undefined;
      const to = end ? end.ranges![0]![0] : pattern.codePointAt(j + 1)!;
      j = end ? end.next : j + 1 + (to > 0xffff ? 2 : 1);
      item = [[item[0]![0], to]];
    }
    ranges.push(...item);
  }
  if (!negated) return { text: positive(ranges), next: j + 1 };
  if (ranges.some(([, to]) => to > 0x7f)) throw new PatternProblem('a negated class with a character past ASCII');
  // Left as written, with the unsafe characters added to what it leaves out.
  return { text: `[^${UNSAFE}${pattern.slice(i + 2, j)}]`, next: j + 1 };
}

/**
 * `pattern` (a valid ECMAScript regular expression, without lookaround, backreferences, word boundaries or Unicode
 * properties) as XGrammar must be given it: see the top of this file. Throws a {@link PatternProblem} for what it
 * cannot give safely.
 *
 * @example
 * jsonPattern('^a"b$'); // '^a\\\\"b$': XGrammar writes `a\"b`, whose value `a"b` the pattern matches
 */
export function jsonPattern(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length;) {
    const c = pattern[i]!;
    if (c === '[') {
      const cls = readClass(pattern, i);
      out += cls.text;
      i = cls.next;
    } else if (c === '\\') {
      const escape = readEscape(pattern, i);
      if (escape.negated) out += negatedEscape(escape.negated);
      else if (escape.ranges!.length > 1 || escape.ranges!.some(([a, b]) => a !== b || unsafe(a))) {
        out += positive(escape.ranges!);
      } else out += pattern.slice(i, escape.next);
      i = escape.next;
    } else if (c === '.') {
      // U+2028 and U+2029, which `.` does not match, are left in: a negated class cannot leave them out.
      out += `[^${UNSAFE}]`;
      i += 1;
    } else {
      const cp = pattern.codePointAt(i)!;
      out += unsafe(cp) ? escapeOf(cp) : String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
    }
  }
  return out;
}
