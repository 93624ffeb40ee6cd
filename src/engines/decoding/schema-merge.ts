/**
 * A schema as alternatives of plain schemas: the combinators (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
 * `if`/`then`/`else`, `dependentRequired`/`dependentSchemas`/`dependencies`) taken apart at one place of the schema, so
 * that the grammar compiler (schema-grammar.ts) only ever writes a plain schema: one with types, values, bounds,
 * properties and items. Each alternative admits only values that the place's schema admits (never more); where the
 * exact set is not a union of plain schemas, a narrower one is taken (documented per keyword below), and where no
 * narrower one exists either, the keyword is refused. Subschemas below this place (properties, items) are left as they
 * are, so that a recursive schema is taken apart one place at a time.
 */

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

const COMBINATORS = [
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
];

export const isObject = (value: unknown): value is Schema =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Resolves a `$ref` within `root`: JSON pointers (`#/$defs/a`, with `~0`, `~1` and `%` escapes), anchors (`#name`, by
 * `$anchor` or a `$id` of `#name`), and the root's own `$id` before the `#`. Anything else is another document.
 */
export function resolveRef(root: unknown, ref: string): unknown {
  let fragment = ref;
  const hash = ref.indexOf('#');
  if (hash > 0) {
    const base = ref.slice(0, hash);
    const id = isObject(root) && typeof root.$id === 'string' ? root.$id : '';
    if (!id || !(id === base || id.endsWith('/' + base) || id.split('#')[0] === base)) return undefined;
    fragment = ref.slice(hash);
  } else if (hash < 0) {
    const id = isObject(root) && typeof root.$id === 'string' ? root.$id : '';
    return id && (id === ref || id.endsWith('/' + ref)) ? root : undefined;
  }
  if (fragment === '#' || fragment === '#/') return root;
  if (!fragment.startsWith('#/')) return findAnchor(root, fragment.slice(1));
  let node: unknown = root;
  for (const part of fragment.slice(2).split('/')) {
    let key: string;
    try {
      key = decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
    else if (isObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

function findAnchor(root: unknown, anchor: string): unknown {
  const stack = [root];
  while (stack.length) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isObject(node)) {
      if (node.$anchor === anchor || node.$id === `#${anchor}`) return node;
      stack.push(...Object.values(node));
    }
  }
  return undefined;
}

/** Deep equality of JSON values, for `enum` and `const`. */
export const sameValue = (a: unknown, b: unknown) => canonical(a) === canonical(b);

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

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

const both = (a: unknown, b: unknown): unknown =>
  a === undefined ? b : b === undefined ? a : a === true ? b : b === true ? a : { allOf: [a, b] };

const LOWER = ['minimum', 'minLength', 'minItems', 'minProperties', 'minContains'];
const UPPER = ['maximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains'];

/**
 * Two plain schemas as one that admits exactly the values both admit, or `undefined` when it is seen that none does.
 * Refuses what cannot be merged exactly (two different patterns, say).
 */
export function merge(a: Schema, b: Schema, at: string): Schema | undefined {
  const out: Schema = { ...a };
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
      const theirs = key === 'enum' ? (value as unknown[]) : [value];
      const kept = (key === 'enum' ? (mine as unknown[]) : [mine]).filter((v) => theirs.some((w) => sameValue(v, w)));
      if (key === 'const') {
        if (kept.length === 0) return undefined;
      } else out.enum = kept;
    } else if (LOWER.includes(key)) out[key] = Math.max(Number(mine), Number(value));
    else if (UPPER.includes(key)) out[key] = Math.min(Number(mine), Number(value));
    else if (key === 'exclusiveMinimum' && typeof mine === 'number') out[key] = Math.max(mine, Number(value));
    else if (key === 'exclusiveMaximum' && typeof mine === 'number') out[key] = Math.min(mine, Number(value));
    else if (key === 'required') out.required = [...new Set([...(mine as string[]), ...(value as string[])])];
    else if (key === 'properties' || key === 'patternProperties' || key === 'dependentSchemas') {
      const merged: Schema = { ...(mine as Schema) };
      for (const [name, sub] of Object.entries(value as Schema)) merged[name] = both(merged[name], sub);
      out[key] = merged;
    } else if (key === 'dependentRequired') {
      const merged: Schema = { ...(mine as Schema) };
      for (const [name, list] of Object.entries(value as Schema))
        merged[name] = [...new Set([...((merged[name] as string[]) ?? []), ...(list as string[])])];
      out[key] = merged;
    } else if (key === 'items' && Array.isArray(mine) !== Array.isArray(value)) {
      throw new Refusal('`items` as a list in one part of an `allOf` and a schema in another', at);
    } else if ((key === 'items' || key === 'prefixItems') && Array.isArray(mine)) {
      const list = value as unknown[];
      out[key] = Array.from({ length: Math.max(mine.length, list.length) }, (_, i) => both(mine[i], list[i]));
    } else if (
      ['items', 'additionalItems', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems'].includes(
        key,
      )
    ) {
      out[key] = value === false || mine === false ? false : both(mine, value);
    } else if (key === 'additionalProperties') {
      out[key] = value === false || mine === false ? false : both(mine, value);
    } else if (key === 'uniqueItems') out[key] = mine === true || value === true;
    else if (key === 'pattern') {
      // Several patterns in one place: all must match (schema-grammar.ts follows their automata together).
      const list = [...(Array.isArray(mine) ? mine : [mine]), ...(Array.isArray(value) ? value : [value])];
      out.pattern = [...new Set(list)].length === 1 ? list[0] : [...new Set(list)];
    } else if (key === 'format' || key === 'multipleOf') {
      if (!sameValue(mine, value)) throw new Refusal(`two different \`${key}\`s in one place (an \`allOf\`)`, at);
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
    if (closed === undefined || !isObject(side.properties)) continue;
    const declared = isObject(other.properties) ? other.properties : {};
    const props = out.properties as Schema;
    for (const name of Object.keys(side.properties)) {
      if (Object.hasOwn(declared, name) || matchesPattern(other, name)) continue;
      props[name] = closed === false ? false : both(props[name], closed);
    }
  }
  return satisfiable(out) ? out : undefined;
}

function matchesPattern(s: Schema, name: string): boolean {
  if (!isObject(s.patternProperties)) return false;
  return Object.keys(s.patternProperties).some((p) => {
    try {
      return new RegExp(p, 'u').test(name);
    } catch {
      return false;
    }
  });
}

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
  if (Array.isArray(s.required) && isObject(s.properties)) {
    const props = s.properties;
    if (s.required.some((name) => typeof name === 'string' && props[name] === false)) return false;
  }
  return true;
}

