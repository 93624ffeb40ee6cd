import { EngineError } from '../../engine/index.ts';
import { decimalRange, integerRange } from './digit-ranges.ts';
import { mapSubschemas } from './json-schema-support.ts';
import { jsonPattern } from './pattern-narrowing.ts';

/*
 * The schema as XGrammar 0.1.27 is given it: narrowed wherever its own rule would admit invalid values or abort, so
 * that the grammar admits only valid ones. Only the grammar's copy is narrowed; the validator still checks every output
 * against the schema as sent. Each rule was found by the grammar walks (bench/structured-output-libraries.ts) or by the
 * property tests (test/structured-output/schema-properties.test.ts), and has a test in schema-narrowing.test.ts.
 */

type Schema = Record<string, unknown>;

/**
 * An email address the validators all accept (letters and digits, dot-separated, a top-level domain of letters): what
 * a grammar generates for `format: "email"`. XGrammar's own email rule has no length limits, and a local part over
 * 64 characters or a domain label over 63 is invalid.
 */
const EMAIL_PATTERN = '^[a-z0-9]{1,16}(\\.[a-z0-9]{1,16}){0,2}@[a-z0-9]{1,16}(\\.[a-z0-9]{1,16}){0,2}\\.[a-z]{2,6}$';

/**
 * A URI every validator accepts, for `format: "uri"`: XGrammar's URI rule admits text that RFC 3986 validators
 * reject (seen with stories260K's vocabulary).
 */
const URI_PATTERN = '^https?://[a-z0-9]{1,16}(\\.[a-z0-9]{1,16}){0,3}(/[A-Za-z0-9_-]{1,16}){0,4}$';

/**
 * An IPv4 address without leading zeros, for `format: "ipv4"`: XGrammar's rule admits `10.0.0.000`, which ajv-formats
 * rejects (a leading zero reads as octal to some parsers).
 */
const IPV4_PATTERN = '^((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])$';

/** Formats whose grammar is Lantern's own pattern rather than XGrammar's rule. */
const FORMAT_PATTERNS: Readonly<Record<string, string>> = {
  email: EMAIL_PATTERN,
  uri: URI_PATTERN,
  ipv4: IPV4_PATTERN,
};

const BOUNDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];

/** The bound an integer is given on a side the schema leaves open (10^15 - 1: one range XGrammar writes exactly). */
const INTEGER_LIMIT = 1e15 - 1;

/**
 * The schema as the grammar is written from it, each subschema narrowed (never `const`, `enum` or annotation values,
 * which are data):
 * - property names are escaped for XGrammar, which writes them into its grammar as they are: a name holding `"`, `\`
 *   or a control character made it abort, or generate invalid JSON;
 * - a `pattern` describes the string as JSON writes it (pattern-narrowing.ts): XGrammar wrote `"`, `\` and control
 *   characters raw;
 * - every `format: "email"`, `"uri"` or `"ipv4"` becomes a pattern ({@link FORMAT_PATTERNS});
 * - a bounded integer or decimal becomes a placeholder for a range that Lantern writes itself, whole, inclusive and
 *   two-sided ({@link narrowInteger}, {@link narrowNumber}, {@link withRanges});
 * - a type list with bounds becomes an `anyOf` of single types, so that its numbers are narrowed too.
 */
export function narrowSchema(schema: Schema): Schema {
  return mapSubschemas(schema, (s) => narrowValues(escapeNames(s))) as Schema;
}

function narrowValues(s: Schema): Schema {
  if (typeof s.pattern === 'string') s = { ...s, pattern: jsonPattern(s.pattern) };
  if (Array.isArray(s.type) && BOUNDS.some((k) => s[k] !== undefined)) {
    return anyOf(
      s,
      (s.type as unknown[]).map((type) => narrowValues({ ...s, type })),
    );
  }
  if (s.type === 'string' && typeof s.format === 'string' && Object.hasOwn(FORMAT_PATTERNS, s.format)) {
    const { format, ...rest } = s;
    return { ...rest, pattern: FORMAT_PATTERNS[format as string] };
  }
  // With an `enum` or a `const`, the values are the grammar; bounds could only abort XGrammar.
  if ((s.type === 'integer' || s.type === 'number') && (s.enum !== undefined || s.const !== undefined)) {
    return withoutBounds(s);
  }
  if (s.type === 'integer') return narrowInteger(s);
  if (s.type === 'number') return narrowNumber(s);
  return s;
}

/**
 * A property name as XGrammar must be given it: the name as JSON writes it (escaped), escaped again for the string
 * literals of its grammar, into which XGrammar copies names unescaped.
 */
const grammarName = (name: string) => JSON.stringify(name).slice(1, -1).replaceAll('\\', '\\\\').replaceAll('"', '\\"');

function escapeNames(s: Schema): Schema {
  const properties = s.properties;
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) return s;
  const names = Object.keys(properties);
  if (names.every((name) => grammarName(name) === name)) return s;
  return {
    ...s,
    properties: Object.fromEntries(names.map((name) => [grammarName(name), (properties as Schema)[name]])),
    ...(Array.isArray(s.required) && {
      required: s.required.map((name: unknown) => (typeof name === 'string' ? grammarName(name) : name)),
    }),
  };
}

