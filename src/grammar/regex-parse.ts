/**
 * A JSON Schema `pattern` read as ECMAScript reads it with the `u` flag (as validators do), into code-point ranges,
 * sequences, alternatives and repetitions, for two uses:
 * - generating (regex-grammar.ts): a few constructs are narrowed, never widened, so that what is generated always
 *   matches: `.`, negated classes and `\D`/`\W`/`\S` never produce a control character or a lone surrogate, `\s` only
 *   ASCII white space, `\p{…}` only the ASCII characters of the property, `\P{…}` printable ASCII outside it; `^` and
 *   `$` only at the ends;
 * - matching (`exact`, regex-match.ts): exactly what ECMAScript matches, anchors and `\b` anywhere, `\p{…}` asked of
 *   the engine one code point at a time.
 * What no automaton follows (lookaround, backreferences) throws a {@link PatternProblem}; so does `\b` when generating.
 */

/** A pattern that cannot be enforced; its message says why. */
export class PatternProblem extends Error {}

/** Inclusive code-point ranges, sorted and disjoint once normalised. */
export type Range = readonly [number, number];

/**
 * A Unicode property of a class (`\p{L}`, `\P{Script=Greek}`), when matching: `test` is a native expression of one
 * code point, which cannot backtrack.
 */
export interface PropertyTest {
  test: RegExp;
  negated: boolean;
}

/**
 * A regular expression, parsed: one character of a set (when matching, also of `properties`, and the complement of it
 * all when `negated`), a sequence, alternatives, a repetition, or (when matching) an assertion.
 */
export type RegexNode =
  | { kind: 'chars'; ranges: Range[]; properties?: PropertyTest[]; negated?: boolean }
  | { kind: 'seq'; items: RegexNode[] }
  | { kind: 'alt'; options: RegexNode[] }
  | { kind: 'repeat'; node: RegexNode; min: number; max: number }
  | { kind: 'assert'; what: Assertion };

/** `^`, `$`, `\b`, `\B` (without the `m` flag: the ends of the whole text). */
export type Assertion = 'start' | 'end' | 'word' | 'notWord';

/**
 * The engine's own RegExp, taken when this module loads: only ever used to read a pattern's syntax or to ask about one
 * code point, never to run a request's pattern over text (regex-match.ts swaps the global one while a validator runs).
 */
const NativeRegExp = RegExp;

export const MAX_CP = 0x10ffff;
/** Every code point: what `[^…]` and `\D` draw from when matching (lone surrogates included, as `u` reads them). */
export const ALL: Range[] = [[0, MAX_CP]];
/** What `.`, negated classes and negated escapes draw from when generating: no controls, no lone surrogates. */
export const UNIVERSE: Range[] = [
  [0x20, 0xd7ff],
  [0xe000, MAX_CP],
];
const DIGITS: Range[] = [[0x30, 0x39]];
export const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
];
/** ECMAScript's `\s`: WhiteSpace and LineTerminator. */
const JS_SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
];
/** What `.` leaves out without the `s` flag: the line terminators. */
const LINE_TERMINATORS: Range[] = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];
const UPPER: Range[] = [[0x41, 0x5a]];
const LOWER: Range[] = [[0x61, 0x7a]];
/** Unicode properties, as the ASCII characters that have them (generating only). */
const PROPERTIES: Readonly<Record<string, Range[]>> = {
  L: [...UPPER, ...LOWER],
  Letter: [...UPPER, ...LOWER],
  Lu: UPPER,
  Uppercase_Letter: UPPER,
  Ll: LOWER,
  Lowercase_Letter: LOWER,
  N: DIGITS,
  Nd: DIGITS,
  Number: DIGITS,
  Decimal_Number: DIGITS,
  P: [
    [0x21, 0x23],
    [0x25, 0x2a],
    [0x2c, 0x2f],
    [0x3a, 0x3b],
    [0x3f, 0x40],
    [0x5b, 0x5d],
    [0x5f, 0x5f],
    [0x7b, 0x7b],
    [0x7d, 0x7d],
  ],
  Z: [[0x20, 0x20]],
  Zs: [[0x20, 0x20]],
  Alphabetic: [...UPPER, ...LOWER],
  White_Space: SPACE,
  ASCII: [[0x20, 0x7e]],
};
/** Groups nested deeper than this are refused: every walk of a pattern recurses through them (20,000 overflowed it). */
const MAX_GROUP_DEPTH = 128;
const CONTROL_ESCAPES: Readonly<Record<string, number>> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };
// Sticky, read where the parser is: a pattern is read once, never copied (a slice per escape grew with its square).
const HEX = /x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|u\{([0-9a-fA-F]+)\}/y;
const LOW_SURROGATE = /\\u(d[c-f][0-9a-f]{2})/iy;
const COUNT = /\{(\d+)(,(\d*))?\}/y;

