import type { ChatRequest } from '../../engine/index.ts';
import type { ReplyConstraint } from '../generation/reply-constraint.ts';
import type { ToolPrompt } from './tool-prompt.ts';

/**
 * What a reply to `request` must be: with tools it may call (and `tool_choice` not `none`), the tool constraint in the
 * model's call syntax, holding the response format for replies without calls; otherwise the response format alone,
 * if any. The same description of the call syntax drives the prompt, the parser and this grammar.
 */
export function replyConstraint(request: ChatRequest, prompt: ToolPrompt): ReplyConstraint | undefined {
  if (!prompt.calls || !request.tools?.length) return request.constraint;
  const choice = request.toolChoice;
  return {
    type: 'tools',
    tools: request.tools,
    choice: choice === undefined || choice === 'none' ? 'auto' : choice,
    parallel: request.parallelToolCalls !== false && prompt.calls.syntax.parallel,
    syntax: prompt.calls.syntax,
    text: request.constraint,
  };
}