/** The tighter of an inclusive and an exclusive bound on one side; `beyond(a, b)`: `a` is tighter than `b`. */
function tighter(inclusive: unknown, exclusive: unknown, beyond: (a: number, b: number) => boolean) {
  const a = typeof inclusive === 'number' ? { at: inclusive, exclusive: false } : undefined;
  const b = typeof exclusive === 'number' ? { at: exclusive, exclusive: true } : undefined;
  if (!a || !b) return a ?? b;
  return beyond(a.at, b.at) ? a : b;
}

function withoutBounds(s: Schema): Schema {
  const { minimum: _a, maximum: _b, exclusiveMinimum: _c, exclusiveMaximum: _d, ...rest } = s;
  return rest;
}

/** `s` as the alternatives `pieces` made of it; its definitions stay where pointers from the root find them. */
function anyOf(s: Schema, pieces: Schema[]): Schema {
  return { ...definitionsOf(s), anyOf: pieces.map(({ $defs: _a, definitions: _b, ...piece }) => piece) };
}

const definitionsOf = (s: Schema): Schema => ({
  ...(s.$defs !== undefined && { $defs: s.$defs }),
  ...(s.definitions !== undefined && { definitions: s.definitions }),
});

/**
 * Marks the placeholder of a numeric range: a `const` string that XGrammar writes as a literal, which
 * {@link withRanges} then replaces by the range's own grammar. Random per realm, so that no schema's own `const` can
 * be taken for one.
 */
const MARK = `lantern-range-${Math.random().toString(36).slice(2, 12)}`;
const PLACEHOLDER = new RegExp(`"\\\\"${MARK}:(integer|number):(-?\\d+):(-?\\d+)\\\\""`, 'g');

const range = (s: Schema, type: 'integer' | 'number', lo: number, hi: number): Schema => ({
  ...definitionsOf(s),
  const: `${MARK}:${type}:${lo}:${hi}`,
});

/** The grammar text written from a narrowed schema, each numeric range in it written by Lantern (digit-ranges.ts). */
export function withRanges(ebnf: string): string {
  return ebnf.replace(PLACEHOLDER, (_text, type: string, lo: string, hi: string) =>
    (type === 'integer' ? integerRange : decimalRange)(Number(lo), Number(hi)),
  );
}

/**
 * Whole, inclusive bounds on both sides, written by Lantern (see digit-ranges.ts for what XGrammar 0.1.27 writes; it
 * also aborts on a fractional bound of an integer, "must be a whole number"). A missing side is bounded at
 * ±(10^15 - 1), or 2^53 past that (bounds past 2^53 are refused).
 */
function narrowInteger(s: Schema): Schema {
  const lower = tighter(s.minimum, s.exclusiveMinimum, (a, b) => a > b);
  const upper = tighter(s.maximum, s.exclusiveMaximum, (a, b) => a < b);
  if (!lower && !upper) return s;
  let lo = lower && (lower.exclusive ? Math.floor(lower.at) + 1 : Math.ceil(lower.at));
  let hi = upper && (upper.exclusive ? Math.ceil(upper.at) - 1 : Math.floor(upper.at));
  lo ??= hi! < -INTEGER_LIMIT ? -Number.MAX_SAFE_INTEGER : -INTEGER_LIMIT;
  hi ??= lo > INTEGER_LIMIT ? Number.MAX_SAFE_INTEGER : INTEGER_LIMIT;
  if (lo > hi) {
    throw new EngineError('invalid_request', `The range of an \`integer\` (${lower?.at} to ${upper?.at}) holds none.`);
  }
  return range(s, 'integer', lo, hi);
}

/**
 * XGrammar bounds a decimal by its integer part and lets any fraction follow, so `maximum: 1` admits 1.5 and
 * `minimum: -3` admits -3.5 (and exclusive bounds are treated as inclusive), and a one-sided bound is ignored. Bounds on
 * the integer part that keep every fraction inside the range are used instead (a value in [0, 1] is generated as
 * 0.xxx; a missing side gets a bound a billion away), written by Lantern (digit-ranges.ts). A range too narrow for that
 * is refused. Of an inclusive and an exclusive bound on one side, the tighter one holds.
 */
function narrowNumber(s: Schema): Schema {
  const lower = tighter(s.minimum, s.exclusiveMinimum, (a, b) => a > b);
  const upper = tighter(s.maximum, s.exclusiveMaximum, (a, b) => a < b);
  if (!lower && !upper) return s;
  const lo = lower?.at ?? Math.min(upper!.at, 0) - 1e9;
  const hi = upper?.at ?? Math.max(lo, 0) + 1e9;
  const exclusiveLo = lower?.exclusive ?? true;
  const exclusiveHi = upper?.exclusive ?? true;
  // A fraction moves a negative integer part down and a positive one up: leave a whole unit of room on that side.
  const min = lo < 0 ? Math.ceil(lo) + 1 : Math.ceil(lo) + (exclusiveLo && Number.isInteger(lo) ? 1 : 0);
  const max =
    hi > 0 ? Math.floor(hi) - 1 : Math.min(Math.floor(hi) - (exclusiveHi && Number.isInteger(hi) ? 1 : 0), -1);
  if (min > max) {
    throw new EngineError(
      'invalid_request',
      `The range of a \`number\` (${lo} to ${hi}) is too narrow to enforce while generating.`,
    );
  }
  // Past 2^32 a double keeps fewer than six decimals: 4503599627370507.528 reads as …508. Whole numbers only there.
  return range(s, Math.max(-min, max) >= 2 ** 32 ? 'integer' : 'number', min, max);
}