export function normalise(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** The characters of `universe` that are not in `ranges`. */
export function complement(ranges: readonly Range[], universe: readonly Range[] = UNIVERSE): Range[] {
  const taken = normalise(ranges);
  const out: Range[] = [];
  for (const [from, to] of universe) {
    let start = from;
    for (const [a, b] of taken) {
      if (b < start || a > to) continue;
      if (a > start) out.push([start, a - 1]);
      start = Math.max(start, b + 1);
    }
    if (start <= to) out.push([start, to]);
  }
  return out;
}

/** How a pattern is read: as a search (JSON Schema's reading, when generating), and exactly (when matching). */
export interface ParseOptions {
  /** Generating: any text may come before the pattern (without `^`) and after it (without `$`). */
  searched?: boolean;
  /** Matching: exactly as ECMAScript reads it (see the file's comment); the matcher searches by itself. */
  exact?: boolean;
}

/**
 * Parses `pattern` (an ECMAScript regular expression, read with the `u` flag). Generating, it is matched in full
 * unless `searched`. Throws a {@link PatternProblem}.
 *
 * @example
 * parseRegex('^[a-z]+$'); // { kind: 'seq', items: [{ kind: 'repeat', node: { kind: 'chars', ranges: [[97, 122]] }, … }] }
 */
export function parseRegex(pattern: string, { searched = false, exact = false }: ParseOptions = {}): RegexNode {
  try {
    // Only read, never run: the engine's parser checks the syntax (every escape, every range) as validators read it.
    new NativeRegExp(pattern, 'u');
  } catch {
    throw new PatternProblem('not a valid regular expression');
  }
  const universe = exact ? ALL : UNIVERSE;
  let i = 0;
  const peek = () => pattern[i];

  /** `\uD83D\uDE00`: with the `u` flag, a surrogate pair written as two escapes is one code point. */
  const pairedEscape = (cp: number) => {
    if (cp < 0xd800 || cp > 0xdbff) return cp;
    LOW_SURROGATE.lastIndex = i;
    const low = LOW_SURROGATE.exec(pattern);
    if (!low) return cp;
    i += low[0].length;
    return 0x10000 + ((cp - 0xd800) << 10) + (parseInt(low[1]!, 16) - 0xdc00);
  };

  /** A class escape's characters; when matching, a property escape adds to `properties` instead. */
  const escape = (inClass: boolean, properties: PropertyTest[]): Range[] => {
    const n = pattern[i + 1] ?? '';
    i += 2;
    if (n === 'd') return DIGITS;
    if (n === 'w') return WORD;
    if (n === 's') return exact ? JS_SPACE : SPACE;
    if (n === 'D') return complement(DIGITS, universe);
    if (n === 'W') return complement(WORD, universe);
    if (n === 'S') return exact ? complement(JS_SPACE, ALL) : [[0x21, 0x7e]];
    if (n === 'p' || n === 'P') {
      const close = pattern.indexOf('}', i);
      const written = pattern.slice(i + 1, close);
      i = close + 1;
      if (exact) {
        properties.push({ test: new NativeRegExp(`^\\p{${written}}$`, 'u'), negated: n === 'P' });
        return [];
      }
      const name = written.replace(/^(General_Category|gc|Script|sc|Script_Extensions|scx)=/, '');
      const ranges = PROPERTIES[name];
      if (!ranges) throw new PatternProblem(`the Unicode property escape \\${n}{${name}}`);
      return n === 'p' ? ranges : complement(ranges, [[0x20, 0x7e]]);
    }
    if (/[1-9]/.test(n) || n === 'k') throw new PatternProblem('a backreference');
    if (n === 'b' && inClass) return [[8, 8]];
    if (n in CONTROL_ESCAPES) {
      if (n === '0' && /[0-9]/.test(pattern[i] ?? '')) throw new PatternProblem('an octal escape');
      return [[CONTROL_ESCAPES[n]!, CONTROL_ESCAPES[n]!]];
    }
    if (n === 'c') {
      const cp = pattern.charCodeAt(i) % 32;
      i += 1;
      return [[cp, cp]];
    }
    HEX.lastIndex = i - 1;
    const hex = HEX.exec(pattern);
    if (hex) {
      i += hex[0].length - 1;
      const cp = hex[2] !== undefined ? pairedEscape(parseInt(hex[2], 16)) : parseInt(hex[1] ?? hex[3]!, 16);
      return [[cp, cp]];
    }
    // An identity escape of a syntax character (`\.`, `\/`, `\-`, `\\`).
    const cp = pattern.codePointAt(i - 1)!;
    if (cp > 0xffff) i += 1;
    return [[cp, cp]];
  };

  const charClass = (): RegexNode => {
    i += 1; // [
    const negated = peek() === '^';
    if (negated) i += 1;
    const ranges: Range[] = [];
    const properties: PropertyTest[] = [];
    while (peek() !== ']') {
      let item: Range[];
      if (peek() === '\\') item = escape(true, properties);
      else {
        const cp = pattern.codePointAt(i)!;
        i += cp > 0xffff ? 2 : 1;
        item = [[cp, cp]];
      }
      if (peek() === '-' && pattern[i + 1] !== ']' && item.length === 1 && item[0]![0] === item[0]![1]) {
        i += 1;
        let to: number;
        if (peek() === '\\') to = escape(true, properties)[0]![0];
        else {
          to = pattern.codePointAt(i)!;
          i += to > 0xffff ? 2 : 1;
        }
        item = [[item[0]![0], to]];
      }
      ranges.push(...item);
    }
    i += 1; // ]
    if (properties.length) return { kind: 'chars', ranges: normalise(ranges), properties, negated };
    return { kind: 'chars', ranges: negated ? complement(ranges, universe) : normalise(ranges) };
  };

  const atom = (): RegexNode | 'anchor' => {
    const c = peek()!;
    if (c === '(') {
      i += 1;
      if (pattern.startsWith('?=', i) || pattern.startsWith('?!', i) || /^\?<[=!]/.test(pattern.slice(i, i + 3))) {
        throw new PatternProblem('a lookaround');
      }
      if (pattern.startsWith('?:', i)) i += 2;
      else if (pattern.startsWith('?<', i)) i = pattern.indexOf('>', i) + 1;
      else if (peek() === '?') throw new PatternProblem('a group modifier');
      if (++depth > MAX_GROUP_DEPTH) throw new PatternProblem(`groups nested more than ${MAX_GROUP_DEPTH} deep`);
      const inner = alternatives();
      depth -= 1;
      i += 1; // )
      return inner;
    }
    if (c === '[') return charClass();
    if (c === '\\') {
      const n = pattern[i + 1];
      if (n === 'b' || n === 'B') {
        if (!exact) throw new PatternProblem('a word boundary');
        i += 2;
        return { kind: 'assert', what: n === 'b' ? 'word' : 'notWord' };
      }
      const properties: PropertyTest[] = [];
      const ranges = normalise(escape(false, properties));
      return properties.length ? { kind: 'chars', ranges, properties } : { kind: 'chars', ranges };
    }
    if (c === '.') {
      i += 1;
      return { kind: 'chars', ranges: exact ? complement(LINE_TERMINATORS, ALL) : UNIVERSE };
    }
    if (c === '^' || c === '$') {
      i += 1;
      return exact ? { kind: 'assert', what: c === '^' ? 'start' : 'end' } : 'anchor';
    }
    const cp = pattern.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
    return { kind: 'chars', ranges: [[cp, cp]] };
  };

  const quantifier = (): [number, number] | undefined => {
    const c = peek();
    let q: [number, number] | undefined;
    if (c === '*') q = [0, Infinity];
    else if (c === '+') q = [1, Infinity];
    else if (c === '?') q = [0, 1];
    if (q) i += 1;
    else if (c === '{') {
      COUNT.lastIndex = i;
      const m = COUNT.exec(pattern);
      if (!m) return undefined;
      i += m[0].length;
      const min = Number(m[1]);
      q = [min, m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3])];
    }
    if (q && peek() === '?') i += 1; // lazy: the same language
    return q;
  };

  /** A sequence; generating, with `^`/`$` allowed only where they cannot cut anything: at its start and its end. */
  let depth = 0;
  const anyText: RegexNode = { kind: 'repeat', node: { kind: 'chars', ranges: UNIVERSE }, min: 0, max: Infinity };
  const sequence = (): RegexNode => {
    const items: (RegexNode | 'anchor')[] = [];
    const at = i;
    while (i < pattern.length && peek() !== '|' && peek() !== ')') {
      const a = atom();
      const q = a === 'anchor' ? undefined : quantifier();
      items.push(q && a !== 'anchor' ? { kind: 'repeat', node: a, min: q[0], max: q[1] } : a);
    }
    const inner = items.filter((item, k) => !(item === 'anchor' && (k === 0 || k === items.length - 1)));
    if (inner.includes('anchor')) throw new PatternProblem('an anchor (`^` or `$`) inside the pattern');
    const seq = inner as RegexNode[];
    // As JSON Schema reads a pattern (a search), an end without its anchor takes any text there.
    if (searched && depth === 0) {
      if (pattern[at] !== '^') seq.unshift(anyText);
      if (!(items.length > 0 && items.at(-1) === 'anchor' && pattern[i - 1] === '$')) seq.push(anyText);
    }
    return { kind: 'seq', items: seq };
  };

  const alternatives = (): RegexNode => {
    const options = [sequence()];
    while (peek() === '|') {
      i += 1;
      options.push(sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  };

  return alternatives();
}

/** The fewest and most characters a string of `node` holds (`Infinity`: unbounded). */
export function lengthsOf(node: RegexNode): [number, number] {
  switch (node.kind) {
    case 'chars':
      return node.ranges.length || node.properties?.length || node.negated ? [1, 1] : [Infinity, -Infinity];
    case 'assert':
      return [0, 0];
    case 'seq':
      return node.items.map(lengthsOf).reduce(([a, b], [c, d]) => [a + c, b + d], [0, 0]);
    case 'alt':
      return node.options
        .map(lengthsOf)
        .reduce(([a, b], [c, d]) => [Math.min(a, c), Math.max(b, d)], [Infinity, -Infinity]);
    case 'repeat': {
      const [a, b] = lengthsOf(node.node);
      return [a * node.min, node.max === 0 ? 0 : b === 0 ? 0 : b * node.max];
    }
  }
}
