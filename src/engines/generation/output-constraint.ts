import { Validator, type Schema } from '@cfworker/json-schema';
import { EngineError, type OutputConstraint } from '../../engine/index.ts';
import { BoundedCache } from './bounded-cache.ts';
import { unsupportedFeatures } from './json-schema-support.ts';
import { loadXGrammar } from './xgrammar.ts';

/*
 * An output constraint, engine-independent: refused up front when the grammar engine would not enforce it, turned into
 * one grammar (EBNF text) that both engines run, and checked with a real validator when a choice ends. Each engine
 * compiles the grammar against its own vocabulary and applies it as a logits mask (transformers.js: `grammar-mask.ts`,
 * applied by its sampling processor; web-llm: its own `response_format: {type: "grammar"}`). Tool calling (issue 14)
 * adds a constraint type whose grammar is a structural tag; the refusal, the caches, the masks and the check stay.
 */

/** Distinct constraints whose grammar text and validator are kept: an app rarely uses more schemas than this. */
const CACHE_SIZE = 64;

/** The wire parameter a constraint comes from, named in every refusal. */
const PARAM = 'response_format';

/** Any JSON object, for the OpenAI API's `json_object`. */
const ANY_OBJECT = { type: 'object', additionalProperties: true };

/**
 * Refuses, as a 400 naming `response_format`, a constraint the engines would not enforce exactly; returns its cache
 * key otherwise.
 */
export function checkConstraint(constraint: OutputConstraint): string {
  if (constraint.schema !== null) {
    const unsupported = unsupportedFeatures(constraint.schema);
    if (unsupported.length > 0) {
      throw new EngineError(
        'invalid_request',
        `This JSON schema cannot be enforced while generating, so it is refused rather than ignored: ` +
          `${unsupported.slice(0, 5).join('; ')}. See the README's "Structured output" for what is supported.`,
        { param: PARAM },
      );
    }
  }
  return JSON.stringify(constraint);
}

const grammars = new BoundedCache<string, Promise<string>>(CACHE_SIZE);

/**
 * The grammar of a constraint as EBNF text, the same for every engine and vocabulary: compact JSON (no whitespace
 * between tokens, so a model cannot loop on it), and no properties beyond those the schema allows. XGrammar writes
 * it from the schema; Lantern then narrows the few rules that would let invalid JSON through (see {@link narrow}).
 */
export function constraintGrammar(constraint: OutputConstraint): Promise<string> {
  const key = checkConstraint(constraint);
  const grammar = grammars.getOrCreate(key, async () => {
    const xg = await loadXGrammar();
    let grammar;
    try {
      const schema = constraint.schema ? narrowSchema(constraint.schema) : ANY_OBJECT;
      grammar = await xg.Grammar.fromJSONSchema(JSON.stringify(schema), false, -1, [',', ':'], true);
    } catch (error) {
      // An abort kills XGrammar's WebAssembly for the rest of this realm: an internal error, after which a browser's
      // engine worker is replaced. Anything else is the schema's fault.
      if (/Aborted/.test(messageOf(error))) throw EngineError.from(error, 'internal');
      throw new EngineError('invalid_request', `This JSON schema cannot be compiled: ${messageOf(error)}`, {
        param: PARAM,
      });
    }
    try {
      return narrow(grammar.toString());
    } finally {
      grammar.dispose();
    }
  });
  grammar.catch(() => grammars.delete(key));
  return grammar;
}

/**
 * Rules of XGrammar 0.1.27's output that admit text a validator rejects, replaced by narrower ones that admit only
 * valid text (each found by the random walks of `bench/structured-output-libraries.ts`; tested in
 * output-constraint.test.ts):
 * - strings with `minLength`/`maxLength` allow raw control characters (`[^"\\\r\n]`), which JSON forbids;
 * - `format: "date"` allows the 31st of every month: days are narrowed to 01–28;
 * - `format: "date-time"`/`"time"` allow a 60th minute or second: narrowed to 00–59.
 */
export function narrow(ebnf: string): string {
  return ebnf
    .replaceAll('[^\\"\\\\\\r\\n]', '[^\\0-\\x1f\\"\\\\]')
    .replaceAll('(("0" [1-9]) | ([1-2] [0-9]) | ("3" [01]))', '(("0" [1-9]) | ("1" [0-9]) | ("2" [0-8]))')
    .replaceAll('(([0-5] [0-9]) | ("6" "0"))', '(([0-5] [0-9]))');
}

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

/** Formats whose grammar is Lantern's own pattern rather than XGrammar's rule. */
const FORMAT_PATTERNS: Readonly<Record<string, string>> = { email: EMAIL_PATTERN, uri: URI_PATTERN };

