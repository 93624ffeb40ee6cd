/**
 * A request's regular expressions (`pattern`, `patternProperties`) matched in time linear in the text, never on the
 * engine's backtracking RegExp: `{"pattern": "^(a+)+$", "enum": ["aaa…a!"]}`, 46 characters, held V8's matcher, and
 * with it every key's requests, for 16 s (issue 41). As RE2, XGrammar and llguidance do, the pattern is an automaton
 * (Thompson's construction over the exact parse of regex-parse.ts, counted repeats copied out) and the text is read
 * once, following every state the automaton can be in at once; each state visited spends a step of the caller's
 * budget. The answer is `RegExp(pattern, 'u').test(text)`'s: a match anywhere, `^`/`$` at the ends of the text, `\b`
 * between a word character and another. Lookaround and backreferences have no such automaton: a
 * {@link PatternProblem}.
 */

import { BoundedCache } from './bounded-cache.ts';
import { parseRegex, PatternProblem, WORD, type Assertion, type PropertyTest, type RegexNode } from './regex-parse.ts';
import type { StepBudget } from './step-budget.ts';

/**
 * States past this many make a pattern too large to match (`a{100000}` copies `a` 100,000 times): building one costs a
 * step a state, and one character of text can visit every state, so a larger automaton would spend the whole budget
 * on a few characters.
 */
export const MAX_MATCH_STATES = 50_000;

/** One character of a set: sorted ranges (flat: low, high, low, high…), properties asked one code point at a time. */
interface CharClass {
  ranges: Int32Array;
  properties: PropertyTest[] | undefined;
  negated: boolean;
}

/**
 * What a state does (Thompson's automaton: one or two moves each): read a character of its class, split in two
 * without reading one, move on where an assertion holds, or end in a match.
 */
const CHAR = 0;
const SPLIT = 1;
const ASSERT = 2;
const MATCH = 3;
const ASSERTIONS: readonly Assertion[] = ['start', 'end', 'word', 'notWord'];

const isWord = (cp: number) => {
  for (const [a, b] of WORD) if (cp >= a && cp <= b) return true;
  return false;
};

/** Whether a code point is one of a class's characters: a binary search, then its properties. */
function member(cls: CharClass, cp: number): boolean {
  const r = cls.ranges;
  let lo = 0;
  let hi = r.length / 2 - 1;
  let inside = false;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < r[2 * mid]!) hi = mid - 1;
    else if (cp > r[2 * mid + 1]!) lo = mid + 1;
    else {
      inside = true;
      break;
    }
  }
  if (!inside && cls.properties) {
    const ch = String.fromCodePoint(cp);
    inside = cls.properties.some((p) => p.test.test(ch) !== p.negated);
  }
  return inside !== cls.negated;
}

/**
 * A pattern as an automaton, matched against texts. Its states are three typed arrays (what each does, and its two
 * operands: a class or a target, a target), about 9 bytes a state. Not reentrant (its marks are reused from one call
 * to the next), which holds: a match calls nothing that matches.
 */
export class LinearMatcher {
  readonly #kind: Uint8Array;
  readonly #a: Int32Array;
  readonly #b: Int32Array;
  readonly #classes: CharClass[] = [];
  readonly #start: number;
  readonly #mark: Uint32Array;
  #generation = 0;

  /** Builds the automaton of `pattern`, spending a step per state. Throws a {@link PatternProblem}. */
  constructor(pattern: string, budget: StepBudget) {
    budget.spend(pattern.length);
    const root = parseRegex(pattern, { exact: true });
    const kind: number[] = [];
    const a: number[] = [];
    const b: number[] = [];
    const classOf = new Map<RegexNode, number>();
    const state = (k: number, x: number, y: number) => {
      if (kind.length >= MAX_MATCH_STATES) {
        throw new PatternProblem(`a pattern of more than ${MAX_MATCH_STATES} states to match`);
      }
      budget.spend(1);
      kind.push(k);
      a.push(x);
      b.push(y);
      return kind.length - 1;
    };
    // Built from the end: `build(node, next)` is the state where `node` starts, `next` where it goes on.
    const build = (node: RegexNode, next: number): number => {
      switch (node.kind) {
        case 'chars': {
          let cls = classOf.get(node);
          if (cls === undefined) {
            cls = this.#classes.length;
            const ranges = Int32Array.from(node.ranges.flat());
            this.#classes.push({ ranges, properties: node.properties, negated: !!node.negated });
            classOf.set(node, cls);
          }
          return state(CHAR, cls, next);
        }
        case 'assert':
          return state(ASSERT, ASSERTIONS.indexOf(node.what), next);
        case 'seq':
          return node.items.reduceRight((q, item) => build(item, q), next);
        case 'alt':
          return node.options.reduceRight(
            (q, option, i) =>
              i === node.options.length - 1 ? build(option, next) : state(SPLIT, build(option, next), q),
            next,
          );
        case 'repeat': {
          let q = next;
          if (node.max === Infinity) {
            // A loop: the split before each copy goes into it or on; the copy comes back to the split.
            const loop = state(SPLIT, -1, next);
            a[loop] = build(node.node, loop);
            q = loop;
          } else for (let k = node.min; k < node.max; k++) q = state(SPLIT, build(node.node, q), next);
          for (let k = 0; k < node.min; k++) q = build(node.node, q);
          return q;
        }
      }
    };
    this.#start = build(root, state(MATCH, 0, 0));
    this.#kind = Uint8Array.from(kind);
    this.#a = Int32Array.from(a);
    this.#b = Int32Array.from(b);
    this.#mark = new Uint32Array(kind.length);
  }