/** Drops a property from what may be generated: it must be absent. */
export const forbid = (s: Schema, name: string, at: string) => merge(s, { properties: { [name]: false } }, at);

/**
 * The alternatives of `schema` at one place, each a plain schema (none of {@link COMBINATORS} at its top). An empty
 * list: no value matches. `root` resolves references; `hops` counts references followed in a row.
 */
export function alternativesOf(schema: unknown, root: unknown, at: string, hops = 0): Schema[] {
  if (schema === true) return [{}];
  if (schema === false) return [];
  // Not a schema (a string where a schema belongs, say): validators read it as one that allows anything.
  if (!isObject(schema)) return [{}];
  if (typeof schema.$ref === 'string') {
    if (hops >= MAX_REF_HOPS) throw new Refusal(`more than ${MAX_REF_HOPS} \`$ref\`s in a row`, at);
    const target = resolveRef(root, schema.$ref);
    if (target === undefined) {
      throw new Refusal(`\`$ref: ${JSON.stringify(schema.$ref)}\` (only references within the schema)`, at);
    }
    const { $ref: _ref, ...siblings } = schema;
    const targets = alternativesOf(target, root, schema.$ref, hops + 1);
    return cross(targets, alternativesOf(siblings, root, at, hops), at);
  }
  const base: Schema = {};
  // `unevaluated…` here sees what every part evaluates: it joins the alternatives after them.
  const unevaluated: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'unevaluatedProperties' || key === 'unevaluatedItems') unevaluated[key] = value;
    else if (!COMBINATORS.includes(key)) base[key] = value;
  }
  let out = satisfiable(base) ? [base] : [];
  const list = (key: string) => {
    const value = schema[key];
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) throw new Refusal(`\`${key}\` that is not a list`, at);
    return value;
  };
  list('allOf')?.forEach((part, i) => (out = cross(out, alternativesOf(part, root, `${at}/allOf/${i}`, hops), at)));
  const anyOf = list('anyOf');
  if (anyOf)
    out = cross(
      out,
      anyOf.flatMap((alt, i) => alternativesOf(alt, root, `${at}/anyOf/${i}`, hops)),
      at,
    );
  // Alternatives of a `oneOf` written twice match no value on their own (a value matching one matches both).
  const oneOf = list('oneOf')?.filter((alt, _i, all) => all.filter((other) => sameValue(alt, other)).length === 1);
  if (oneOf)
    out = cross(
      out,
      exclusive(
        oneOf.map((alt, i) => alternativesOf(alt, root, `${at}/oneOf/${i}`, hops)),
        at,
      ),
      at,
    );
  if (schema.not !== undefined) {
    const not = schema.not;
    out = out.flatMap((s) => {
      const negated = negate(s, not, root, `${at}/not`);
      if (!negated) throw new Refusal('`not`', at);
      return negated;
    });
  }
  if (schema.if !== undefined) out = conditional(out, schema, root, at, hops);
  out = dependencies(out, schema, root, at, hops);
  if (Object.keys(unevaluated).length) {
    out = out.map((s) => {
      const joined = { ...s };
      for (const [key, value] of Object.entries(unevaluated)) {
        joined[key] = value === false || s[key] === false ? false : both(s[key], value);
      }
      return joined;
    });
  }
  if (out.length > MAX_ALTERNATIVES) {
    throw new Refusal(`more than ${MAX_ALTERNATIVES} alternatives in one place (\`anyOf\`/\`oneOf\` combined)`, at);
  }
  return out;
}

