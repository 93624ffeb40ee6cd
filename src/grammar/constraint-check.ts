import {
  EngineError,
  type JsonConstraint,
  type JsonSchema,
  type OutputConstraint,
  type ToolDefinition,
} from '../engine-interface/index.ts';
import { BoundedCache } from './bounded-cache.ts';
import { compileBudget, compileSchema, SchemaRefused } from './schema-grammar.ts';
import { StepBudget, StepBudgetExceeded } from './step-budget.ts';

/*
 * The first step of every output constraint, apart from the grammar engine so that it can run where no model does
 * (the service worker, before a request is routed): each schema is compiled to its grammar (schema-grammar.ts, plain
 * TypeScript), and what no grammar can enforce is refused, as a 400 naming the request's own parameter, before any
 * model loads. The grammar text is kept for the engine that runs it.
 */

/** Where a JSON constraint's schema came from, named in its refusals. */
export const jsonParam = (constraint: JsonConstraint) => constraint.param ?? 'response_format';

/** Where a function's parameters came from, named in their refusals. */
export const toolParam = (tool: ToolDefinition, index: number) => tool.param ?? `tools[${index}].function.parameters`;

/** Any JSON object, for the OpenAI API's `json_object`. */
export const ANY_OBJECT = { type: 'object', additionalProperties: true };

/** Separators of a response format (compact) and of a call's arguments (as chat templates write them). */
export const COMPACT: readonly [string, string] = [',', ':'];
export const ARGUMENTS: readonly [string, string] = [', ', ': '];

/**
 * Refuses, as a 400 naming the request's parameter, a constraint no grammar would enforce; returns its cache key
 * otherwise. Its schemas (a response format, every function's parameters) share one budget of steps: a request of 128
 * tools costs no more to check than one of a single schema.
 */
export function checkConstraint(constraint: OutputConstraint, budget = requestBudget(constraint)): string {
  if (constraint.type === 'json') {
    schemaGrammar(constraint.schema ?? ANY_OBJECT, COMPACT, jsonParam(constraint), 'This JSON schema', budget);
  } else {
    constraint.tools.forEach((tool, i) =>
      schemaGrammar(
        tool.parameters,
        ARGUMENTS,
        toolParam(tool, i),
        `The parameters of the function ${JSON.stringify(tool.name)}`,
        budget,
      ),
    );
    if (constraint.text) checkConstraint(constraint.text, budget);
  }
  return JSON.stringify(constraint);
}

const requestBudget = (constraint: OutputConstraint) =>
  constraint.type === 'json'
    ? compileBudget()
    : new StepBudget("the request's schemas need more than %d steps to compile");

/** Distinct schemas whose grammar is kept: an app rarely uses more schemas than this. */
const CACHE_SIZE = 64;
/** A grammar, and the steps its compile took: charged again when it is reused, so that a request costs the same. */
const grammars = new BoundedCache<string, { grammar: string; steps: number }>(CACHE_SIZE);

/**
 * One schema's grammar (EBNF, root rule `root`), compiled once and cached: JSON written with `separators`, on
 * `budget`. A schema no grammar enforces is a 400 naming `param` and the first reason met (the compile stops there).
 */
export function schemaGrammar(
  schema: JsonSchema,
  separators: readonly [string, string],
  param: string,
  what = 'This JSON schema',
  budget = compileBudget(),
): string {
  const refused = (why: string) =>
    new EngineError(
      'invalid_request',
      `${what} cannot be enforced while generating, so it is refused rather than ignored: ${why}. ` +
        'See docs/structured-output.md for what is supported.',
      { param },
    );
  let compiled = false;
  const entry = grammars.getOrCreate(`${separators.join('')}:${JSON.stringify(schema)}`, () => {
    compiled = true;
    const before = budget.spent;
    try {
      return { grammar: compileSchema(schema, separators, budget), steps: budget.spent - before };
    } catch (error) {
      throw error instanceof SchemaRefused ? refused(error.message) : error;
    }
  });
  try {
    if (!compiled) budget.spend(entry.steps);
  } catch (error) {
    throw error instanceof StepBudgetExceeded ? refused(error.message) : error;
  }
  return entry.grammar;
}
