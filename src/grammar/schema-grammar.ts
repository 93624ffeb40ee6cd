/**
 * Lantern's JSON Schema compiler: a schema as a grammar (XGrammar's EBNF, root rule `root`) that admits only JSON valid
 * against it, written compact with the given separators. XGrammar's own converter skips keywords it does not know and
 * crashes on a few (docs/structured-output.md), so Lantern writes the grammar itself and gives XGrammar only the
 * grammar engine's part: matching it token by token.
 *
 * Where a schema allows more than a small model should be handed, or more than a grammar can say, the grammar is
 * narrower than the schema, never wider (docs/structured-output.md lists each narrowing): it admits a subset of the
 * valid values. Every finished output is still validated against the schema as sent (output-constraint.ts). Only what
 * no grammar can enforce is refused, as a {@link SchemaRefused} that names the keyword and where it is: the first one
 * met, for the compile stops there. All of it is bounded by one budget of steps (step-budget.ts).
 */

import { integerRange, decimalRange } from './digit-ranges.ts';
import { boundedGrammar, literal, regexGrammar } from './regex-grammar.ts';
import { lengthsOf, parseRegex, PatternProblem } from './regex-parse.ts';
import { SchemaIds } from './schema-ids.ts';
import { ANNOTATIONS, Expansion, isSchemaObject, Refusal, typeFits, typesOf, type Schema } from './schema-merge.ts';
import { StepBudget, StepBudgetExceeded } from './step-budget.ts';
import { NUMBER_FORMATS, STRING_FORMATS } from './string-formats.ts';

/** A schema that cannot be enforced: the reason names a keyword and where it is (`… at #/properties/x`). */
export class SchemaRefused extends Error {}

/** The budget of one compile, in the words of its refusal. */
export const compileBudget = () => new StepBudget('the schema needs more than %d steps to compile');

/** Rules past this many make a grammar too large to compile in reasonable time (measured: docs/structured-output.md). */
export const MAX_RULES = 5_000;
/** Places nested deeper than this (through references too) are refused. */
export const MAX_NESTING = 128;

/**
 * A string's characters past its least number are capped at this many (`maxLength: 5000` is generated as 64): each
 * costs about 30 ms of compile on a 151k-token vocabulary (a bound of 256 took 7 s).
 */
const STRING_ROOM = 64;
/** Array items or object properties past the least number required are capped at this many. */
const ITEM_ROOM = 64;
/** Integers without a bound on a side are bounded at ±(10^15 − 1): one range, exact in a double. */
const INTEGER_LIMIT = 1e15 - 1;
/**
 * What may follow a string's closing quote: XGrammar then knows where a string ends without looking through every
 * token that runs past the quote into the keys that may follow (its own converter does the same). Without it,
 * compiling an object of 100 optional properties took 0.5 s, growing with the square of their number.
 */
const AFTER_STRING = '(= [,:}\\]])';

/** States of an object whose properties are counted (`minProperties`/`maxProperties`) past this many are narrowed. */
const MAX_COUNTED = 2000;
/** A string character that needs no escape. */
const PLAIN_CHAR = String.raw`[^"\\\x00-\x1f]`;
/** Values of a `multipleOf` within bounds are listed up to this many. */
const MAX_MULTIPLES = 256;

const OBJECT_KEYWORDS = [
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
];
const ARRAY_KEYWORDS = ['items', 'prefixItems', 'additionalItems', 'minItems', 'maxItems', 'contains', 'uniqueItems'];
const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
const ALL_TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number'];

/** Keywords whose subschemas are not enforced token by token, and why: refused wherever they appear. */
const REFUSED: Readonly<Record<string, string>> = {
  $dynamicRef: '`$dynamicRef`',
  $recursiveRef: '`$recursiveRef`',
  maxContains: '`maxContains`',
};

/**
 * The grammar of `schema`, JSON written with `separators` ([between items, between a key and its value]).
 *
 * @example
 * compileSchema({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }, [',', ':']);
 * // 'root ::= v0\nv0 ::= ("{" o1_0_0 "}")\n…'
 */
export function compileSchema(
  schema: unknown,
  separators: readonly [string, string],
  budget: StepBudget = compileBudget(),
): string {
  try {
    const compiler = new Compiler(schema, separators, budget);
    const root = compiler.value(schema, '#', 0);
    if (root === undefined) throw new SchemaRefused('a schema that no value matches at #');
    return compiler.text(root);
  } catch (error) {
    if (error instanceof Refusal || error instanceof StepBudgetExceeded) throw new SchemaRefused(error.message);
    throw error;
  }
}

class Compiler {
  readonly #rules = new Map<string, string>();
  /** The rule of each schema already written (by its identity): shared places and recursion. */
  readonly #named = new Map<number, string | undefined>();
  readonly #ranges = new Map<string, string>();
  readonly #expansion: Expansion;
  readonly #budget: StepBudget;
  readonly #item: string;
  readonly #key: string;
  #count = 0;

  constructor(root: unknown, [item, key]: readonly [string, string], budget: StepBudget) {
    this.#budget = budget;
    this.#expansion = new Expansion(root, budget, new SchemaIds(budget));
    this.#item = literal(item);
    this.#key = literal(key);
  }

