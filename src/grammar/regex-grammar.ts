/**
 * A JSON Schema `pattern` as grammar (XGrammar's EBNF) for the inside of a JSON string. The pattern is read as
 * ECMAScript reads it (regex-parse.ts, with the narrowings it lists for generating) into code-point ranges, so that
 * what it matches is the string's value: a character JSON must escape (`"`, `\`, control characters) is written as its
 * escape, and a class produces such a character only when it holds nothing else. Patterns are matched in full, which
 * is narrower than JSON Schema's search (`abc` is generated as `abc`, which contains `abc`). Lengths
 * (`minLength`/`maxLength`), a `format` beside a `pattern`, and several patterns in one place are enforced by
 * following the patterns' automata together with a count of characters ({@link boundedGrammar}); a very long maximum
 * is lowered (32 past the least needed). What no grammar can enforce exactly (lookaround, backreferences, `\b`) throws
 * a {@link PatternProblem}.
 */

import { complement, lengthsOf, MAX_CP, normalise, PatternProblem, type Range, type RegexNode } from './regex-parse.ts';
import type { StepBudget } from './step-budget.ts';

/** The characters JSON writes as an escape, as their escape (`\"`, `\\`, `\n`, `\u0001`). */
const JSON_ESCAPES: Readonly<Record<number, string>> = {
  8: 'b',
  9: 't',
  10: 'n',
  12: 'f',
  13: 'r',
  0x22: '"',
  0x5c: '\\',
};
const jsonEscape = (cp: number) => '\\' + (JSON_ESCAPES[cp] ?? `u${cp.toString(16).padStart(4, '0')}`);
const mustEscape = (cp: number) => cp < 0x20 || cp === 0x22 || cp === 0x5c;

/** A string as an EBNF literal. */
export function literal(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + '"';
}

const classItem = (cp: number) =>
  cp === 0x5d || cp === 0x5c || cp === 0x2d || cp === 0x5e
    ? '\\' + String.fromCodePoint(cp)
    : cp < 0x20 || cp === 0x7f || (cp >= 0xd800 && cp <= 0xdfff)
      ? `\\u${cp.toString(16).padStart(4, '0')}`
      : String.fromCodePoint(cp);

/** Where UTF-8 changes length: XGrammar 0.1.27 matches a class range across one of these loosely. */
const UTF8_BOUNDS = [0x80, 0x800, 0x10000];

/** Ranges as one EBNF class (`[a-c\\-]`), or a negated one (`[^…]`) of what they leave out. */
const classOf = (ranges: readonly Range[], negated = false) =>
  `[${negated ? '^' : ''}${ranges.map(([a, b]) => (a === b ? classItem(a) : `${classItem(a)}-${classItem(b)}`)).join('')}]`;

/**
 * One value character from `ranges`, as the JSON string holds it: plain characters as a class, the others as their
 * escapes. A class that takes in all of Unicode above ASCII is written negated (`.` is `[^"\\\x00-\x1f]`); one that
 * takes in only part of it is split where UTF-8 changes length, or, when it also leaves part of it out, kept to ASCII
 * (narrower: `[^é]` generates no other non-ASCII character either).
 */
