import { Validator, type Schema } from '@cfworker/json-schema';
import { EngineError, type OutputConstraint } from '../../engine/index.ts';
import { BoundedCache } from './bounded-cache.ts';
import { unsupportedFeatures } from './json-schema-support.ts';
import { narrowSchema, withRanges } from './schema-narrowing.ts';
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
      if (error instanceof EngineError) throw error; // a refusal of the narrowing, already worded
      // XGrammar's WebAssembly failed (an abort, which leaks its memory; or out of bounds, once enough aborts did): an
      // internal error, after which a browser's engine worker is replaced. Not the schema's fault.
      if (error instanceof WebAssembly.RuntimeError) throw EngineError.from(error, 'internal');
      throw new EngineError('invalid_request', `This JSON schema cannot be compiled: ${messageOf(error)}`, {
        param: PARAM,
      });
    }
    try {
      return narrow(withRanges(grammar.toString()));
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