  text(root: string): string {
    return [`root ::= ${root}`, ...[...this.#rules].map(([name, body]) => `${name} ::= ${body}`)].join('\n');
  }

  #rule(name: string, body: string): string {
    // A step per character written: writing a grammar (and what it took to find what to write) costs in proportion,
    // so the budget bounds the grammar's length too.
    this.#budget.spend(1 + body.length);
    if (this.#rules.size >= MAX_RULES) throw new Refusal(`a grammar of more than ${MAX_RULES} rules`, '#');
    this.#rules.set(name, body);
    return name;
  }

  #fresh(prefix: string): string {
    return `${prefix}${this.#count++}`;
  }

  /** A rule shared by every place that needs it, written once. */
  #shared(name: string, body: () => string): string {
    if (!this.#rules.has(name)) {
      this.#rules.set(name, '""'); // reserved first: `any` refers to itself
      this.#rules.set(name, body());
    }
    return name;
  }

  /**
   * The rule of values valid against `schema`, found at `at`; `undefined` when no value is (a `false` schema, a
   * conflict). The first refusal is thrown: nothing after it could make the schema enforceable.
   */
  value(schema: unknown, at: string, depth: number): string | undefined {
    // Each place costs a few steps of its own (its lookups, its closures), besides what it writes.
    this.#budget.spend(4);
    if (schema === true || (isSchemaObject(schema) && Object.keys(schema).every((k) => ANNOTATIONS.has(k)))) {
      return this.#any();
    }
    const key = this.#expansion.ids.of(schema);
    if (this.#named.has(key)) return this.#named.get(key);
    if (depth > MAX_NESTING) {
      throw new Refusal(`a schema nested more than ${MAX_NESTING} levels deep (references included)`, at);
    }
    const name = this.#fresh('v');
    this.#named.set(key, name);
    let options: string[];
    try {
      options = this.#expansion.alternativesOf(schema, at).flatMap((s) => this.#plain(s, at, depth));
    } catch (error) {
      if (error instanceof PatternProblem) throw new Refusal(`a \`pattern\` with ${error.message}`, at);
      throw error;
    }
    if (options.length === 0) {
      this.#named.set(key, undefined);
      this.#rules.delete(name);
      return undefined;
    }
    return this.#rule(name, [...new Set(options)].join(' | '));
  }

  /** The alternatives of a plain schema (no combinators), one per type it allows. */
  #plain(s: Schema, at: string, depth: number): string[] {
    this.#budget.spend(4 + Object.keys(s).length);
    for (const key of Object.keys(s)) if (Object.hasOwn(REFUSED, key)) throw new Refusal(REFUSED[key]!, at);
    if (s.const !== undefined || Array.isArray(s.enum)) return this.#values(s, at);
    let types = typesOf(s);
    if (!types) {
      const has = (keys: string[]) => keys.some((k) => s[k] !== undefined);
      const inferred = [
        ...(has(OBJECT_KEYWORDS) ? ['object'] : []),
        ...(has(ARRAY_KEYWORDS) ? ['array'] : []),
        ...(has(STRING_KEYWORDS) || (typeof s.format === 'string' && Object.hasOwn(STRING_FORMATS, s.format))
          ? ['string']
          : []),
        ...(has(NUMBER_KEYWORDS) || (typeof s.format === 'string' && Object.hasOwn(NUMBER_FORMATS, s.format))
          ? ['number']
          : []),
      ];
      types = new Set(inferred.length ? inferred : ALL_TYPES);
    }
    if (types.has('number')) types.delete('integer');
    const out: string[] = [];
    for (const type of ['object', 'array', 'string', 'integer', 'number', 'boolean', 'null']) {
      if (!types.has(type)) continue;
      const option =
        type === 'null'
          ? '"null"'
          : type === 'boolean'
            ? '("true" | "false")'
            : type === 'string'
              ? this.#string(s, at)
              : type === 'integer' || type === 'number'
                ? this.#number(s, type, at)
                : type === 'array'
                  ? this.#array(s, at, depth)
                  : this.#object(s, at, depth);
      if (option !== undefined) out.push(option);
    }
    return out;
  }

