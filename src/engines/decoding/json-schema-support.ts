/**
 * Which JSON Schemas Lantern enforces token by token, decided before anything runs. XGrammar (the grammar engine) lets
 * some keywords through silently, and crashes its WebAssembly on a few others (DESIGN "Constrained-decoding libraries,
 * measured"; `bench/structured-output-libraries.ts`): a schema using any of them is refused up front with the reason,
 * rather than decoded without its constraint. Each entry here has a test (json-schema-support.test.ts).
 */

import { jsonPattern, PatternProblem } from './pattern-narrowing.ts';

type Schema = Record<string, unknown>;

/** Keywords that constrain a value but that the grammar would not enforce: refused wherever they appear. */
const UNENFORCED: Readonly<Record<string, string>> = {
  not: '`not`',
  allOf: '`allOf`',
  if: '`if`/`then`/`else`',
  then: '`if`/`then`/`else`',
  else: '`if`/`then`/`else`',
  dependencies: '`dependencies`',
  dependentRequired: '`dependentRequired`',
  dependentSchemas: '`dependentSchemas`',
  patternProperties: '`patternProperties`',
  propertyNames: '`propertyNames`',
  unevaluatedProperties: '`unevaluatedProperties`',
  unevaluatedItems: '`unevaluatedItems`',
  contains: '`contains`',
  minContains: '`minContains`',
  maxContains: '`maxContains`',
  multipleOf: '`multipleOf`',
  minProperties: '`minProperties`',
  $dynamicRef: '`$dynamicRef`',
  $recursiveRef: '`$recursiveRef`',
};

/** String formats the grammar enforces (and the validator checks). Any other `format` is refused. */
export const SUPPORTED_FORMATS: ReadonlySet<string> = new Set([
  'date-time',
  'date',
  'time',
  'email',
  'uuid',
  'uri',
  'ipv4',
]);

/** Keywords whose value holds one subschema; `SUBSCHEMA_MAPS` hold a record of them, `SUBSCHEMA_LISTS` an array. */
const SUBSCHEMA = ['items', 'additionalProperties', 'additionalItems'];
const SUBSCHEMA_MAPS = ['properties', '$defs', 'definitions'];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'prefixItems'];

/** Enums longer than this let values outside them through (measured at 165 values); refused. */
const MAX_ENUM = 64;

/** The numeric bounds keywords. XGrammar aborts on an integer bound past 64 bits; past 2^53 no double is exact. */
const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];

/**
 * What in `schema` the grammar would not enforce, as short phrases for a 400's message; empty when all of it is.
 *
 * @example
 * unsupportedFeatures({ type: 'string', format: 'hostname' }); // ['`format: "hostname"` at #']
 */
export function unsupportedFeatures(schema: unknown): string[] {
  const found = new Set<string>();
  const root = schema;
  const visit = (node: unknown, path: string): void => {
    if (node === true) return;
    if (node === false) return void found.add(`a \`false\` schema at ${path}`);
    if (node === null || typeof node !== 'object' || Array.isArray(node)) {
      return void found.add(`a schema that is not an object at ${path}`);
    }
    const s = node as Schema;
    // Own keys only: a schema's `constructor` or `toString` is an unknown keyword, not one of these.
    for (const key of Object.keys(s)) if (Object.hasOwn(UNENFORCED, key)) found.add(`${UNENFORCED[key]} at ${path}`);
    if (typeof s.$ref === 'string' && !resolves(root, s.$ref))
      found.add(`\`$ref: "${s.$ref}"\` (only local references)`);
    // XGrammar looks pointers up segment by segment as written, without decoding `~0`, `~1` or `%`: it would abort.
    else if (typeof s.$ref === 'string' && /[~%]/.test(s.$ref))
      found.add(
        `\`$ref: "${s.$ref}"\` (a pointer with \`~\` or \`%\` escapes; name definitions without \`/\`, \`~\`, \`%\`)`,
      );
    if (typeof s.pattern === 'string') {
      const why = patternProblem(s.pattern);
      if (why) found.add(`\`pattern: ${JSON.stringify(s.pattern)}\` (${why}) at ${path}`);
    }
    for (const key of BOUNDS) {
      const bound = s[key];
      if (typeof bound === 'number' && Math.abs(bound) > Number.MAX_SAFE_INTEGER)
        found.add(`\`${key}: ${bound}\`, past ±2^53, at ${path}`);
    }
    if (typeof s.format === 'string' && !SUPPORTED_FORMATS.has(s.format))
      found.add(`\`format: "${s.format}"\` at ${path}`);
    if (typeof s.exclusiveMinimum === 'boolean' || typeof s.exclusiveMaximum === 'boolean') {
      found.add(`draft-04 boolean \`exclusiveMinimum\`/\`exclusiveMaximum\` at ${path}`);
    }
    if (s.uniqueItems === true) found.add(`\`uniqueItems\` at ${path}`);
    if (typeof s.pattern === 'string' && (s.minLength !== undefined || s.maxLength !== undefined)) {
      found.add(`\`pattern\` together with \`minLength\`/\`maxLength\` at ${path}`);
    }
    if (Array.isArray(s.enum) && s.enum.length > MAX_ENUM)
      found.add(`an \`enum\` of more than ${MAX_ENUM} values at ${path}`);
    if (
      (s.minItems !== undefined || s.maxItems !== undefined) &&
      s.items === undefined &&
      s.prefixItems === undefined
    ) {
      found.add(`\`minItems\`/\`maxItems\` without \`items\` at ${path}`);
    }
    if (Array.isArray(s.required)) {
      // Without `properties` too: XGrammar ignores a required property it has no schema for.
      const declared = (s.properties ?? {}) as Schema;
      for (const name of s.required) {
        if (typeof name === 'string' && !Object.hasOwn(declared, name))
          found.add(`\`required\` names \`${name}\`, which is not in \`properties\`, at ${path}`);
      }
    }
    if (Array.isArray(s.oneOf) && !disjoint(s.oneOf, root)) {
      found.add(
        `\`oneOf\` whose alternatives can match the same value at ${path} (use \`anyOf\`, or tell them apart by type or by a \`const\` property)`,
      );
    }
    // `additionalProperties: false` means "no other properties", not a `false` subschema: booleans are fine there.
    for (const key of SUBSCHEMA)
      if (s[key] !== undefined && typeof s[key] !== 'boolean') visit(s[key], `${path}/${key}`);
    for (const key of SUBSCHEMA_MAPS) {
      const map = s[key];
      if (map && typeof map === 'object')
        for (const [name, sub] of Object.entries(map)) visit(sub, `${path}/${key}/${name}`);
    }
    for (const key of SUBSCHEMA_LISTS) {
      const list = s[key];
      if (Array.isArray(list)) list.forEach((sub, i) => visit(sub, `${path}/${key}/${i}`));
    }
  };
  visit(schema, '#');
  return [...found];
}