/**
 * The schema as the grammar is written from it, narrowed where XGrammar 0.1.27 would admit invalid values:
 * - every `format: "email"` or `"uri"` becomes a pattern ({@link EMAIL_PATTERN}, {@link URI_PATTERN});
 * - the bounds of every `type: "number"`: XGrammar bounds a decimal by its integer part and lets any fraction follow,
 *   so `maximum: 1` admits 1.5 and `minimum: -3` admits -3.5 (and exclusive bounds are treated as inclusive), and a
 *   one-sided bound is ignored. Bounds on the integer part that keep every fraction inside the range are given instead
 *   (a value in [0, 1] is generated as 0.xxx; a missing side gets a bound a billion away); a range across zero is
 *   split in two at zero, as XGrammar's admits a leading zero there (`09`). A range too narrow for that is refused.
 * The validator still checks the output against the schema as sent.
 */
export function narrowSchema(schema: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema), (_key, value: unknown) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
    const s = value as Record<string, unknown>;
    if (s.type === 'string' && typeof s.format === 'string' && FORMAT_PATTERNS[s.format]) {
      const { format, ...rest } = s;
      return { ...rest, pattern: FORMAT_PATTERNS[format as string] };
    }
    if (s.type !== 'number') return value;
    let lo =
      typeof s.minimum === 'number'
        ? s.minimum
        : typeof s.exclusiveMinimum === 'number'
          ? s.exclusiveMinimum
          : undefined;
    let hi =
      typeof s.maximum === 'number'
        ? s.maximum
        : typeof s.exclusiveMaximum === 'number'
          ? s.exclusiveMaximum
          : undefined;
    if (lo === undefined && hi === undefined) return value;
    lo ??= Math.min(hi!, 0) - 1e9;
    hi ??= Math.max(lo, 0) + 1e9;
    const { minimum: _a, maximum: _b, exclusiveMinimum: _c, exclusiveMaximum: _d, ...rest } = s;
    const out: Record<string, unknown> = { ...rest };
    const exclusiveLo = typeof s.minimum !== 'number';
    const exclusiveHi = typeof s.maximum !== 'number';
    // A fraction moves a negative integer part down and a positive one up: leave a whole unit of room on that side.
    if (lo !== undefined)
      out.minimum = lo < 0 ? Math.ceil(lo) + 1 : Math.ceil(lo) + (exclusiveLo && Number.isInteger(lo) ? 1 : 0);
    if (hi !== undefined) {
      out.maximum =
        hi > 0 ? Math.floor(hi) - 1 : Math.min(Math.floor(hi) - (exclusiveHi && Number.isInteger(hi) ? 1 : 0), -1);
    }
    const [min, max] = [out.minimum as number, out.maximum as number];
    // XGrammar's decimal range across zero with a wide maximum admits a leading zero ("09"): split it at zero.
    if (min < 0 && max >= 0) {
      return {
        anyOf: [
          { ...rest, type: 'number', minimum: min, maximum: -1 },
          { ...rest, type: 'number', minimum: 0, maximum: max },
        ],
      };
    }
    if (min > max) {
      throw new EngineError(
        'invalid_request',
        `The range of a \`number\` (${lo} to ${hi}) is too narrow to enforce while generating.`,
        { param: PARAM },
      );
    }
    return out;
  }) as Record<string, unknown>;
}

const validators = new BoundedCache<string, Validator>(CACHE_SIZE);

/**
 * Checks a finished choice's text against its constraint. Returns nothing when it is valid; otherwise why not.
 */
export function violation(constraint: OutputConstraint, text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `the output is not JSON (${messageOf(error)})`;
  }
  const key = JSON.stringify(constraint);
  const validator = validators.getOrCreate(
    key,
    () => new Validator((constraint.schema ?? ANY_OBJECT) as Schema, draftOf(constraint.schema), false),
  );
  let result;
  try {
    result = validator.validate(value);
  } catch (error) {
    // @cfworker/json-schema 4.1 throws a URIError on a property name holding a lone surrogate ("\ud800").
    return `the output could not be validated (${messageOf(error)})`;
  }
  if (result.valid) return undefined;
  const first = result.errors.at(-1);
  return `the output does not match the schema (${first ? `${first.instanceLocation}: ${first.error}` : 'invalid'})`;
}

/** The error for a choice that ended without a valid answer. */
export function invalidOutput(choice: number, why: string): EngineError {
  return new EngineError(
    'invalid_output',
    `Choice ${choice} ended without a valid structured answer: ${why}. No invalid JSON is returned; try again.`,
  );
}

function draftOf(schema: Record<string, unknown> | null): '4' | '7' | '2019-09' | '2020-12' {
  const declared = typeof schema?.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('draft-04')) return '4';
  if (declared.includes('draft-07') || declared.includes('draft-06')) return '7';
  if (declared.includes('2019-09')) return '2019-09';
  return '2020-12';
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