  /** States of the automaton: what building it cost, and what one character can cost to match. */
  get size(): number {
    return this.#kind.length;
  }

  /** `RegExp(pattern, 'u').test(text)`, spending a step for each state visited. */
  test(text: string, budget: StepBudget): boolean {
    const [kind, a, b, mark] = [this.#kind, this.#a, this.#b, this.#mark];
    let current: number[] = [];
    let next: number[] = [];
    const stack: number[] = [];
    let matched = false;
    // Where the text is: the code points before and at it (-1 past an end), for the assertions.
    let before = -1;
    let here = text.length ? text.codePointAt(0)! : -1;
    let offset = 0;
    const holds = (what: Assertion) => {
      if (what === 'start') return offset === 0;
      if (what === 'end') return offset >= text.length;
      const boundary = (before >= 0 && isWord(before)) !== (here >= 0 && isWord(here));
      return what === 'word' ? boundary : !boundary;
    };
    /** Adds `q` and every state it reaches without a character, here, to `list` (the states that read one). */
    const add = (list: number[], q: number) => {
      const generation = this.#generation;
      stack.push(q);
      while (stack.length) {
        const s = stack.pop()!;
        budget.spend(1);
        if (mark[s] === generation) continue;
        mark[s] = generation;
        const k = kind[s];
        if (k === CHAR) list.push(s);
        else if (k === SPLIT) stack.push(b[s]!, a[s]!);
        else if (k === ASSERT) {
          if (holds(ASSERTIONS[a[s]!]!)) stack.push(b[s]!);
        } else matched = true;
      }
    };
    const nextGeneration = () => {
      if (++this.#generation === 0xffffffff) {
        mark.fill(0);
        this.#generation = 1;
      }
    };
    nextGeneration();
    add(current, this.#start);
    while (!matched && offset < text.length) {
      const cp = here;
      offset += cp > 0xffff ? 2 : 1;
      before = cp;
      here = offset < text.length ? text.codePointAt(offset)! : -1;
      nextGeneration();
      next.length = 0;
      for (const s of current) {
        budget.spend(1);
        if (member(this.#classes[a[s]!]!, cp)) add(next, b[s]!);
      }
      // A match may begin anywhere: the automaton starts again at every character.
      add(next, this.#start);
      [current, next] = [next, current];
    }
    return matched;
  }
}

/** Automata of patterns already built, by their source: only small ones (a large one is built again, and paid again). */
const CACHE_SIZE = 256;
const CACHED_STATES = 1_000;
const matchers = new BoundedCache<string, LinearMatcher>(CACHE_SIZE);

/**
 * The automaton of `pattern`, from the cache or built. Its states are charged to `budget` once per budget either way,
 * so that what a schema costs does not depend on what earlier requests left in the cache.
 */
export function matcherOf(pattern: string, budget: StepBudget): LinearMatcher {
  let built = false;
  const matcher = matchers.getOrCreate(pattern, () => {
    built = true;
    return new LinearMatcher(pattern, budget);
  });
  if (matcher.size > CACHED_STATES) matchers.delete(pattern);
  budget.once(`pattern:${pattern}`, built ? 0 : pattern.length + matcher.size);
  return matcher;
}

/** `RegExp(pattern, 'u').test(text)` in linear time, on `budget`. Throws a {@link PatternProblem}. */
export function patternMatches(pattern: string, text: string, budget: StepBudget): boolean {
  return matcherOf(pattern, budget).test(text, budget);
}

/**
 * Runs `run` (synchronous) with the global `RegExp` replaced by a class that matches in linear time on `budget`, and
 * puts the engine's back however `run` ends. This is how a validator library that builds its own expressions from a
 * schema (`new RegExp(schema.pattern, 'u').test(value)`, as @cfworker/json-schema does for `pattern` and
 * `patternProperties`, with no option to do otherwise) matches without backtracking: nothing else runs while a
 * synchronous call does, and its own literal expressions (`/…/`) are not built through the global. Only what such a
 * library calls is there: `new RegExp(source, 'u')` (a syntax error as the engine reports it) and `test`; the
 * automaton is built at the first `test`, so that `format: "regex"` still only checks the syntax.
 *
 * @example
 * withLinearRegExp(new StepBudget('the output needs more than %d steps to validate'), () => validator.validate(value));
 */
export function withLinearRegExp<T>(budget: StepBudget, run: () => T): T {
  const native = globalThis.RegExp;
  class LinearRegExp {
    readonly source: string;
    readonly flags: string;
    #matcher: LinearMatcher | undefined;
    constructor(source: string | LinearRegExp, flags = '') {
      this.source = typeof source === 'string' ? source : source.source;
      this.flags = flags;
      if (flags !== 'u') throw new TypeError(`Lantern's linear RegExp takes only the u flag, not "${flags}"`);
      new native(this.source, 'u'); // the syntax error a validator expects, from the engine's own parser
    }
    test(text: string): boolean {
      this.#matcher ??= matcherOf(this.source, budget);
      return this.#matcher.test(String(text), budget);
    }
  }
  globalThis.RegExp = LinearRegExp as unknown as RegExpConstructor;
  try {
    return run();
  } finally {
    globalThis.RegExp = native;
  }
}
