import { EngineError, type FunctionCall, type OutputConstraint, type ToolDefinition } from '../../engine/index.ts';
import type { ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { BoundedCache } from './bounded-cache.ts';
import { unsupportedFeatures } from './json-schema-support.ts';
import { constraintGrammar, narrow, violation } from './output-constraint.ts';
import { narrowSchema, withRanges } from './schema-narrowing.ts';
import { loadXGrammar } from './xgrammar.ts';

/*
 * The constraint of a reply that may call tools: the same mechanism as structured output (refused up front when it
 * cannot be enforced, a grammar applied as a logits mask, every finished reply checked), with a grammar written as an
 * XGrammar structural tag. Each call is its family's syntax around one declared function's name and arguments that
 * match its `parameters`; `auto` lets free text run until a call's opening marker (a trigger) and holds what follows
 * to a valid call; `required` and a named function admit calls only; one call without parallel calls.
 */

/** A reply that may call tools, as the engine derives it from the request and the model's call syntax. */
export interface ToolConstraint {
  type: 'tools';
  tools: ToolDefinition[];
  /** `auto`: text or calls; `required`: calls only; `{ name }`: calls of that function only. */
  choice: 'auto' | 'required' | { name: string };
  /** Whether a reply may hold several calls. */
  parallel: boolean;
  syntax: ToolCallSyntax;
  /** What a reply without calls must be (the request's `response_format`), if anything. */
  text: OutputConstraint | undefined;
}

/** Distinct parameter schemas whose grammars are kept. */
const CACHE_SIZE = 64;

/** The wire parameter a function's schema comes from, named in a refusal. */
const paramOf = (index: number) => `tools[${index}].function.parameters`;

/**
 * Refuses, as a 400 naming the function's `parameters`, a tool whose arguments the grammar would not enforce exactly;
 * returns the constraint's cache key otherwise.
 */
export function checkToolConstraint(constraint: ToolConstraint): string {
  constraint.tools.forEach((tool, i) => {
    const unsupported = unsupportedFeatures(tool.parameters);
    if (unsupported.length > 0) {
      throw new EngineError(
        'invalid_request',
        `The parameters of the function ${JSON.stringify(tool.name)} cannot be enforced while generating, so they ` +
          `are refused rather than ignored: ${unsupported.slice(0, 5).join('; ')}. See the README's "Structured ` +
          `output" for what is supported.`,
        { param: paramOf(i) },
      );
    }
  });
  return JSON.stringify(constraint);
}

const argumentGrammars = new BoundedCache<string, Promise<string>>(CACHE_SIZE);

/**
 * The grammar of one function's arguments, as EBNF: one line of JSON with `", "` and `": "` between items, as chat
 * templates write arguments (`tojson`) and so as models learned to; no free white space to loop on.
 */
function argumentsGrammar(tool: ToolDefinition, index: number): Promise<string> {
  const key = JSON.stringify(tool.parameters);
  const grammar = argumentGrammars.getOrCreate(key, async () => {
    const xg = await loadXGrammar();
    let grammar;
    try {
      const schema = narrowSchema(tool.parameters);
      grammar = await xg.Grammar.fromJSONSchema(JSON.stringify(schema), false, -1, [', ', ': '], true);
    } catch (error) {
      if (error instanceof EngineError) throw new EngineError(error.kind, error.message, { param: paramOf(index) });
      if (error instanceof WebAssembly.RuntimeError || /Aborted/.test(String(error)))
        throw EngineError.from(error, 'internal');
      throw new EngineError('invalid_request', `This JSON schema cannot be compiled: ${String(error)}`, {
        param: paramOf(index),
      });
    }
    try {
      return narrow(withRanges(grammar.toString()));
    } finally {
      grammar.dispose();
    }
  });
  grammar.catch(() => argumentGrammars.delete(key));
  return grammar;
}

/** An XGrammar structural tag, as `Grammar.fromStructuralTag` and web-llm's `response_format` take it. */
export type StructuralTag = { type: 'structural_tag'; format: Record<string, unknown> };

/** The structural tag of a reply with tools (see the file's comment). */
export async function toolStructuralTag(constraint: ToolConstraint): Promise<StructuralTag> {
  checkToolConstraint(constraint);
  const { syntax, choice, parallel } = constraint;
  const named = typeof choice === 'object' ? choice.name : undefined;
  const tags = await Promise.all(
    constraint.tools.map(async (tool, i) =>
      named !== undefined && tool.name !== named
        ? undefined
        : {
            type: 'tag',
            begin: `${syntax.open}{"${syntax.nameKey}": ${JSON.stringify(tool.name)}, "${syntax.argumentsKey}": `,
            content: { type: 'grammar', grammar: await argumentsGrammar(tool, i) },
            end: `}${syntax.close}`,
          },
    ),
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
    const json = { type: 'grammar', grammar: await constraintGrammar(constraint.text) };
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

/**
 * Checks a finished reply against its tool constraint: every call names a declared function (of the name asked for)
 * and its arguments validate against that function's `parameters`; `required` and a named function made a call; one
 * call at most without parallel calls; a reply without calls is what the response format asks for. Returns nothing
 * when it holds; otherwise why not.
 */
export function toolViolation(
  constraint: ToolConstraint,
  reply: { text: string; toolCalls: FunctionCall[] },
): string | undefined {
  const { toolCalls: calls, text } = reply;
  if (!calls.length) {
    if (constraint.choice !== 'auto') return 'the reply made no tool call, though one was required';
    return constraint.text ? violation(constraint.text, text) : undefined;
  }
  if (!constraint.parallel && calls.length > 1) return `the reply made ${calls.length} calls without parallel calls`;
  for (const call of calls) {
    const tool = constraint.tools.find((t) => t.name === call.name);
    const named = typeof constraint.choice === 'object' ? constraint.choice.name : call.name;
    if (!tool || named !== call.name) return `the reply called ${JSON.stringify(call.name)}, which it may not`;
    const why = violation({ type: 'json', schema: tool.parameters }, call.arguments);
    if (why) return `the arguments of ${JSON.stringify(call.name)} are invalid: ${why}`;
  }
  return undefined;
}
