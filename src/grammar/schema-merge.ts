/**
 * A schema as alternatives of plain schemas: the combinators (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
 * `if`/`then`/`else`, `dependentRequired`/`dependentSchemas`/`dependencies`) taken apart at one place of the schema, so
 * that the grammar compiler (schema-grammar.ts) only ever writes a plain schema: one with types, values, bounds,
 * properties and items. Each alternative admits only values that the place's schema admits (never more); where the
 * exact set is not a union of plain schemas, a narrower one is taken (documented per keyword below), and where no
 * narrower one exists either, the keyword is refused. Subschemas below this place (properties, items) are left as they
 * are, so that a recursive schema is taken apart one place at a time.
 *
 * Every expansion is remembered by the schema's structural identity (schema-ids.ts), and every merge, cross product
 * and expansion spends from the compile's step budget (step-budget.ts) in proportion to what it copies: nested
 * `allOf`s that reach the same subschemas by many paths are taken apart once (issue 41).
 */

import { patternMatches } from './regex-match.ts';
import { PatternProblem } from './regex-parse.ts';
import type { SchemaIds } from './schema-ids.ts';
import type { StepBudget } from './step-budget.ts';

export type Schema = Record<string, unknown>;

/** Why a schema cannot be enforced, with where in the schema (a JSON pointer from `#`). */
export class Refusal extends Error {
  constructor(
    readonly what: string,
    readonly at: string,
  ) {
    super(`${what} at ${at}`);
  }
}

/** Alternatives past this many at one place make a schema too large to enforce. */
export const MAX_ALTERNATIVES = 64;
/** `$ref`s followed in a row (a reference to a reference…) past this many. */
export const MAX_REF_HOPS = 32;
/** Triggers of `dependentRequired`/`dependentSchemas` past this many are left out rather than written both ways. */
const MAX_DEPENDENCY_SPLITS = 3;

const COMBINATORS = new Set([
  '$ref',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  '$defs',
  'definitions',
]);

export const isSchemaObject = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number', 'integer'];

/** The types a plain schema allows, `integer` standing apart from `number` (a `number` allows both). */
export function typesOf(s: Schema): Set<string> | undefined {
  if (s.type === undefined) return undefined;
  const list = Array.isArray(s.type) ? s.type : [s.type];
  return new Set(list.filter((t): t is string => typeof t === 'string' && TYPES.includes(t)));
}

function intersectTypes(a: Set<string> | undefined, b: Set<string> | undefined): Set<string> | undefined {
  if (!a) return b;
  if (!b) return a;
  const out = new Set<string>();
  for (const t of a) {
    if (b.has(t)) out.add(t);
    else if (t === 'integer' && b.has('number')) out.add('integer');
    else if (t === 'number' && b.has('integer')) out.add('integer');
  }
  return out;
}

/** Whether a JSON value has one of `types` (an integer is a `number` too). */
export function typeFits(types: Set<string>, value: unknown): boolean {
  const t =
    value === null
      ? 'null'
      : Array.isArray(value)
        ? 'array'
        : typeof value === 'number'
          ? Number.isInteger(value)
            ? 'integer'
            : 'number'
          : typeof value;
  return types.has(t) || (t === 'integer' && types.has('number'));
}

const LOWER = ['minimum', 'minLength', 'minItems', 'minProperties', 'minContains'];
const UPPER = ['maximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains'];
const SUBSCHEMA_KEYWORDS = [
  'items',
  'additionalItems',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
];

/** Whether nothing seen in a plain schema rules every value out. */
function satisfiable(s: Schema): boolean {
  const types = typesOf(s);
  if (types && types.size === 0) return false;
  if (Array.isArray(s.enum) && s.enum.length === 0) return false;
  for (const [lo, hi] of [
    ['minLength', 'maxLength'],
    ['minItems', 'maxItems'],
    ['minProperties', 'maxProperties'],
    ['minimum', 'maximum'],
  ] as const) {
    if (typeof s[lo] === 'number' && typeof s[hi] === 'number' && (s[lo] as number) > (s[hi] as number)) {
      // Only an empty range of the one type it bounds: a string may still match when `minItems` > `maxItems`.
      const bounded =
        lo === 'minLength' ? 'string' : lo === 'minItems' ? 'array' : lo === 'minProperties' ? 'object' : 'number';
      if (types?.size === 1 && (types.has(bounded) || (bounded === 'number' && types.has('integer')))) return false;
    }
  }
  if (Array.isArray(s.required) && isSchemaObject(s.properties)) {
    const props = s.properties;
    if (s.required.some((name) => typeof name === 'string' && props[name] === false)) return false;
  }
  return true;
}