function cross(left: Schema[], right: Schema[], at: string): Schema[] {
  if (left.length * right.length > MAX_ALTERNATIVES * MAX_ALTERNATIVES) {
    throw new Refusal(`more than ${MAX_ALTERNATIVES} alternatives in one place (\`anyOf\`/\`oneOf\` combined)`, at);
  }
  const out: Schema[] = [];
  for (const a of left)
    for (const b of right) {
      const merged = Object.keys(a).length === 0 ? b : Object.keys(b).length === 0 ? a : merge(a, b, at);
      if (merged) out.push(merged);
    }
  return out;
}

/**
 * A `oneOf`'s alternatives, made exclusive where cheaply possible: an object alternative does not write the
 * properties that only other alternatives require (`oneOf: [{required: ["a"]}, {required: ["b"]}]` writes `a` or `b`,
 * never both), and object alternatives that require nothing write at least one property (an empty object would match
 * them all). Any remaining overlap is caught when the choice ends: it is validated against the schema as sent.
 */
function exclusive(alternatives: Schema[][], at: string): Schema[] {
  const requiredOf = alternatives.map(
    (alts) => new Set(alts.flatMap((s) => (Array.isArray(s.required) ? (s.required as string[]) : []))),
  );
  // `null` or booleans that several alternatives list match them all, so none of them may write one: a null value of
  // [string, null] | [number, null] matches both, and oneOf refuses it (no keyword but a listed value narrows them).
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
  const objectLike = (s: Schema) => typesOf(s)?.has('object') === true || isObject(s.properties);
  const objects = alternatives.filter((alts) => alts.some(objectLike)).length;
  return alternatives.flatMap((alts, i) =>
    alts.flatMap((s) => {
      let out: Schema | undefined = s;
      for (const [j, names] of requiredOf.entries()) {
        if (j === i) continue;
        for (const name of names) if (out && !requiredOf[i]!.has(name)) out = forbid(out, name, at);
      }
      // An empty object would match every object alternative that requires nothing: each writes at least one property.
      if (out && objects > 1 && objectLike(out) && requiredOf[i]!.size === 0 && out.minProperties === undefined) {
        out = { ...out, minProperties: 1 };
      }
      return out ? [out] : [];
    }),
  );
}

/**
 * The alternatives of `s` that `not` leaves, or `undefined` where that is not a union of plain schemas that Lantern
 * can write: `not` of types, of `required` (one of the names is left out), of values (`enum`/`const`, where `s` lists
 * its values), and `anyOf`/`allOf` of those.
 */
function negate(s: Schema, not: unknown, root: unknown, at: string): Schema[] | undefined {
  if (not === false) return [s];
  if (not === true) return [];
  if (!isObject(not)) return undefined;
  if (typeof not.$ref === 'string') {
    const target = resolveRef(root, not.$ref);
    const { $ref: _ref, ...rest } = not;
    return Object.keys(rest).length === 0 && target !== undefined ? negate(s, target, root, at) : undefined;
  }
  const keys = Object.keys(not).filter((k) => !ANNOTATIONS.has(k));
  if (keys.length === 0) return [];
  if (keys.length === 1 && Array.isArray(not.anyOf)) {
    let out: Schema[] | undefined = [s];
    for (const alt of not.anyOf) out = out && flatMapOrUndefined(out, (x) => negate(x, alt, root, at));
    return out;
  }
  if (keys.length === 1 && Array.isArray(not.allOf)) {
    for (const part of not.allOf) {
      const out = negate(s, part, root, at);
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
    const name = (not.required as string[]).find((n) => !required.has(n));
    if (not.required.length === 0) return [];
    const out = name === undefined ? undefined : forbid(s, name, at);
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
      return types?.size === 1 ? around(s, [...types][0]!, excluded, at) : undefined;
    }
    const left = domain.filter((v) => !excluded.some((w) => sameValue(v, w)));
    const { const: _c, ...rest } = s;
    return left.length ? [{ ...rest, enum: left }] : [];
  }
  return undefined;
}

