import { Validator, type Schema } from '@cfworker/json-schema';
import {
  EngineError,
  type FunctionCall,
  type JsonConstraint,
  type JsonSchema,
  type OutputConstraint,
  type ToolConstraint,
} from '../engine-interface/index.ts';
import { HERMES, type ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { BoundedCache } from './bounded-cache.ts';
import { withLinearRegExp } from './regex-match.ts';
import { StepBudget } from './step-budget.ts';
import {
  ANY_OBJECT,
  ARGUMENTS,
  checkConstraint,
  COMPACT,
  jsonParam,
  schemaGrammar,
  toolParam,
} from './constraint-check.ts';

/*
 * An output constraint, engine-independent, in three steps that every engine shares: refused up front when the grammar
 * engine would not enforce it (`checkConstraint` in constraint-check.ts, before any model loads), turned into one grammar that both engines
 * run (`constraintGrammar`: EBNF text for JSON; an XGrammar structural tag for a reply that may call tools, its calls
 * written in the model's syntax), and checked with a real validator when a choice ends (`violation`). Each engine
 * compiles the grammar against its own vocabulary and applies it as a logits mask (transformers.js: `grammar-mask.ts`,
 * applied by its sampling processor; web-llm: its own `response_format: {type: "grammar" | "structural_tag"}`).
 * Every refusal is a 400 naming the request's own parameter, which the constraint carries.
 */

/** Distinct constraints whose grammar and validator are kept: an app rarely uses more schemas than this. */
const CACHE_SIZE = 64;

/** A grammar for XGrammar: EBNF text (root rule `root`), or a structural tag. */
export type GrammarSpec = { ebnf: string } | { structuralTag: StructuralTag };

/** An XGrammar structural tag, as `Grammar.fromStructuralTag` and web-llm's `response_format` take it. */
export type StructuralTag = { type: 'structural_tag'; format: Record<string, unknown> };

const grammars = new BoundedCache<string, Promise<GrammarSpec>>(CACHE_SIZE);

/**
 * The grammar of a constraint for a model whose tool calls read as `syntax` (the same for every engine and
 * vocabulary), written once per constraint and syntax by Lantern's schema compiler (schema-grammar.ts, through
 * constraint-check.ts); a constraint no grammar would enforce is refused there. JSON is compact (no white space
 * between tokens, so that a model cannot loop on it); arguments are written as chat templates write them (`", "` and
 * `": "`), as models learned.
 */
export function constraintGrammar(
  constraint: OutputConstraint,
  syntax: ToolCallSyntax = HERMES,
  { thinking = false }: { thinking?: boolean } = {},
): Promise<GrammarSpec> {
  const key = grammarKey(constraint, syntax, thinking);
  const grammar = grammars.getOrCreate(key, async () => {
    checkConstraint(constraint);
    const spec: GrammarSpec =
      constraint.type === 'json'
        ? { ebnf: jsonGrammar(constraint) }
        : { structuralTag: toolStructuralTag(constraint, syntax) };
    return thinking ? afterThought(spec) : spec;
  });
  grammar.catch(() => grammars.delete(key));
  return grammar;
}

/**
 * A grammar that lets a reasoning model think first: its thought is free text inside `<think>…</think>` (as Qwen3
 * writes it), then the blank line it writes, then what the constraint allows. The thought is not constrained, as the
 * OpenAI API applies structured outputs and tools to the answer only.
 */
function afterThought(spec: GrammarSpec): GrammarSpec {
  const answer = 'ebnf' in spec ? { type: 'grammar', grammar: spec.ebnf } : spec.structuralTag.format;
  const thought = { type: 'tag', begin: '<think>', content: { type: 'any_text' }, end: '</think>' };
  const format = { type: 'sequence', elements: [thought, { type: 'const_string', value: '\n\n' }, answer] };
  return { structuralTag: { type: 'structural_tag', format } };
}

/** What a constraint's grammar is cached under, for a model of this call syntax (thinking first or not). */
export const grammarKey = (constraint: OutputConstraint, syntax: ToolCallSyntax, thinking = false) =>
  `${thinking ? 'think:' : ''}${syntax.family}:${JSON.stringify(constraint)}`;

const jsonGrammar = (constraint: JsonConstraint) =>
  schemaGrammar(constraint.schema ?? ANY_OBJECT, COMPACT, jsonParam(constraint));

/**
 * The structural tag of a reply that may call tools: each call is its family's syntax around one declared function's
 * name and arguments that match its `parameters`; `auto` lets free text run until a call's opening marker (a trigger)
 * and holds what follows to a valid call; `required` and a named function admit calls only; one call without parallel
 * calls (or in a family that writes one call per turn).
 */
function toolStructuralTag(constraint: ToolConstraint, syntax: ToolCallSyntax): StructuralTag {
  const { choice } = constraint;
  const parallel = constraint.parallel && syntax.parallel;
  const named = typeof choice === 'object' ? choice.name : undefined;
  const tags = constraint.tools.map((tool, i) =>
    named !== undefined && tool.name !== named
      ? undefined
      : {
          type: 'tag',
          begin: `${syntax.open}{"${syntax.nameKey}": ${JSON.stringify(tool.name)}, "${syntax.argumentsKey}": `,
          content: {
            type: 'grammar',
            grammar: schemaGrammar(tool.parameters, ARGUMENTS, toolParam(tool, i)),
          },
          end: `}${syntax.close}`,
        },
  );
  const callTags = tags.filter((t) => t !== undefined);
  // One call: any of the tags. Several: tags with the family's separator between them.
  const calls = !parallel
    ? { type: 'or', elements: callTags }
    : { type: 'tags_with_separator', tags: callTags, separator: syntax.separator, at_least_one: true };
  if (choice !== 'auto') return { type: 'structural_tag', format: calls };
  const trigger = syntax.open.trim();
  if (constraint.text) {
    // Either the answer the response format asks for, or calls (one: XGrammar nests no repeated tags in a choice).
    const json = { type: 'grammar', grammar: jsonGrammar(constraint.text) };
    return { type: 'structural_tag', format: { type: 'or', elements: [json, ...callTags] } };
  }
  if (trigger) {
    // Free text until the opening marker; from it on, a whole call.
    const format = { type: 'triggered_tags', triggers: [trigger], tags: callTags, at_least_one: false };
    return { type: 'structural_tag', format: { ...format, stop_after_first: !parallel } };
  }
  // A bare JSON call is the whole reply: the reply is a call, or text that does not begin as one.
  const text = { type: 'grammar', grammar: 'root ::= ([^{ \\t\\n\\r] [^\\0]*)?' };
  return { type: 'structural_tag', format: { type: 'or', elements: [...callTags, text] } };
}

/** A finished reply: its text and the calls read out of it. */
export interface Reply {
  text: string;
  toolCalls?: FunctionCall[];
}

/**
 * Checks a finished reply against its constraint. JSON: the text parses and validates. Tools: every call names a
 * declared function (of the name asked for) and its arguments validate against that function's `parameters`;
 * `required` and a named function made a call; one call at most without parallel calls; a reply without calls is
 * what the response format asks for. Returns nothing when it holds; otherwise why not.
 */
export function violation(constraint: OutputConstraint, reply: Reply): string | undefined {
  if (constraint.type === 'json') return jsonViolation(constraint.schema, reply.text);
  const calls = reply.toolCalls ?? [];
  if (!calls.length) {
    if (constraint.choice !== 'auto') return 'the reply made no tool call, though one was required';
    return constraint.text ? jsonViolation(constraint.text.schema, reply.text) : undefined;
  }
  if (!constraint.parallel && calls.length > 1) return `the reply made ${calls.length} calls without parallel calls`;
  for (const call of calls) {
    const tool = constraint.tools.find((t) => t.name === call.name);
    const named = typeof constraint.choice === 'object' ? constraint.choice.name : call.name;
    if (!tool || named !== call.name) return `the reply called ${JSON.stringify(call.name)}, which it may not`;
    const why = jsonViolation(tool.parameters, call.arguments);
    if (why) return `the arguments of ${JSON.stringify(call.name)} are invalid: ${why}`;
  }
  return undefined;
}

const validators = new BoundedCache<string, Validator>(CACHE_SIZE);

/** Checks JSON text against a schema (`null`: any JSON object); nothing when it is valid, otherwise why not. */
function jsonViolation(schema: JsonSchema | null, text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `the output is not JSON (${messageOf(error)})`;
  }
  const key = JSON.stringify(schema);
  const validator = validators.getOrCreate(
    key,
    () => new Validator((schema ?? ANY_OBJECT) as Schema, draftOf(schema), false),
  );
  let result;
  try {
    // The schema's `pattern`s and `patternProperties` are matched in linear time, within a budget of steps
    // (regex-match.ts): @cfworker/json-schema runs them through the global RegExp, with no option to do otherwise.
    const budget = new StepBudget('the output needs more than %d steps to validate');
    result = withLinearRegExp(budget, () => validator.validate(value));
  } catch (error) {
    // @cfworker/json-schema 4.1 throws a URIError on a property name holding a lone surrogate ("\ud800"); a pattern
    // with lookaround or a backreference cannot be matched in linear time; the budget can run out.
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

function draftOf(schema: JsonSchema | null): '4' | '7' | '2019-09' | '2020-12' {
  const declared = typeof schema?.$schema === 'string' ? schema.$schema : '';
  if (declared.includes('draft-04')) return '4';
  if (declared.includes('draft-07') || declared.includes('draft-06')) return '7';
  if (declared.includes('2019-09')) return '2019-09';
  return '2020-12';
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