const keyCount = (value: unknown) =>
  isSchemaObject(value) ? Object.keys(value).length : Array.isArray(value) ? value.length : 0;

/**
 * The combinators of one schema (`root`) taken apart, place by place, for one compile: each expansion is remembered by
 * the structural identity of its schema, and all work spends from `budget`.
 *
 * @example
 * const expansion = new Expansion(schema, budget, new SchemaIds(budget));
 * expansion.alternativesOf({ anyOf: [{ type: 'string' }, { type: 'null' }] }, '#'); // [{ type: 'string' }, { type: 'null' }]
 */
export class Expansion {
  readonly #memo = new Map<number, Schema[]>();
  readonly #targets = new Map<string, unknown>();
  #anchors: Map<string, unknown> | undefined;

  constructor(
    readonly root: unknown,
    readonly budget: StepBudget,
    readonly ids: SchemaIds,
  ) {}

  /** Deep equality of JSON values (object keys in any order), for `enum` and `const`. */
  sameValue(a: unknown, b: unknown): boolean {
    return this.ids.of(a) === this.ids.of(b);
  }

  /**
   * Whether `pattern` (read as ECMAScript with the `u` flag) matches somewhere in `text`, in linear time
   * (regex-match.ts). A pattern that cannot be matched so (lookaround, backreferences, not a regular expression) is
   * refused, as `keyword: "pattern"`, at `at`.
   */
  matches(pattern: string, text: string, keyword: string, at: string): boolean {
    try {
      return patternMatches(pattern, text, this.budget);
    } catch (error) {
      if (error instanceof PatternProblem) {
        throw new Refusal(`\`${keyword}: ${JSON.stringify(pattern)}\` (${error.message})`, at);
      }
      throw error;
    }
  }

  /**
   * Resolves a `$ref` within the root: JSON pointers (`#/$defs/a`, with `~0`, `~1` and `%` escapes), anchors (`#name`,
   * by `$anchor` or a `$id` of `#name`), and the root's own `$id` before the `#`. Anything else is another document.
   */
  resolve(ref: string): unknown {
    this.budget.spend(1);
    if (this.#targets.has(ref)) return this.#targets.get(ref);
    const target = this.#resolve(ref);
    this.#targets.set(ref, target);
    return target;
  }

  #resolve(ref: string): unknown {
    const root = this.root;
    this.budget.spend(1 + (ref.length >> 4));
    let fragment = ref;
    const hash = ref.indexOf('#');
    if (hash > 0) {
      const base = ref.slice(0, hash);
      const id = isSchemaObject(root) && typeof root.$id === 'string' ? root.$id : '';
      if (!id || !(id === base || id.endsWith('/' + base) || id.split('#')[0] === base)) return undefined;
      fragment = ref.slice(hash);
    } else if (hash < 0) {
      const id = isSchemaObject(root) && typeof root.$id === 'string' ? root.$id : '';
      return id && (id === ref || id.endsWith('/' + ref)) ? root : undefined;
    }
    if (fragment === '#' || fragment === '#/') return root;
    if (!fragment.startsWith('#/')) return this.#anchor(fragment.slice(1));
    let node: unknown = root;
    for (const part of fragment.slice(2).split('/')) {
      let key: string;
      try {
        key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
      } catch {
        return undefined;
      }
      if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
      else if (isSchemaObject(node) && Object.hasOwn(node, key)) node = node[key];
      else return undefined;
    }
    return node;
  }

