import type { FunctionCall, OutputConstraint } from '../../engine/index.ts';
import { checkConstraint, constraintGrammar, violation } from './output-constraint.ts';
import {
  checkToolConstraint,
  toolStructuralTag,
  toolViolation,
  type StructuralTag,
  type ToolConstraint,
} from './tool-grammar.ts';

/**
 * What a reply must be, whichever feature asked: the request's response format (`OutputConstraint`), or the tool
 * constraint the engine derives from its tools (which holds the response format, if any, for replies without calls).
 * One set of entry points for the engines: a cache key that refuses what cannot be enforced, a grammar to compile,
 * and the check of a finished reply.
 */
export type ReplyConstraint = OutputConstraint | ToolConstraint;

/** A grammar for XGrammar: EBNF text (root rule `root`), or a structural tag. */
export type GrammarSpec = { ebnf: string } | { structuralTag: StructuralTag };

/** Refuses (a 400 naming the parameter) a constraint the engines would not enforce; its cache key otherwise. */
export function constraintKey(constraint: ReplyConstraint): string {
  return constraint.type === 'tools' ? checkToolConstraint(constraint) : checkConstraint(constraint);
}

/** The constraint's grammar, the same for every engine and vocabulary. */
export async function grammarSpec(constraint: ReplyConstraint): Promise<GrammarSpec> {
  return constraint.type === 'tools'
    ? { structuralTag: await toolStructuralTag(constraint) }
    : { ebnf: await constraintGrammar(constraint) };
}

/** Checks a finished reply; returns nothing when it holds, otherwise why not. */
export function replyViolation(
  constraint: ReplyConstraint,
  reply: { text: string; toolCalls: FunctionCall[] },
): string | undefined {
  return constraint.type === 'tools' ? toolViolation(constraint, reply) : violation(constraint, reply.text);
}