export function charsGrammar(ranges: readonly Range[]): string {
  const plain = complement(
    [
      [0, 0x1f],
      [0x22, 0x22],
      [0x5c, 0x5c],
    ],
    ranges,
  );
  const escaped: number[] = [];
  for (const [a, b] of ranges) for (let cp = a; cp <= Math.min(b, 0x5c); cp++) if (mustEscape(cp)) escaped.push(cp);
  const left = complement(plain, [
    [0, 0xd7ff],
    [0xe000, MAX_CP],
  ]);
  let classes: string[];
  if (plain.length === 0) classes = [];
  else if (left.every(([, b]) => b < 0x80)) classes = [classOf(left, true)];
  else if (plain.every(([, b]) => b < 0x80)) classes = [classOf(plain)];
  else if (plain.some(([, b]) => b === MAX_CP)) {
    // Most of Unicode but not all of it (`[^é]`): its ASCII part only.
    const ascii = plain.filter(([a]) => a < 0x80).map(([a, b]): Range => [a, Math.min(b, 0x7f)]);
    classes = ascii.length ? [classOf(ascii)] : splitAtUtf8(plain).map((r) => classOf(r));
  } else classes = splitAtUtf8(plain).map((r) => classOf(r));
  // Escapes only where nothing else would do (`"`, `\\` or a control character alone): an alternation inside a
  // repetition costs XGrammar milliseconds a token (measured: 10 ms against 0.04 ms on a 640-token vocabulary).
  const parts = classes.length ? classes : escaped.map((cp) => literal(jsonEscape(cp)));
  if (parts.length === 0) throw new PatternProblem('a class that matches no character');
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Ranges split where UTF-8 changes length, grouped by that length. */
function splitAtUtf8(ranges: readonly Range[]): Range[][] {
  const groups: Range[][] = [[], [], [], []];
  for (const [a, b] of ranges) {
    let start = a;
    for (let g = 0; g < 4 && start <= b; g++) {
      const end = Math.min(b, (UTF8_BOUNDS[g] ?? MAX_CP + 1) - 1);
      if (start <= end) groups[g]!.push([start, end]);
      start = Math.max(start, end + 1);
    }
  }
  return groups.filter((g) => g.length);
}

/**
 * Repetitions past this many (beyond the least required) are not generated: `{2,500}` is generated as `{2,34}`, and a
 * pattern bounded by length counts at most this far past its least. Each counted character is a grammar position that
 * XGrammar compiles against the whole vocabulary (about 30 ms each on Qwen3's 151k tokens).
 */
export const REPEAT_ROOM = 32;

/** `node` as an EBNF expression, without length bounds. */
export function regexGrammar(node: RegexNode): string {
  switch (node.kind) {
    case 'chars':
      return charsGrammar(node.ranges);
    case 'assert':
      throw new PatternProblem('an assertion inside the pattern');
    case 'seq':
      return node.items.length === 0 ? '""' : `(${node.items.map(regexGrammar).join(' ')})`;
    case 'alt':
      return `(${node.options.map(regexGrammar).join(' | ')})`;
    case 'repeat': {
      const inner = regexGrammar(node.node);
      const { min } = node;
      const max = Math.min(node.max, min + REPEAT_ROOM);
      if (min === 0 && node.max === Infinity) return `${inner}*`;
      if (min === 1 && node.max === Infinity) return `${inner}+`;
      if (min === 0 && max === 1) return `${inner}?`;
      if (max === 0) return '""';
      return max === min ? `${inner}{${min}}` : `${inner}{${min},${max}}`;
    }
  }
}

/** An automaton without empty moves: each state's character moves and whether it may end there. */
interface Automaton {
  moves: { ranges: Range[]; to: number }[][];
  accepts: boolean[];
  start: number;
}

/** States past this many make a length-bounded pattern too large to enforce. */
const MAX_STATES = 4000;

function automatonOf(root: RegexNode, budget: StepBudget): Automaton {
  const chars: { ranges: Range[]; to: number }[][] = [];
  const empty: number[][] = [];
  const state = () => {
    if (chars.length >= MAX_STATES) throw new PatternProblem('a pattern too large to bound by length');
    budget.spend(1);
    chars.push([]);
    empty.push([]);
    return chars.length - 1;
  };
  // Thompson's construction: `build(node, from)` returns the state where `node` ends.
  const build = (node: RegexNode, from: number): number => {
    switch (node.kind) {
      case 'chars': {
        const to = state();
        chars[from]!.push({ ranges: node.ranges, to });
        return to;
      }
      case 'assert':
        throw new PatternProblem('an assertion inside the pattern');
      case 'seq':
        return node.items.reduce((at, item) => build(item, at), from);
      case 'alt': {
        const end = state();
        for (const option of node.options) empty[build(option, from)]!.push(end);
        return end;
      }
      case 'repeat': {
        let at = from;
        for (let k = 0; k < node.min; k++) at = build(node.node, at);
        if (node.max === Infinity) {
          const loop = state();
          empty[at]!.push(loop);
          empty[build(node.node, loop)]!.push(loop);
          return loop;
        }
        const end = state();
        const optional = Math.min(node.max, node.min + REPEAT_ROOM) - node.min;
        for (let k = 0; k < optional; k++) {
          empty[at]!.push(end);
          at = build(node.node, at);
        }
        empty[at]!.push(end);
        return end;
      }
    }
  };
  const start = state();
  const final = build(root, start);
  const closure = (q: number) => {
    const seen = new Set([q]);
    const stack = [q];
    while (stack.length)
      for (const next of empty[stack.pop()!]!) {
        budget.spend(1);
        if (seen.has(next)) continue;
        seen.add(next);
        stack.push(next);
      }
    return seen;
  };
  const closures = chars.map((_, q) => closure(q));
  return {
    moves: closures.map((set) => {
      const moves = [...set].flatMap((q) => chars[q]!);
      budget.spend(moves.length);
      return moves;
    }),
    accepts: closures.map((set) => set.has(final)),
    start,
  };
}

/** States past this many make a bounded pattern too large to enforce. */
const MAX_RULES = 4000;

/**
 * The automaton made deterministic (subset construction over character ranges): one move per character at most, so
 * that following several patterns together, or a count, multiplies states only where the patterns differ. Without it,
 * `^https://` beside `format: "uri"` made 2,333 states (29 s to compile on Qwen3's vocabulary).
 */
function determinize(nfa: Automaton, budget: StepBudget): Automaton {
  const moves: { ranges: Range[]; to: number }[][] = [];
  const accepts: boolean[] = [];
  const index = new Map<string, number>();
  const sets: number[][] = [];
  const add = (set: number[]) => {
    const key = set.join(',');
    let id = index.get(key);
    if (id === undefined) {
      if (index.size >= MAX_RULES) throw new PatternProblem('a pattern too large to bound (by length, or by another)');
      budget.spend(8 + set.length);
      id = index.size;
      index.set(key, id);
      moves.push([]);
      accepts.push(set.some((q) => nfa.accepts[q]));
      sets.push(set);
    }
    return id;
  };
  add([nfa.start]);
  for (let id = 0; id < sets.length; id++) {
    const all = sets[id]!.flatMap((q) => nfa.moves[q]!);
    const points = [...new Set(all.flatMap((m) => m.ranges.flatMap(([a, b]) => [a, b + 1])))].sort((x, y) => x - y);
    // Each piece between two points is looked up in every move.
    budget.spend(points.length * (all.length + 1));
    const byTargets = new Map<string, { targets: number[]; ranges: Range[] }>();
    for (let i = 0; i + 1 < points.length; i++) {
      const [lo, hi] = [points[i]!, points[i + 1]! - 1];
      const targets = [
        ...new Set(all.filter((m) => m.ranges.some(([a, b]) => a <= lo && hi <= b)).map((m) => m.to)),
      ].sort((x, y) => x - y);
      if (targets.length === 0) continue;
      const key = targets.join(',');
      const entry = byTargets.get(key) ?? { targets, ranges: [] };
      entry.ranges.push([lo, hi]);
      byTargets.set(key, entry);
    }
    for (const { targets, ranges } of byTargets.values())
      moves[id]!.push({ ranges: normalise(ranges), to: add(targets) });
  }
  return { moves, accepts, start: 0 };
}

/** The characters two sets of ranges share. */
function intersect(a: readonly Range[], b: readonly Range[]): Range[] {
  const out: Range[] = [];
  for (const [a0, a1] of a)
    for (const [b0, b1] of b) {
      const lo = Math.max(a0, b0);
      const hi = Math.min(a1, b1);
      if (lo <= hi) out.push([lo, hi]);
    }
  return normalise(out);
}

/**
 * Strings that every one of `nodes` matches and whose length is within [min, max], as EBNF: the patterns' automata
 * followed together, in step, with a count of the characters so far (counting stops at `min` when there is no
 * maximum). So `pattern` with `minLength`/`maxLength`, a `pattern` with a `format`, and the patterns an `allOf` puts in
 * one place are all one grammar. `rule(name, body)` adds a rule of the grammar; `name` prefixes the rule names.
 * Returns the start's expression.
 */
export function boundedGrammar(
  nodes: readonly RegexNode[],
  minLength: number,
  maxLength: number,
  name: string,
  rule: (name: string, body: string) => void,
  budget: StepBudget,
): string {
  const least = Math.max(...nodes.map((n) => lengthsOf(n)[0]));
  const max = maxLength === Infinity ? Infinity : Math.min(maxLength, Math.max(minLength, least) + REPEAT_ROOM);
  const top = max === Infinity ? minLength : max;
  const automata = nodes.map((node) => determinize(automatonOf(node, budget), budget));
  const next = (k: number) => (max === Infinity ? Math.min(k + 1, top) : k + 1);
  type State = { qs: number[]; k: number };
  type Move = { ranges: Range[]; to: string };
  const keyOf = (qs: number[], k: number) => `${qs.join(',')}:${k}`;
  // Reachable states and their moves (a move of every automaton at once, on the characters they share).
  const states = new Map<string, State & { moves: Move[]; from: string[] }>();
  const queue: string[] = [];
  const visit = (qs: number[], k: number) => {
    const key = keyOf(qs, k);
    if (states.has(key)) return key;
    if (states.size >= MAX_RULES) throw new PatternProblem('a pattern too large to bound (by length, or by another)');
    budget.spend(4 + qs.length);
    states.set(key, { qs, k, moves: [], from: [] });
    queue.push(key);
    return key;
  };
  const start = visit(
    automata.map((a) => a.start),
    0,
  );
  for (let at = 0; at < queue.length; at++) {
    const key = queue[at]!;
    const state = states.get(key)!;
    if (max !== Infinity && state.k + 1 > top) continue;
    let combos: { ranges: Range[]; to: number[] }[] = [{ ranges: [[0, MAX_CP]], to: [] }];
    state.qs.forEach((q, i) => {
      combos = combos.flatMap((c) =>
        automata[i]!.moves[q]!.flatMap((m) => {
          // An intersection, its sort, and the move's key: a few steps each.
          budget.spend(4 + c.ranges.length * m.ranges.length);
          const ranges = intersect(c.ranges, m.ranges);
          return ranges.length ? [{ ranges, to: [...c.to, m.to] }] : [];
        }),
      );
    });
    for (const c of combos) {
      budget.spend(4);
      const to = visit(c.to, next(state.k));
      state.moves.push({ ranges: c.ranges, to });
      states.get(to)!.from.push(key);
    }
  }
  const ends = (s: State) => s.qs.every((q, i) => automata[i]!.accepts[q]) && s.k >= minLength && s.k <= max;
  // States from which an accepted end can still be reached: back from the ends, each move walked once.
  const alive = new Set([...states].filter(([, state]) => ends(state)).map(([key]) => key));
  const back = [...alive];
  for (let key = back.pop(); key !== undefined; key = back.pop()) {
    const from = states.get(key)!.from;
    budget.spend(from.length + 1);
    for (const earlier of from) {
      if (alive.has(earlier)) continue;
      alive.add(earlier);
      back.push(earlier);
    }
  }
  if (!alive.has(start)) throw new PatternProblem('no string matches the pattern within the bounds');
  const names = new Map([...alive].map((key, i) => [key, `${name}_${i}`]));
  for (const key of alive) {
    const state = states.get(key)!;
    budget.spend(state.moves.length + 1);
    const options = state.moves
      .filter((m) => alive.has(m.to))
      .map((m) => `${charsGrammar(m.ranges)} ${names.get(m.to)}`);
    if (ends(state)) options.push('""');
    rule(names.get(key)!, options.join(' | '));
  }
  return names.get(start)!;
}