/**
 * A number or a string that is none of `excluded`, as alternatives with bounds: the numbers between the excluded ones
 * (exact), or the strings of other lengths than theirs (narrower, still valid). `undefined` for other types.
 */
function around(s: Schema, type: string, excluded: unknown[], at: string): Schema[] | undefined {
  if (type === 'integer' || type === 'number') {
    const points = [...new Set(excluded.filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b);
    const pieces: Schema[] = points.map((p, i) => ({
      exclusiveMaximum: p,
      ...(i > 0 && { exclusiveMinimum: points[i - 1] }),
    }));
    pieces.push(points.length ? { exclusiveMinimum: points.at(-1) } : {});
    return pieces.flatMap((piece) => {
      const merged = merge(s, piece, at);
      return merged ? [merged] : [];
    });
  }
  if (type === 'string') {
    const lengths = [...new Set(excluded.filter((v) => typeof v === 'string').map((v) => [...(v as string)].length))];
    lengths.sort((a, b) => a - b);
    const pieces: Schema[] = [];
    let from = 0;
    for (const length of lengths) {
      if (length > from) pieces.push({ minLength: from, maxLength: length - 1 });
      from = length + 1;
    }
    pieces.push({ minLength: from });
    return pieces.flatMap((piece) => {
      const merged = merge(s, piece, at);
      return merged ? [merged] : [];
    });
  }
  return undefined;
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

function flatMapOrUndefined(list: Schema[], f: (s: Schema) => Schema[] | undefined): Schema[] | undefined {
  const out: Schema[] = [];
  for (const s of list) {
    const mapped = f(s);
    if (!mapped) return undefined;
    out.push(...mapped);
  }
  return out;
}

/**
 * `if`/`then`/`else`: the values that meet `if` and `then`, and those that fail `if` (where {@link negate} can say
 * which) and meet `else`. Where the failing side cannot be written, only the first is generated: narrower, still valid.
 */
function conditional(out: Schema[], schema: Schema, root: unknown, at: string, hops: number): Schema[] {
  const ifAlts = alternativesOf(schema.if, root, `${at}/if`, hops);
  const thenAlts = schema.then === undefined ? [{}] : alternativesOf(schema.then, root, `${at}/then`, hops);
  const elseAlts = schema.else === undefined ? [{}] : alternativesOf(schema.else, root, `${at}/else`, hops);
  const met = cross(cross(out, ifAlts, at), thenAlts, at);
  const failed = flatMapOrUndefined(out, (s) => negate(s, schema.if, root, at));
  const result = [...met, ...(failed ? cross(failed, elseAlts, at) : [])];
  if (result.length === 0 && !failed && out.length > 0) throw new Refusal('`if`/`then`/`else`', at);
  return result;
}

/** Triggers of `dependentRequired`/`dependentSchemas` past this many are left out rather than written both ways. */
const MAX_DEPENDENCY_SPLITS = 3;

/**
 * `dependentRequired`, `dependentSchemas` and draft 7's `dependencies`: for each trigger property, either it is absent
 * or it is present with what it requires. The first few triggers are written both ways; past them, a trigger that is
 * not required is left out (narrower, still valid).
 */
function dependencies(out: Schema[], schema: Schema, root: unknown, at: string, hops: number): Schema[] {
  const required = new Map<string, string[]>();
  const schemas = new Map<string, unknown>();
  for (const key of ['dependencies', 'dependentRequired', 'dependentSchemas']) {
    const map = schema[key];
    if (!isObject(map)) continue;
    for (const [name, value] of Object.entries(map)) {
      if (Array.isArray(value)) required.set(name, [...(required.get(name) ?? []), ...(value as string[])]);
      else schemas.set(name, schemas.has(name) ? { allOf: [schemas.get(name), value] } : value);
    }
  }
  const triggers = [...new Set([...required.keys(), ...schemas.keys()])];
  let splits = 0;
  for (const name of triggers) {
    const present = (s: Schema) => {
      const withIt = merge(s, { required: [name, ...(required.get(name) ?? [])] }, at);
      if (!withIt) return [];
      return schemas.has(name)
        ? cross([withIt], alternativesOf(schemas.get(name), root, `${at}/dependentSchemas/${name}`, hops), at)
        : [withIt];
    };
    out = out.flatMap((s) => {
      const isRequired = Array.isArray(s.required) && s.required.includes(name);
      if (isRequired) return present(s);
      const absent = forbid(s, name, at);
      if (splits >= MAX_DEPENDENCY_SPLITS) return absent ? [absent] : [];
      return [...(absent ? [absent] : []), ...present(s)];
    });
    splits += 1;
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