  /** `enum`/`const`: the values that the rest of the schema also admits, as a trie of their JSON text. */
  #values(s: Schema, at: string): string[] {
    const listed = s.const !== undefined ? [s.const] : (s.enum as unknown[]);
    const kept = listed.filter(this.#fits(s, at));
    if (kept.length === 0) return [];
    return [literals([...new Set(kept.map((v) => this.#json(v)))], this.#budget)];
  }

  /**
   * Whether a listed value (`enum`, `const`) also meets the simple keywords beside it (`pattern` matched in linear
   * time: regex-match.ts).
   */
  #fits(s: Schema, at: string): (value: unknown) => boolean {
    const types = typesOf(s);
    const ids = this.#expansion.ids;
    const listed = Array.isArray(s.enum) ? new Set(s.enum.map((v) => ids.of(v))) : undefined;
    const constant = s.const !== undefined ? ids.of(s.const) : undefined;
    const patterns = Array.isArray(s.pattern) ? s.pattern : typeof s.pattern === 'string' ? [s.pattern] : [];
    const lower = bound(s.minimum, s.exclusiveMinimum, 'lower');
    const upper = bound(s.maximum, s.exclusiveMaximum, 'upper');
    return (value) => {
      this.#budget.spend(1);
      if (types && !typeFits(types, value)) return false;
      if (listed && !listed.has(ids.of(value))) return false;
      if (constant !== undefined && ids.of(value) !== constant) return false;
      if (typeof value === 'string') {
        const length = [...value].length;
        if (typeof s.minLength === 'number' && length < s.minLength) return false;
        if (typeof s.maxLength === 'number' && length > s.maxLength) return false;
        for (const pattern of patterns) {
          if (!this.#expansion.matches(String(pattern), value, 'pattern', at)) return false;
        }
      }
      return typeof value !== 'number' || inBound(value, lower, upper);
    };
  }

  /** A value's JSON text with this grammar's separators. */
  #json(value: unknown): string {
    this.#budget.spend(1);
    const [item, key] = [this.#item, this.#key].map((l) => JSON.parse(l) as string);
    const write = (v: unknown): string => {
      this.#budget.spend(1);
      return Array.isArray(v)
        ? `[${v.map(write).join(item)}]`
        : isSchemaObject(v)
          ? `{${Object.entries(v)
              .map(([k, x]) => `${JSON.stringify(k)}${key}${write(x)}`)
              .join(item)}}`
          : JSON.stringify(v);
    };
    return write(value);
  }

  #any(): string {
    const string = this.#jsonString();
    const number = this.#shared('number', () => `"-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,6})?`);
    return this.#shared(
      'any',
      () =>
        `"{" (${string} ${this.#key} any (${this.#item} ${string} ${this.#key} any)*)? "}" | ` +
        `"[" (any (${this.#item} any)*)? "]" | ${string} | ${number} | "true" | "false" | "null"`,
    );
  }

  #char(): string {
    return this.#shared('char', () => String.raw`[^"\\\x00-\x1f] | "\\" ["\\/bfnrt]`);
  }

  #jsonString(): string {
    return this.#shared('string', () => `"\\"" ${this.#char()}* "\\"" ${AFTER_STRING}`);
  }

  /**
   * Up to `count` plain string characters, one chain shared by every bounded string: `upto_k ::= "" | char
   * upto_(k-1)`. XGrammar computes the masks of every position against the whole vocabulary (about 30 ms a position on
   * Qwen3's 151k tokens), so a chain per string made a schema of many bounded strings compile for a minute there.
   */
  #upTo(count: number): string {
    if (count <= 0) return '""';
    const name = `upto_${count}`;
    if (this.#rules.has(name)) return name;
    const rest = this.#upTo(count - 1);
    return this.#rule(name, rest === '""' ? `"" | ${PLAIN_CHAR}` : `"" | ${PLAIN_CHAR} ${rest}`);
  }

  #string(s: Schema, at: string): string | undefined {
    const min = typeof s.minLength === 'number' ? Math.max(0, Math.ceil(s.minLength)) : 0;
    const max = typeof s.maxLength === 'number' ? Math.floor(s.maxLength) : Infinity;
    if (min > max) return undefined;
    const format = typeof s.format === 'string' && Object.hasOwn(STRING_FORMATS, s.format) ? s.format : undefined;
    // `pattern` is a list where an `allOf` put several in one place (schema-merge.ts).
    const patterns = [
      ...(Array.isArray(s.pattern) ? (s.pattern as string[]) : typeof s.pattern === 'string' ? [s.pattern] : []),
      // A format's pattern is its whole value.
      ...(format ? [`^(?:${STRING_FORMATS[format]!})$`] : []),
    ];
    if (patterns.length === 0) {
      if (min === 0 && max === Infinity) return this.#jsonString();
      // Without escapes: a rule with alternatives inside a repetition costs XGrammar milliseconds a token. The
      // optional characters are one chain shared by every bounded string: XGrammar computes each rule's masks against
      // the whole vocabulary, and a chain per string made a schema of many bounded strings take a minute on Qwen3's.
      const least = min > 0 ? `${PLAIN_CHAR}{${min}} ` : '';
      const rest = max === Infinity ? `${PLAIN_CHAR}*` : this.#upTo(Math.min(max, min + STRING_ROOM) - min);
      return this.#rule(this.#fresh('s'), `"\\"" ${least}${rest} "\\"" ${AFTER_STRING}`);
    }
    // One pattern is generated as a whole match (narrower); several are followed together as JSON Schema reads them.
    const nodes = patterns.map((source) => {
      this.#budget.spend(1 + (source.length >> 4));
      try {
        return parseRegex(source, { searched: patterns.length > 1 });
      } catch (error) {
        if (error instanceof PatternProblem) {
          throw new Refusal(`\`pattern: ${JSON.stringify(source)}\` (${error.message})`, at);
        }
        throw error;
      }
    });
    const [least, most] = lengthsOf(nodes[0]!);
    let body: string;
    if (nodes.length === 1 && least >= min && most <= max) body = regexGrammar(nodes[0]!);
    else {
      try {
        body = boundedGrammar(nodes, min, max, this.#fresh('p'), (name, text) => this.#rule(name, text), this.#budget);
      } catch (error) {
        if (error instanceof PatternProblem) {
          const what =
            nodes.length > 1
              ? '`pattern` with another pattern or a `format`'
              : '`pattern` with `minLength`/`maxLength`';
          throw new Refusal(`${what} (${error.message})`, at);
        }
        throw error;
      }
    }
    return this.#rule(this.#fresh('s'), `"\\"" ${body} "\\"" ${AFTER_STRING}`);
  }

  #number(s: Schema, type: 'integer' | 'number', at: string): string | undefined {
    const format = typeof s.format === 'string' ? NUMBER_FORMATS[s.format] : undefined;
    const integer = type === 'integer' || format?.integer === true;
    let lower = bound(s.minimum, s.exclusiveMinimum, 'lower');
    let upper = bound(s.maximum, s.exclusiveMaximum, 'upper');
    if (format?.minimum !== undefined && (!lower || lower.at < format.minimum))
      lower = { at: format.minimum, exclusive: false };
    if (format?.maximum !== undefined && (!upper || upper.at > format.maximum))
      upper = { at: format.maximum, exclusive: false };
    // Past 2^53 no double is exact: an open side is bounded at 2^53 instead (narrower); a range beyond it is refused.
    if (lower && lower.at < -Number.MAX_SAFE_INTEGER) lower = { at: -Number.MAX_SAFE_INTEGER, exclusive: false };
    if (upper && upper.at > Number.MAX_SAFE_INTEGER) upper = { at: Number.MAX_SAFE_INTEGER, exclusive: false };
    if ((lower && lower.at > Number.MAX_SAFE_INTEGER) || (upper && upper.at < -Number.MAX_SAFE_INTEGER)) {
      throw new Refusal('a range of numbers entirely past ±2^53', at);
    }
    const multipleOf = typeof s.multipleOf === 'number' && s.multipleOf > 0 ? s.multipleOf : undefined;
    if (multipleOf !== undefined && !(integer && Number.isInteger(multipleOf) && multipleOf === 1)) {
      return this.#multiples(multipleOf, integer, lower, upper, at);
    }
    if (integer) {
      let lo = lower ? (lower.exclusive ? Math.floor(lower.at) + 1 : Math.ceil(lower.at)) : undefined;
      let hi = upper ? (upper.exclusive ? Math.ceil(upper.at) - 1 : Math.floor(upper.at)) : undefined;
      lo ??= hi !== undefined && hi < -INTEGER_LIMIT ? -Number.MAX_SAFE_INTEGER : -INTEGER_LIMIT;
      hi ??= lo > INTEGER_LIMIT ? Number.MAX_SAFE_INTEGER : INTEGER_LIMIT;
      if (lo > hi) return undefined;
      return this.#range(integerRange, lo, hi);
    }
    if (!lower && !upper) return this.#shared('number', () => `"-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,6})?`);
    // A decimal is its integer part and up to six decimals: bounds on the integer part that keep every fraction inside
    // the range (a value in [0, 1] is generated as 0.xxx; a missing side is a billion away).
    const lo = lower?.at ?? Math.min(upper!.at, 0) - 1e9;
    const hi = upper?.at ?? Math.max(lo, 0) + 1e9;
    const exclusiveLo = lower?.exclusive ?? true;
    const exclusiveHi = upper?.exclusive ?? true;
    const min = lo < 0 ? Math.ceil(lo) + 1 : Math.ceil(lo) + (exclusiveLo && Number.isInteger(lo) ? 1 : 0);
    const max =
      hi > 0 ? Math.floor(hi) - 1 : Math.min(Math.floor(hi) - (exclusiveHi && Number.isInteger(hi) ? 1 : 0), -1);
    if (min > max) {
      // Too narrow for whole units: the whole numbers in it, or its one bound, if valid.
      const whole = integerValues(lower, upper);
      if (whole) return whole;
      throw new Refusal(`a \`number\` range (${lo} to ${hi}) too narrow to generate`, at);
    }
    // Past 2^32 a double keeps fewer than six decimals: whole numbers only there.
    return this.#range(Math.max(-min, max) >= 2 ** 32 ? integerRange : decimalRange, min, max);
  }