  /** The node of an anchor: every anchor of the root found in one walk, the first time one is asked for. */
  #anchor(anchor: string): unknown {
    if (!this.#anchors) {
      const anchors = new Map<string, unknown>();
      const stack = [this.root];
      while (stack.length) {
        const node = stack.pop();
        this.budget.spend(1);
        if (Array.isArray(node)) stack.push(...node);
        else if (isSchemaObject(node)) {
          for (const name of [node.$anchor, typeof node.$id === 'string' ? node.$id.slice(1) : undefined]) {
            if (typeof name !== 'string' || anchors.has(name)) continue;
            if (name === node.$anchor || node.$id === `#${name}`) anchors.set(name, node);
          }
          stack.push(...Object.values(node));
        }
      }
      this.#anchors = anchors;
    }
    return this.#anchors.get(anchor);
  }

  /**
   * Two plain schemas as one that admits exactly the values both admit, or `undefined` when it is seen that none does.
   * Refuses what cannot be merged exactly (two different patterns, say).
   */
  merge(a: Schema, b: Schema, at: string): Schema | undefined {
    const out: Schema = { ...a };
    this.budget.spend(1 + keyCount(a) + keyCount(b));
    for (const [key, value] of Object.entries(b)) {
      const mine = out[key];
      if (mine === undefined) {
        out[key] = value;
        continue;
      }
      if (key === 'type') {
        const types = intersectTypes(typesOf(a), typesOf(b))!;
        out.type = [...types];
      } else if (key === 'enum' || key === 'const') {
        const theirs = new Set((key === 'enum' ? (value as unknown[]) : [value]).map((w) => this.ids.of(w)));
        const kept = (key === 'enum' ? (mine as unknown[]) : [mine]).filter((v) => theirs.has(this.ids.of(v)));
        if (key === 'const') {
          if (kept.length === 0) return undefined;
        } else out.enum = kept;
      } else if (LOWER.includes(key)) out[key] = Math.max(Number(mine), Number(value));
      else if (UPPER.includes(key)) out[key] = Math.min(Number(mine), Number(value));
      else if (key === 'exclusiveMinimum' && typeof mine === 'number') out[key] = Math.max(mine, Number(value));
      else if (key === 'exclusiveMaximum' && typeof mine === 'number') out[key] = Math.min(mine, Number(value));
      else if (key === 'required') {
        this.budget.spend(keyCount(mine) + keyCount(value));
        out.required = [...new Set([...(mine as string[]), ...(value as string[])])];
      } else if (key === 'properties' || key === 'patternProperties' || key === 'dependentSchemas') {
        this.budget.spend(keyCount(mine) + keyCount(value));
        const merged: Schema = { ...(mine as Schema) };
        for (const [name, sub] of Object.entries(value as Schema)) merged[name] = this.#both(merged[name], sub);
        out[key] = merged;
      } else if (key === 'dependentRequired') {
        this.budget.spend(keyCount(mine) + keyCount(value));
        const merged: Schema = { ...(mine as Schema) };
        for (const [name, list] of Object.entries(value as Schema)) {
          this.budget.spend(keyCount(list));
          merged[name] = [...new Set([...((merged[name] as string[]) ?? []), ...(list as string[])])];
        }
        out[key] = merged;
      } else if (key === 'items' && Array.isArray(mine) !== Array.isArray(value)) {
        throw new Refusal('`items` as a list in one part of an `allOf` and a schema in another', at);
      } else if ((key === 'items' || key === 'prefixItems') && Array.isArray(mine)) {
        const list = value as unknown[];
        this.budget.spend(mine.length + list.length);
        out[key] = Array.from({ length: Math.max(mine.length, list.length) }, (_, i) => this.#both(mine[i], list[i]));
      } else if (SUBSCHEMA_KEYWORDS.includes(key) || key === 'additionalProperties') {
        out[key] = value === false || mine === false ? false : this.#both(mine, value);
      } else if (key === 'uniqueItems') out[key] = mine === true || value === true;
      else if (key === 'pattern') {
        // Several patterns in one place: all must match (schema-grammar.ts follows their automata together).
        const list = [...(Array.isArray(mine) ? mine : [mine]), ...(Array.isArray(value) ? value : [value])];
        this.budget.spend(list.length);
        out.pattern = [...new Set(list)].length === 1 ? list[0] : [...new Set(list)];
      } else if (key === 'format' || key === 'multipleOf') {
        if (!this.sameValue(mine, value))
          throw new Refusal(`two different \`${key}\`s in one place (an \`allOf\`)`, at);
      }
      // Anything else is an annotation: the first one stays.
    }
    // Properties one side declares fall under the other side's `additionalProperties` too.
    for (const [side, other] of [
      [a, b],
      [b, a],
    ] as const) {
      // (`unevaluatedProperties` in one part sees only that part's properties: the same rule, conservatively.)
      const closed = other.additionalProperties ?? other.unevaluatedProperties;
      if (closed === undefined || !isSchemaObject(side.properties)) continue;
      const declared = isSchemaObject(other.properties) ? other.properties : {};
      const patterns = isSchemaObject(other.patternProperties) ? Object.keys(other.patternProperties) : [];
      // A copy: `out.properties` may still be one side's own object.
      const props: Schema = { ...(out.properties as Schema) };
      this.budget.spend(keyCount(props));
      for (const name of Object.keys(side.properties)) {
        if (Object.hasOwn(declared, name)) continue;
        if (patterns.some((p) => this.matches(p, name, 'patternProperties', at))) continue;
        props[name] = closed === false ? false : this.#both(props[name], closed);
      }
      out.properties = props;
    }
    return satisfiable(out) ? out : undefined;
  }

  /** Two subschemas as one (`allOf`), without writing it where one alone says it all: the same schema twice, `true`, `false`. */
  #both(a: unknown, b: unknown): unknown {
    if (a === undefined || a === true || b === false) return b;
    if (b === undefined || b === true || a === false) return a;
    return this.sameValue(a, b) ? a : { allOf: [a, b] };
  }

  /** Drops a property from what may be generated: it must be absent. */
  forbid(s: Schema, name: string, at: string): Schema | undefined {
    return this.merge(s, { properties: { [name]: false } }, at);
  }

  /**
   * The alternatives of `schema` at one place, each a plain schema (none of {@link COMBINATORS} at its top). An empty
   * list: no value matches. `hops` counts references followed in a row. Remembered by the schema's identity: the same
   * subschema reached again (by another path, from another place) is not taken apart again. A reference cycle is still
   * in progress when it comes round, so it is followed until `hops` refuses it.
   */
  alternativesOf(schema: unknown, at: string, hops = 0): Schema[] {
    this.budget.spend(1);
    if (schema === true) return [{}];
    if (schema === false) return [];
    // Not a schema (a string where a schema belongs, say): validators read it as one that allows anything.
    if (!isSchemaObject(schema)) return [{}];
    const id = this.ids.of(schema);
    const known = this.#memo.get(id);
    if (known) return known;
    const out = this.#expand(schema, at, hops);
    if (out.length > MAX_ALTERNATIVES) {
      throw new Refusal(`more than ${MAX_ALTERNATIVES} alternatives in one place (\`anyOf\`/\`oneOf\` combined)`, at);
    }
    this.#memo.set(id, out);
    return out;
  }

  #expand(schema: Schema, at: string, hops: number): Schema[] {
    if (typeof schema.$ref === 'string') {
      if (hops >= MAX_REF_HOPS) throw new Refusal(`more than ${MAX_REF_HOPS} \`$ref\`s in a row`, at);
      const target = this.resolve(schema.$ref);
      if (target === undefined) {
        throw new Refusal(`\`$ref: ${JSON.stringify(schema.$ref)}\` (only references within the schema)`, at);
      }
      const { $ref: _ref, ...siblings } = schema;
      const targets = this.alternativesOf(target, schema.$ref, hops + 1);
      return this.#cross(targets, this.alternativesOf(siblings, at, hops), at);
    }
    const base: Schema = {};
    // `unevaluated…` here sees what every part evaluates: it joins the alternatives after them.
    const unevaluated: Schema = {};
    this.budget.spend(keyCount(schema));
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'unevaluatedProperties' || key === 'unevaluatedItems') unevaluated[key] = value;
      else if (!COMBINATORS.has(key)) base[key] = value;
    }
    let out = satisfiable(base) ? [base] : [];
    const list = (key: string) => {
      const value = schema[key];
      if (value === undefined) return undefined;
      if (!Array.isArray(value)) throw new Refusal(`\`${key}\` that is not a list`, at);
      return value;
    };
    list('allOf')?.forEach(
      (part, i) => (out = this.#cross(out, this.alternativesOf(part, `${at}/allOf/${i}`, hops), at)),
    );
    const anyOf = list('anyOf');
    if (anyOf) {
      const alternatives = anyOf.flatMap((alt, i) => this.alternativesOf(alt, `${at}/anyOf/${i}`, hops));
      out = this.#cross(out, alternatives, at);
    }
    // Alternatives of a `oneOf` written twice match no value on their own (a value matching one matches both).
    const oneOf = list('oneOf');
    if (oneOf) {
      const seen = new Map<number, number>();
      for (const alt of oneOf) seen.set(this.ids.of(alt), (seen.get(this.ids.of(alt)) ?? 0) + 1);
      const once = oneOf.filter((alt) => seen.get(this.ids.of(alt)) === 1);
      const alternatives = once.map((alt, i) => this.alternativesOf(alt, `${at}/oneOf/${i}`, hops));
      out = this.#cross(out, this.#exclusive(alternatives, at), at);
    }
    if (schema.not !== undefined) {
      const not = schema.not;
      out = out.flatMap((s) => {
        const negated = this.#negate(s, not, `${at}/not`);
        if (!negated) throw new Refusal('`not`', at);
        return negated;
      });
    }
    if (schema.if !== undefined) out = this.#conditional(out, schema, at, hops);
    out = this.#dependencies(out, schema, at, hops);
    if (Object.keys(unevaluated).length) {
      out = out.map((s) => {
        const joined = { ...s };
        this.budget.spend(1 + keyCount(s));
        for (const [key, value] of Object.entries(unevaluated)) {
          joined[key] = value === false || s[key] === false ? false : this.#both(s[key], value);
        }
        return joined;
      });
    }
    return out;
  }

  #cross(left: Schema[], right: Schema[], at: string): Schema[] {
    if (left.length * right.length > MAX_ALTERNATIVES * MAX_ALTERNATIVES) {
      throw new Refusal(`more than ${MAX_ALTERNATIVES} alternatives in one place (\`anyOf\`/\`oneOf\` combined)`, at);
    }
    this.budget.spend(left.length * right.length);
    // The same alternative twice says nothing more (an `allOf` of a schema and itself crosses its alternatives).
    const out = new Map<number, Schema>();
    for (const a of left)
      for (const b of right) {
        const merged = Object.keys(a).length === 0 ? b : Object.keys(b).length === 0 ? a : this.merge(a, b, at);
        if (merged && !out.has(this.ids.of(merged))) out.set(this.ids.of(merged), merged);
      }
    return [...out.values()];
  }

  /**
   * A `oneOf`'s alternatives, made exclusive where cheaply possible: an object alternative does not write the
   * properties that only other alternatives require (`oneOf: [{required: ["a"]}, {required: ["b"]}]` writes `a` or
   * `b`, never both), and object alternatives that require nothing write at least one property (an empty object would
   * match them all). Any remaining overlap is caught when the choice ends: it is validated against the schema as sent.
   */
  #exclusive(alternatives: Schema[][], at: string): Schema[] {
    const requiredOf = alternatives.map(
      (alts) => new Set(alts.flatMap((s) => (Array.isArray(s.required) ? (s.required as string[]) : []))),
    );
    this.budget.spend(requiredOf.reduce((sum, names) => sum + names.size + 1, 0));
    // `null` or booleans that several alternatives list match them all, so none of them may write one: a null value
    // of [string, null] | [number, null] matches both, and oneOf refuses it (no keyword but a listed value narrows them).
    const listing = (t: string) =>
      alternatives.filter((alts) =>
        alts.some((s) => s.enum === undefined && s.const === undefined && typesOf(s)?.has(t) === true),
      ).length;
    const shared = new Set(['null', 'boolean'].filter((t) => listing(t) > 1));
    if (shared.size) {
      alternatives = alternatives.map((alts) =>
        alts
          .map((s) => {
            const types = typesOf(s);
            if (!types || s.enum !== undefined || s.const !== undefined) return s;
            const left = [...types].filter((t) => !shared.has(t));
            return left.length === types.size ? s : { ...s, type: left };
          })
          .filter((s) => typesOf(s)?.size !== 0),
      );
    }
    const objectLike = (s: Schema) => typesOf(s)?.has('object') === true || isSchemaObject(s.properties);
    const objects = alternatives.filter((alts) => alts.some(objectLike)).length;
    return alternatives.flatMap((alts, i) =>
      alts.flatMap((s) => {
        // Every name only the others require, left out in one merge (one at a time copied the properties each time).
        const absent: Schema = {};
        for (const [j, names] of requiredOf.entries()) {
          if (j === i) continue;
          for (const name of names) if (!requiredOf[i]!.has(name)) absent[name] = false;
        }
        let out = Object.keys(absent).length ? this.merge(s, { properties: absent }, at) : s;
        // An empty object would match every object alternative that requires nothing: each writes at least one.
        if (out && objects > 1 && objectLike(out) && requiredOf[i]!.size === 0 && out.minProperties === undefined) {
          out = { ...out, minProperties: 1 };
        }
        return out ? [out] : [];
      }),
    );
  }

  /**
   * The alternatives of `s` that `not` leaves, or `undefined` where that is not a union of plain schemas that Lantern
   * can write: `not` of types, of `required` (one of the names is left out), of values (`enum`/`const`, where `s`
   * lists its values), and `anyOf`/`allOf` of those.
   */
  #negate(s: Schema, not: unknown, at: string): Schema[] | undefined {
    this.budget.spend(1);
    if (not === false) return [s];
    if (not === true) return [];
    if (!isSchemaObject(not)) return undefined;
    if (typeof not.$ref === 'string') {
      const target = this.resolve(not.$ref);
      const { $ref: _ref, ...rest } = not;
      return Object.keys(rest).length === 0 && target !== undefined ? this.#negate(s, target, at) : undefined;
    }
    const keys = Object.keys(not).filter((k) => !ANNOTATIONS.has(k));
    if (keys.length === 0) return [];
    if (keys.length === 1 && Array.isArray(not.anyOf)) {
      let out: Schema[] | undefined = [s];
      for (const alt of not.anyOf) out = out && flatMapOrUndefined(out, (x) => this.#negate(x, alt, at));
      return out;
    }
    if (keys.length === 1 && Array.isArray(not.allOf)) {
      for (const part of not.allOf) {
        const out = this.#negate(s, part, at);
        if (out) return out;
      }
      return undefined;
    }
    if (keys.length === 1 && not.type !== undefined) {
      const excluded = typesOf(not)!;
      const all = typesOf(s) ?? new Set(['null', 'boolean', 'object', 'array', 'string', 'number']);
      const left = [...all].filter((t) => !excluded.has(t) && !(t === 'integer' && excluded.has('number')));
      if (excluded.has('integer') && !excluded.has('number') && left.includes('number')) return undefined;
      return left.length ? [{ ...s, type: left }] : [];
    }
    if (keys.length === 1 && Array.isArray(not.required)) {
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      this.budget.spend(required.size + not.required.length);
      const name = (not.required as string[]).find((n) => !required.has(n));
      if (not.required.length === 0) return [];
      const out = name === undefined ? undefined : this.forbid(s, name, at);
      return out ? [out] : [];
    }
    if (keys.length === 1 && (not.enum !== undefined || not.const !== undefined)) {
      const excluded = not.enum !== undefined ? (not.enum as unknown[]) : [not.const];
      const values = Array.isArray(s.enum) ? s.enum : s.const !== undefined ? [s.const] : undefined;
      const types = typesOf(s);
      const domain = values ?? (types?.size === 1 && types.has('boolean') ? [true, false] : undefined);
      if (!domain) {
        // Values that `s`'s types cannot hold leave it as it is.
        if (types && excluded.every((v) => !typeFits(types, v))) return [s];
        return types?.size === 1 ? this.#around(s, [...types][0]!, excluded, at) : undefined;
      }
      const gone = new Set(excluded.map((w) => this.ids.of(w)));
      const left = domain.filter((v) => !gone.has(this.ids.of(v)));
      const { const: _c, ...rest } = s;
      return left.length ? [{ ...rest, enum: left }] : [];
    }
    return undefined;
  }

  /**
   * A number or a string that is none of `excluded`, as alternatives with bounds: the numbers between the excluded
   * ones (exact), or the strings of other lengths than theirs (narrower, still valid). `undefined` for other types.
   */
  #around(s: Schema, type: string, excluded: unknown[], at: string): Schema[] | undefined {
    let pieces: Schema[];
    if (type === 'integer' || type === 'number') {
      const points = [...new Set(excluded.filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b);
      pieces = points.map((p, i) => ({ exclusiveMaximum: p, ...(i > 0 && { exclusiveMinimum: points[i - 1] }) }));
      pieces.push(points.length ? { exclusiveMinimum: points.at(-1) } : {});
    } else if (type === 'string') {
      const lengths = [
        ...new Set(excluded.filter((v) => typeof v === 'string').map((v) => [...(v as string)].length)),
      ].sort((a, b) => a - b);
      pieces = [];
      let from = 0;
      for (const length of lengths) {
        if (length > from) pieces.push({ minLength: from, maxLength: length - 1 });
        from = length + 1;
      }
      pieces.push({ minLength: from });
    } else return undefined;
    return pieces.flatMap((piece) => {
      const merged = this.merge(s, piece, at);
      return merged ? [merged] : [];
    });
  }

  /**
   * `if`/`then`/`else`: the values that meet `if` and `then`, and those that fail `if` (where {@link #negate} can say
   * which) and meet `else`. Where the failing side cannot be written, only the first is generated: narrower, still
   * valid.
   */
  #conditional(out: Schema[], schema: Schema, at: string, hops: number): Schema[] {
    const ifAlts = this.alternativesOf(schema.if, `${at}/if`, hops);
    const thenAlts = schema.then === undefined ? [{}] : this.alternativesOf(schema.then, `${at}/then`, hops);
    const elseAlts = schema.else === undefined ? [{}] : this.alternativesOf(schema.else, `${at}/else`, hops);
    const met = this.#cross(this.#cross(out, ifAlts, at), thenAlts, at);
    const failed = flatMapOrUndefined(out, (s) => this.#negate(s, schema.if, at));
    const result = [...met, ...(failed ? this.#cross(failed, elseAlts, at) : [])];
    if (result.length === 0 && !failed && out.length > 0) throw new Refusal('`if`/`then`/`else`', at);
    return result;
  }

  /**
   * `dependentRequired`, `dependentSchemas` and draft 7's `dependencies`: for each trigger property, either it is
   * absent or it is present with what it requires. The first few triggers are written both ways; past them, a trigger
   * that is not required is left out (narrower, still valid).
   */
  #dependencies(out: Schema[], schema: Schema, at: string, hops: number): Schema[] {
    const required = new Map<string, string[]>();
    const schemas = new Map<string, unknown>();
    for (const key of ['dependencies', 'dependentRequired', 'dependentSchemas']) {
      const map = schema[key];
      if (!isSchemaObject(map)) continue;
      this.budget.spend(keyCount(map));
      for (const [name, value] of Object.entries(map)) {
        if (Array.isArray(value)) required.set(name, [...(required.get(name) ?? []), ...(value as string[])]);
        else schemas.set(name, schemas.has(name) ? { allOf: [schemas.get(name), value] } : value);
      }
    }
    const triggers = [...new Set([...required.keys(), ...schemas.keys()])];
    let splits = 0;
    for (const name of triggers) {
      const present = (s: Schema) => {
        const withIt = this.merge(s, { required: [name, ...(required.get(name) ?? [])] }, at);
        if (!withIt) return [];
        return schemas.has(name)
          ? this.#cross([withIt], this.alternativesOf(schemas.get(name), `${at}/dependentSchemas/${name}`, hops), at)
          : [withIt];
      };
      out = out.flatMap((s) => {
        const isRequired = Array.isArray(s.required) && s.required.includes(name);
        if (isRequired) return present(s);
        const absent = this.forbid(s, name, at);
        if (splits >= MAX_DEPENDENCY_SPLITS) return absent ? [absent] : [];
        return [...(absent ? [absent] : []), ...present(s)];
      });
      splits += 1;
    }
    return out;
  }
}

function flatMapOrUndefined(list: Schema[], f: (s: Schema) => Schema[] | undefined): Schema[] | undefined {
  const out: Schema[] = [];
  for (const s of list) {
    const mapped = f(s);
    if (!mapped) return undefined;
    out.push(...mapped);
  }
  return out;
}

/** Keywords that say nothing about which values are valid. */
export const ANNOTATIONS: ReadonlySet<string> = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  '$schema',
  '$id',
  'id',
  '$comment',
  '$anchor',
  'deprecated',
  'readOnly',
  'writeOnly',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'nullable',
  'discriminator',
  'markdownDescription',
  'x-intellij-html-description',
  '$defs',
  'definitions',
]);