/** Whether a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, ...) points at something in the root schema. */
function resolves(root: unknown, ref: string): boolean {
  if (!ref.startsWith('#')) return false;
  return lookup(root, ref) !== undefined;
}

function lookup(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = (node as Schema)[key];
  }
  return node;
}

/**
 * Whether no value can match two alternatives of a `oneOf`, judged cheaply: every alternative has a distinct JSON
 * type, or all are objects that one required property tells apart with distinct `const`s. XGrammar treats `oneOf` as
 * `anyOf`, so only then does the grammar keep its "exactly one" meaning.
 */
function disjoint(alternatives: unknown[], root: unknown): boolean {
  const resolved = alternatives.map((a) => {
    const s = a as Schema;
    return typeof s?.$ref === 'string' ? (lookup(root, s.$ref) as Schema | undefined) : s;
  });
  if (resolved.some((s) => !s || typeof s !== 'object')) return false;
  const types = resolved.map((s) => s!.type);
  const distinct = types.every((t) => typeof t === 'string') && new Set(types).size === types.length;
  if (distinct && !(types.includes('number') && types.includes('integer'))) {
    return true;
  }
  if (types.some((t) => t !== 'object')) return false;
  const props = resolved.map((s) => (s!.properties ?? {}) as Record<string, Schema>);
  const candidates = Object.keys(props[0]!).filter((name) =>
    resolved.every(
      (s, i) => Array.isArray(s!.required) && s!.required.includes(name) && props[i]![name]?.const !== undefined,
    ),
  );
  return candidates.some((name) => {
    const values = props.map((p) => JSON.stringify(p[name]!.const));
    return new Set(values).size === values.length;
  });
}

/**
 * Why XGrammar cannot take a `pattern`, or nothing: it must be an ECMAScript regular expression (as validators read
 * it, with the `u` flag), without the constructs XGrammar's regex converter aborts on (measured): lookaround,
 * backreferences, word boundaries and Unicode property escapes.
 */
function patternProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
  } catch {
    return 'not a valid regular expression';
  }
  try {
    jsonPattern(pattern);
  } catch (error) {
    if (error instanceof PatternProblem) return error.message;
    throw error;
  }
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[++i] ?? '';
      if (/[pP]/.test(next)) return 'a Unicode property escape';
      if (inClass) continue;
      if (/[bB]/.test(next)) return 'a word boundary';
      if (/[1-9k]/.test(next)) return 'a backreference';
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && /^\?<?[=!]/.test(pattern.slice(i + 1, i + 4))) {
      return 'a lookaround';
    }
  }
  return undefined;
}

/**
 * A copy of `schema` with `map` applied to every subschema, innermost first and the root last: the places that hold
 * schemas, as {@link unsupportedFeatures} walks them. What holds data (`const`, `enum`, `default`, `examples`) is kept
 * as it is, however much it looks like a schema.
 */
export function mapSubschemas(schema: unknown, map: (schema: Schema) => Schema): unknown {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  const out: Schema = { ...(schema as Schema) };
  for (const key of SUBSCHEMA) if (out[key] !== undefined) out[key] = mapSubschemas(out[key], map);
  for (const key of SUBSCHEMA_MAPS) {
    const entries = out[key];
    if (entries && typeof entries === 'object' && !Array.isArray(entries)) {
      out[key] = Object.fromEntries(Object.entries(entries).map(([name, sub]) => [name, mapSubschemas(sub, map)]));
    }
  }
  for (const key of SUBSCHEMA_LISTS) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map((sub) => mapSubschemas(sub, map));
  }
  return map(out);
}