  /** A numeric range's digits (digit-ranges.ts), written once per compile: most places share a few ranges. */
  #range(write: typeof integerRange, lo: number, hi: number): string {
    const key = `${write === integerRange ? 'i' : 'd'}${lo}:${hi}`;
    let text = this.#ranges.get(key);
    if (text === undefined) {
      text = write(lo, hi);
      // Its digit trie costs several steps per character written (measured: 0.65 µs a character).
      this.#budget.spend(8 * text.length);
      this.#ranges.set(key, text);
    }
    return text;
  }

  /** `multipleOf`: the multiples within the bounds, listed; or, unbounded, the integers divisible by a whole step. */
  #multiples(step: number, integer: boolean, lower: Bound | undefined, upper: Bound | undefined, at: string) {
    if (lower && upper) {
      const first = Math.ceil(lower.at / step);
      const last = Math.floor(upper.at / step);
      if (last - first + 1 <= MAX_MULTIPLES) {
        const values: number[] = [];
        for (let k = first; k <= last; k++) {
          const v = Number((k * step).toPrecision(12));
          if (!inBound(v, lower, upper) || (integer && !Number.isInteger(v))) continue;
          // As validators check it: the quotient must be whole in floating point.
          if (Number.isInteger(v / step)) values.push(v);
        }
        return values.length ? literals(values.map(String)) : undefined;
      }
    }
    if (Number.isInteger(step) && step <= 100 && !lower && !upper) return this.#divisible(step);
    // A step of 1/k (0.01, 0.05, 0.5): whole numbers are multiples, exactly in floating point too (narrower).
    if (!Number.isInteger(step) && Math.abs(1 / step - Math.round(1 / step)) < 1e-9) {
      const lo = lower ? (lower.exclusive ? Math.floor(lower.at) + 1 : Math.ceil(lower.at)) : -1e12;
      const hi = upper ? (upper.exclusive ? Math.ceil(upper.at) - 1 : Math.floor(upper.at)) : 1e12;
      if (lo <= hi && Math.max(-lo, hi) <= 1e12) return this.#range(integerRange, lo, hi);
    }
    throw new Refusal(
      `\`multipleOf: ${step}\` (only within bounds of at most ${MAX_MULTIPLES} multiples, or a whole step without bounds)`,
      at,
    );
  }

  /**
   * The integers divisible by `k` of up to 15 digits, as an automaton over their digits (state: the remainder so far
   * and the digits written).
   */
  #divisible(k: number): string {
    const name = this.#fresh('m');
    const digits = 15;
    const memo = new Map<string, string | undefined>();
    // Dead states (a remainder left when no digit may follow) are left out.
    const state = (r: number, n: number): string | undefined => {
      const rule = `${name}_${r}_${n}`;
      if (memo.has(rule)) return memo.get(rule);
      const next = new Map<number, number[]>();
      if (n < digits)
        for (let d = 0; d <= 9; d++) next.set((r * 10 + d) % k, [...(next.get((r * 10 + d) % k) ?? []), d]);
      const options = [...next].flatMap(([to, ds]) => {
        const after = state(to, n + 1);
        return after ? [`[${ds.join('')}] ${after}`] : [];
      });
      if (r === 0) options.push('""');
      const out = options.length ? this.#rule(rule, options.join(' | ')) : undefined;
      memo.set(rule, out);
      return out;
    };
    const starts = new Map<number, number[]>();
    for (let d = 1; d <= 9; d++) starts.set(d % k, [...(starts.get(d % k) ?? []), d]);
    const first = [...starts]
      .flatMap(([to, ds]) => {
        const after = state(to, 1);
        return after ? [`[${ds.join('')}] ${after}`] : [];
      })
      .join(' | ');
    return this.#rule(name, `"0" | "-"? (${first})`);
  }

  #array(s: Schema, at: string, depth: number): string | undefined {
    const list = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : [];
    // Items that no `items` evaluates fall to `unevaluatedItems`.
    const restSchema = Array.isArray(s.prefixItems)
      ? (s.items ?? s.unevaluatedItems ?? true)
      : Array.isArray(s.items)
        ? (s.additionalItems ?? true)
        : (s.items ?? true);
    let min = typeof s.minItems === 'number' ? Math.max(0, Math.ceil(s.minItems)) : 0;
    let max = typeof s.maxItems === 'number' ? Math.floor(s.maxItems) : Infinity;
    const prefix: (string | undefined)[] = list.map((item, i) => this.value(item, `${at}/prefixItems/${i}`, depth + 1));
    const rest = this.value(restSchema, `${at}/items`, depth + 1);
    if (s.contains !== undefined) {
      // The first item meets `contains` (and `minContains` items in a row): narrower, still valid.
      if (list.length) throw new Refusal('`contains` together with `prefixItems`', at);
      const count = typeof s.minContains === 'number' ? Math.ceil(s.minContains) : 1;
      if (count > 0) {
        // Each of them is written out: a step apiece, paid before (`minContains: 1e8` ran 39 s to a stack overflow).
        this.#budget.spend(count);
        const first = this.value({ allOf: [restSchema, s.contains] }, `${at}/contains`, depth + 1);
        if (first === undefined) return undefined;
        for (let n = 0; n < count; n++) prefix.push(first);
        min = Math.max(min, count);
      }
    }
    if (s.uniqueItems === true && max > 1) {
      const unique = this.#uniqueItems(restSchema, prefix.length, min, max, at);
      if (unique) return unique;
      // Items of any value cannot be told apart by a grammar; at most one is generated (narrower, still valid).
      if (min > 1 || prefix.length > 1) {
        throw new Refusal('`uniqueItems` with `minItems` over 1, on items that are not a short list of values', at);
      }
      max = 1;
    }
    // Items past one that cannot match end the array there.
    const stop = prefix.findIndex((p) => p === undefined);
    if (stop >= 0) {
      max = Math.min(max, stop);
      prefix.length = stop;
    }
    if (rest === undefined) max = Math.min(max, prefix.length);
    if (min > max) return undefined;
    const k = prefix.length;
    const sep = this.#item;
    const tail = (first: boolean): string => {
      const a = Math.max(0, min - k);
      const b = max === Infinity ? Infinity : Math.min(max - k, a + ITEM_ROOM);
      if (b <= 0) return '';
      const r = rest!;
      if (!first) return repeat(`${sep} ${r}`, a, b);
      const more = repeat(`${sep} ${r}`, Math.max(0, a - 1), b - 1);
      const body = more ? `${r} ${more}` : r;
      return a === 0 ? `(${body})?` : body;
    };
    // The items from the last back, each holding the rest (no recursion, however many items).
    let items = tail(k === 0);
    for (let i = k - 1; i >= 0; i--) {
      const item = `${i > 0 ? `${sep} ` : ''}${prefix[i]}${items ? ` ${items}` : ''}`;
      items = i >= min ? `(${item})?` : item;
    }
    return `("[" ${items} "]")`.replace(/ {2,}/g, ' ');
  }

  /**
   * `uniqueItems` over a short list of values (an `enum`, a `const`, booleans): each value at most once, in the order
   * listed — a grammar can say that. `undefined` where it cannot.
   */
  #uniqueItems(restSchema: unknown, prefixCount: number, min: number, max: number, at: string) {
    if (prefixCount > 0 || !isSchemaObject(restSchema)) return undefined;
    const item =
      isSchemaObject(restSchema) && typeof restSchema.$ref === 'string'
        ? this.#expansion.resolve(restSchema.$ref)
        : restSchema;
    if (!isSchemaObject(item)) return undefined;
    const values = Array.isArray(item.enum)
      ? item.enum.filter(this.#fits(item, `${at}/items`))
      : item.const !== undefined
        ? [item.const]
        : item.type === 'boolean'
          ? [true, false]
          : item.type === 'null'
            ? [null]
            : undefined;
    if (!values || values.length > 16) return undefined;
    const texts = [...new Set(values.map((v) => this.#json(v)))];
    const top = Math.min(max, texts.length);
    if (min > top) return undefined;
    const name = this.#fresh('u');
    const memo = new Map<string, string | undefined>();
    // u_i_c: `c` values written so far, the last of them the i-th.
    const state = (i: number, c: number): string | undefined => {
      const rule = `${name}_${i + 1}_${c}`;
      if (memo.has(rule)) return memo.get(rule);
      const options: string[] = [];
      for (let j = i + 1; j < texts.length && c < top; j++) {
        const after = state(j, c + 1);
        if (after !== undefined) options.push(`${c > 0 ? `${this.#item} ` : ''}${literal(texts[j]!)} ${after}`);
      }
      if (c >= min) options.push('""');
      const out = options.length ? this.#rule(rule, options.join(' | ')) : undefined;
      memo.set(rule, out);
      return out;
    };
    return `("[" ${state(-1, 0)} "]")`;
  }

  #object(s: Schema, at: string, depth: number): string | undefined {
    const properties = isSchemaObject(s.properties) ? s.properties : {};
    const required = new Set(Array.isArray(s.required) ? s.required.filter((n) => typeof n === 'string') : []);
    const patterns = isSchemaObject(s.patternProperties) ? s.patternProperties : {};
    // Properties beyond those declared are only generated where needed; `unevaluatedProperties` governs them too.
    const additional =
      s.additionalProperties === false || s.unevaluatedProperties === false
        ? false
        : (s.additionalProperties ?? s.unevaluatedProperties ?? true);
    const names = s.propertyNames;
    const nameFits = this.#fits(isSchemaObject(names) ? { type: 'string', ...names } : {}, `${at}/propertyNames`);
    const nameAllowed = (name: string) => names === undefined || names === true || nameFits(name);
    if (names === false && (required.size > 0 || (typeof s.minProperties === 'number' && s.minProperties > 0))) {
      return undefined;
    }
    const patternOf = (name: string) =>
      Object.keys(patterns).filter((p) => this.#expansion.matches(p, name, 'patternProperties', at));
    interface Entry {
      key: string;
      value: string;
      required: boolean;
    }
    let entries: Entry[] = [];
    const declared = [...Object.keys(properties), ...[...required].filter((n) => !Object.hasOwn(properties, n))];
    // An object's closures and sets, then per property its place, key and states (its name written into each).
    this.#budget.spend(16 + declared.reduce((sum, name) => sum + 8 + name.length, 0));
    for (const name of declared) {
      const own = Object.hasOwn(properties, name);
      const matching = patternOf(name);
      const parts = [
        ...(own ? [properties[name]] : []),
        ...matching.map((p) => patterns[p]),
        ...(!own && matching.length === 0 ? [additional] : []),
      ];
      const schema = parts.length === 1 ? parts[0] : { allOf: parts };
      const isRequired = required.has(name);
      const value =
        nameAllowed(name) && schema !== false
          ? this.value(schema, `${at}/properties/${escapePointer(name)}`, depth + 1)
          : undefined;
      if (value === undefined) {
        if (isRequired) return undefined;
        continue;
      }
      entries.push({ key: literal(JSON.stringify(name)), value, required: isRequired });
    }
    // Properties beyond those declared, when needed: a map (nothing declared), or more than declared are required.
    const minProperties = typeof s.minProperties === 'number' ? Math.ceil(s.minProperties) : 0;
    const maxProperties = typeof s.maxProperties === 'number' ? Math.floor(s.maxProperties) : Infinity;
    let extra: string | undefined;
    if (entries.length === 0 || minProperties > entries.length)
      extra = this.#extraProperty(s, patterns, additional, at, depth);
    const requiredCount = entries.filter((e) => e.required).length;
    if (requiredCount > maxProperties) return undefined;
    let counted = minProperties > requiredCount || maxProperties < entries.length + (extra ? Infinity : 0);
    if (counted && entries.length * (Math.min(maxProperties, Math.max(minProperties, 1)) + 1) > MAX_COUNTED) {
      // Too many states to count: the first optional properties become required up to `minProperties`, and those
      // past `maxProperties` are left out (narrower, still valid).
      let present = requiredCount;
      for (const entry of entries) {
        if (entry.required || present >= minProperties) continue;
        entry.required = true;
        present += 1;
      }
      let room = maxProperties - present;
      entries = entries.filter((e) => e.required || room-- > 0);
      counted = minProperties > present || maxProperties < entries.length + (extra ? Infinity : 0);
      if (counted && entries.length * (Math.max(minProperties, 1) + 1) > MAX_COUNTED) {
        throw new Refusal('`minProperties`/`maxProperties` too large to count while generating', at);
      }
    }
    const finiteMax = Number.isFinite(maxProperties);
    const limit = counted ? (finiteMax ? maxProperties : Math.max(minProperties, 1)) : 1;
    // How many required properties follow each one, counted from the end in one pass.
    const requiredAfter = Array<number>(entries.length + 1).fill(0);
    for (let i = entries.length - 1; i > 0; i--)
      requiredAfter[i - 1] = requiredAfter[i]! + (entries[i]!.required ? 1 : 0);
    const name = this.#fresh('o');
    const sep = this.#item;
    const next = (c: number) => (counted && finiteMax ? c + 1 : Math.min(c + 1, limit));
    // o_i_c: properties from the i-th on, `c` written so far (counted, or 0/1 for "is a separator needed"). Each state's
    // body is found once (`undefined`: no way to finish from there), with the states it refers to; only those the start
    // reaches are written.
    const bodies = new Map<string, { body: string; refers: string[] } | undefined>();
    const state = (i: number, c: number): string | undefined => {
      const rule = `${name}_${i}_${c}`;
      if (bodies.has(rule)) return bodies.get(rule) && rule;
      this.#budget.spend(1);
      const refers: string[] = [];
      const refer = (to: string | undefined) => {
        if (to !== undefined) refers.push(to);
        return to;
      };
      let options: string[];
      if (i === entries.length) {
        const need = counted ? Math.max(0, minProperties - c) : 0;
        const room = counted && finiteMax ? maxProperties - c : Infinity;
        if (!extra) options = need === 0 ? ['""'] : [];
        else {
          const b = room === Infinity ? Infinity : Math.min(room, need + ITEM_ROOM);
          if (b < need) options = [];
          else if (b === 0) options = ['""'];
          else {
            const pair = extra;
            const first = c > 0 ? `${sep} ${pair}` : pair;
            const more = repeat(`${sep} ${pair}`, Math.max(0, need - 1), b - 1);
            const body = more ? `${first} ${more}` : first;
            options = [need === 0 ? `(${body})?` : body];
          }
        }
      } else if (!counted && c === 0) {
        // Before the first property: each property that may come first, side by side (not a chain of skips, which
        // XGrammar walks through once per state).
        options = [];
        let required = false;
        for (let j = i; j < entries.length && !required; j++) {
          const entry = entries[j]!;
          this.#budget.spend(1 + entry.key.length);
          const after = refer(state(j + 1, 1));
          if (after !== undefined) options.push(`${entry.key} ${this.#key} ${entry.value} ${after}`);
          required = entry.required;
        }
        if (!required) {
          const tail = refer(state(entries.length, 0));
          if (tail !== undefined) options.push(tail);
        }
      } else {
        const entry = entries[i]!;
        options = [];
        const fitsMore = !counted || !finiteMax || c + 1 + requiredAfter[i]! <= maxProperties;
        const after = fitsMore ? refer(state(i + 1, next(c))) : undefined;
        if (after !== undefined)
          options.push(`${c > 0 ? `${sep} ` : ''}${entry.key} ${this.#key} ${entry.value} ${after}`);
        if (!entry.required) {
          const skip = refer(state(i + 1, c));
          if (skip !== undefined) options.push(skip);
        }
      }
      const body = options.map((o) => o.replace(/ {2,}/g, ' ').trim() || '""').join(' | ');
      this.#budget.spend(body.length >> 2);
      bodies.set(rule, options.length ? { body, refers } : undefined);
      return options.length ? rule : undefined;
    };
    // From the last property back, so that no state looks more than one property ahead: followed from the start, an
    // object of 20,000 properties overflowed the stack.
    for (let i = entries.length; i > 0; i--) {
      if (!counted) state(i, 1);
      else for (let c = Math.min(i, limit); c >= 0; c--) state(i, c);
    }
    const start = state(0, 0);
    if (start === undefined) return undefined;
    const written = new Set([start]);
    const waiting = [start];
    for (let rule = waiting.pop(); rule !== undefined; rule = waiting.pop()) {
      const { body, refers } = bodies.get(rule)!;
      this.#rule(rule, body);
      for (const to of refers) {
        if (written.has(to)) continue;
        written.add(to);
        waiting.push(to);
      }
    }
    return `("{" ${start} "}")`;
  }

  /** One key and value of a property not declared: a `patternProperties` key, or any key `additionalProperties` allows. */
  #extraProperty(s: Schema, patterns: Schema, additional: unknown, at: string, depth: number): string | undefined {
    const options: string[] = [];
    const keys = Object.keys(patterns);
    const names = s.propertyNames;
    if (keys.length) {
      if (names !== undefined) throw new Refusal('`propertyNames` together with `patternProperties`', at);
      for (const pattern of keys) {
        // A key of one pattern may match the others too: its value meets them all (narrower, still valid).
        const schema = keys.length === 1 ? patterns[pattern] : { allOf: keys.map((p) => patterns[p]) };
        const value = this.value(schema, `${at}/patternProperties/${escapePointer(pattern)}`, depth + 1);
        const key = this.#string({ type: 'string', pattern }, `${at}/patternProperties`);
        if (value !== undefined && key !== undefined) options.push(`${key} ${this.#key} ${value}`);
      }
    } else if (additional !== false) {
      const value = this.value(additional, `${at}/additionalProperties`, depth + 1);
      const keySchema = isSchemaObject(names)
        ? { type: 'string', ...names }
        : names === false
          ? undefined
          : { type: 'string' };
      const key =
        keySchema === undefined
          ? undefined
          : Object.keys(keySchema).length === 1
            ? this.#jsonString()
            : this.value(keySchema, `${at}/propertyNames`, depth + 1);
      if (value !== undefined && key !== undefined) options.push(`${key} ${this.#key} ${value}`);
    }
    if (options.length === 0) return undefined;
    return this.#rule(this.#fresh('x'), options.join(' | '));
  }
}

interface Bound {
  at: number;
  exclusive: boolean;
}

/** The tighter of an inclusive and an exclusive bound on one side (draft 4's boolean `exclusive…` included). */
function bound(inclusive: unknown, exclusive: unknown, side: 'lower' | 'upper'): Bound | undefined {
  const a = typeof inclusive === 'number' ? { at: inclusive, exclusive: exclusive === true } : undefined;
  const b = typeof exclusive === 'number' ? { at: exclusive, exclusive: true } : undefined;
  if (!a || !b) return a ?? b;
  const tighter = side === 'lower' ? a.at > b.at : a.at < b.at;
  return tighter ? a : b;
}

function inBound(v: number, lower?: Bound, upper?: Bound): boolean {
  if (lower && (lower.exclusive ? v <= lower.at : v < lower.at)) return false;
  if (upper && (upper.exclusive ? v >= upper.at : v > upper.at)) return false;
  return true;
}

/** The whole numbers within narrow bounds, listed, or `undefined` when there are none or too many. */
function integerValues(lower?: Bound, upper?: Bound): string | undefined {
  if (!lower || !upper) return undefined;
  const values: string[] = [];
  for (let v = Math.ceil(lower.at); v <= upper.at && values.length <= MAX_MULTIPLES; v++) {
    if (inBound(v, lower, upper)) values.push(String(v));
  }
  if (values.length === 0 && !lower.exclusive && Number.isFinite(lower.at)) values.push(String(lower.at));
  return values.length && values.length <= MAX_MULTIPLES ? literals(values) : undefined;
}

/** `item` repeated between `min` and `max` times (`max` Infinity: unbounded). */
function repeat(item: string, min: number, max: number): string {
  if (max <= 0) return '';
  if (max === Infinity) return min === 0 ? `(${item})*` : min === 1 ? `(${item})+` : `(${item}){${min},}`;
  if (min === 0 && max === 1) return `(${item})?`;
  return min === max ? `(${item}){${min}}` : `(${item}){${min},${max}}`;
}

/**
 * Literal texts as a trie: alternatives never begin with the same character (XGrammar 0.1.27 matches alternatives
 * that begin alike loosely; see digit-ranges.ts).
 */
export function literals(texts: string[], budget?: StepBudget): string {
  const build = (group: string[]): string => {
    const ends = group.includes('');
    const byFirst = new Map<string, string[]>();
    for (const text of group) {
      budget?.spend(1 + (text.length >> 4));
      if (!text) continue;
      const first = String.fromCodePoint(text.codePointAt(0)!);
      const same = byFirst.get(first);
      if (same) same.push(text);
      else byFirst.set(first, [text]);
    }
    const options = [...byFirst.values()].map((texts) => {
      let common = texts[0]!.length;
      for (const t of texts) {
        let k = 0;
        while (k < common && t[k] === texts[0]![k]) k++;
        common = k;
      }
      let prefix = texts[0]!.slice(0, common);
      // Never split a surrogate pair.
      if (/[\ud800-\udbff]$/.test(prefix)) prefix = prefix.slice(0, -1);
      const rest = build(texts.map((t) => t.slice(prefix.length)));
      return rest === '""' ? literal(prefix) : `${literal(prefix)} ${rest}`;
    });
    if (ends) options.push('""');
    return options.length === 1 ? options[0]! : `(${options.join(' | ')})`;
  };
  return build(texts);
}

const escapePointer = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');
