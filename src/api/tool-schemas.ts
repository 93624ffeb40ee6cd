import * as z from 'zod';
import type {
  ChatImage,
  ChatMessage,
  JsonConstraint,
  OutputConstraint,
  ToolConstraint,
  ToolDefinition,
} from '../engine-interface/index.ts';
import { invalidRequest } from './errors.ts';
import { checkImageUrl, textAndImages, type chatImagePart, type ImagePartLimits } from './image-parts.ts';
import { optional } from './request-validation.ts';
import { checkSchemaBudget, type SchemaLimits } from './schema-budget.ts';

/*
 * Tool calling on the wire, as the OpenAI API takes it: `tools`, `tool_choice`, `parallel_tool_calls`, assistant
 * messages with `tool_calls`, `tool` messages with `tool_call_id`; and their conversion to the engine request: the
 * conversation's calls and results, and the request's one output constraint. The legacy `functions` / `function_call`
 * are refused with a 400 that says what to send instead. Chat completions and the Responses API both convert here.
 */

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const functionName = z
  .string()
  .regex(FUNCTION_NAME, 'Function names are 1 to 64 letters, digits, underscores and dashes (^[a-zA-Z0-9_-]{1,64}$).');

export const toolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: functionName,
    description: optional(z.string()),
    parameters: optional(z.record(z.string(), z.unknown(), 'Function parameters are a JSON Schema: an object.')),
    strict: optional(z.boolean()),
  }),
});

export const toolChoiceSchema = z.union(
  [
    z.enum(['none', 'auto', 'required']),
    z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
  ],
  {
    // A word that is none of the three: say what is allowed. A malformed object reports its own field.
    error: (issue) =>
      typeof issue.input === 'string'
        ? `Invalid value for 'tool_choice': expected "none", "auto", "required" or ` +
          `{"type": "function", "function": {"name": …}}, but got ${JSON.stringify(issue.input)}.`
        : undefined,
  },
);

/** A call in an assistant message of the history: `arguments` is JSON as text, as the API returned it. */
export const toolCallSchema = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const LEGACY =
  'are the deprecated function-calling parameters: declare the functions in `tools` (each `{"type": "function", ' +
  '"function": {...}}`) and choose with `tool_choice`.';

/** The chat request's tool fields, for the chat schema. */
export const toolFields = {
  tools: optional(z.array(toolSchema).max(128)),
  tool_choice: optional(toolChoiceSchema),
  parallel_tool_calls: optional(z.boolean()),
  // An empty list is accepted as "no functions", as it always was.
  functions: optional(z.array(z.unknown()).max(0, `\`functions\` and \`function_call\` ${LEGACY}`)),
  function_call: optional(z.never(`\`function_call\` and \`functions\` ${LEGACY}`)),
};

type WirePart = { type: 'text'; text: string } | z.output<typeof chatImagePart>;
type WireContent = string | WirePart[];

/** A message as the chat schema parses it (roles and fields checked; which fields each role needs is checked here). */
export interface WireMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: WireContent | null | undefined;
  tool_calls?: z.output<typeof toolCallSchema>[] | null | undefined;
  tool_call_id?: string | null | undefined;
  /**
   * An assistant message's thought, as reasoning servers return it and clients send it back: `reasoning_content`
   * (vLLM, llama.cpp, DeepSeek), `reasoning` (Ollama, OpenRouter).
   */
  reasoning_content?: string | null | undefined;
  reasoning?: string | null | undefined;
}

/**
 * A message's text and images. Images are a user message's alone, as the OpenAI API has it; each data URL is checked
 * against the size limit here, before anything is fetched or decoded.
 */
function contentOf(m: WireMessage, i: number, limits: ImagePartLimits): { content: string; images: ChatImage[] } {
  const content = m.content;
  if (content == null) return { content: '', images: [] };
  if (typeof content === 'string') return { content, images: [] };
  const parts = content.map((part, j) => {
    if (part.type === 'text') return { text: part.text };
    if (m.role !== 'user') {
      throw invalidRequest(
        `Invalid 'messages[${i}]'. Image URLs are only allowed for messages with role 'user', but this message with ` +
          `role '${m.role}' contains an image URL.`,
        `messages[${i}]`,
      );
    }
    const param = `messages[${i}].content[${j}]`;
    const { url, detail } = typeof part.image_url === 'string' ? { url: part.image_url, detail: null } : part.image_url;
    checkImageUrl(url, `${param}.image_url${typeof part.image_url === 'string' ? '' : '.url'}`, limits.maxImageBytes);
    return { image: { url, detail: detail ?? 'auto', param } };
  });
  return textAndImages(parts);
}

/**
 * The conversation as the engine takes it. As the OpenAI API does, it refuses a message without the fields its role
 * needs, a `tool` message that answers no call of the assistant message before it, and calls left without an answer.
 */
export function toEngineMessages(messages: WireMessage[], limits: ImagePartLimits): ChatMessage[] {
  const out: ChatMessage[] = [];
  /** Calls of the last assistant message that have no answer yet. */
  let unanswered: string[] = [];
  messages.forEach((m, i) => {
    const calls = m.role === 'assistant' ? (m.tool_calls ?? []) : [];
    if (m.content == null && !calls.length) {
      throw invalidRequest(`Missing required parameter: 'messages[${i}].content'.`, `messages[${i}].content`);
    }
    const { content, images } = contentOf(m, i, limits);
    if (m.role === 'tool') {
      if (m.tool_call_id == null) {
        throw invalidRequest(
          `Missing required parameter: 'messages[${i}].tool_call_id'.`,
          `messages[${i}].tool_call_id`,
        );
      }
      if (!unanswered.includes(m.tool_call_id)) {
        throw invalidRequest(
          `Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' ` +
            `(no call with the id ${JSON.stringify(m.tool_call_id)} is waiting for an answer).`,
          `messages[${i}]`,
        );
      }
      unanswered = unanswered.filter((id) => id !== m.tool_call_id);
      out.push({ role: 'tool', content, toolCallId: m.tool_call_id });
      return;
    }
    if (unanswered.length) throw unansweredCalls(unanswered, i);
    const role = m.role === 'developer' ? 'system' : m.role;
    const message: ChatMessage = { role, content };
    if (images.length > 0) message.images = images;
    const thought = m.role === 'assistant' ? (m.reasoning_content ?? m.reasoning) : undefined;
    if (thought) message.reasoning = thought;
    if (calls.length) {
      message.toolCalls = calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      unanswered = calls.map((c) => c.id);
    }
    out.push(message);
  });
  if (unanswered.length) throw unansweredCalls(unanswered, messages.length - 1);
  return out;
}

const unansweredCalls = (ids: string[], index: number) =>
  invalidRequest(
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
      `The following tool_call_ids did not have response messages: ${ids.join(', ')}`,
    `messages[${index}]`,
  );

/** A declared function, whichever route declared it (chat nests it under `function`, the Responses API does not). */
export interface WireFunction {
  name: string;
  description?: string | null | undefined;
  parameters?: Record<string, unknown> | null | undefined;
  strict?: boolean | null | undefined;
}

/** `tool_choice`, whichever route sent it: a mode, or the function that must be called. */
export type WireToolChoice = 'none' | 'auto' | 'required' | { name: string };

/**
 * How a route names a field of `tools[i]` in its errors: chat's `tools[i].function.name`, the Responses API's
 * `tools[i].name`.
 */
export type ToolParamNamer = (index: number, field: 'name' | 'parameters') => string;

/** Chat completions' tools: each a function under `function`. */
export const chatToolParam: ToolParamNamer = (index, field) => `tools[${index}].function.${field}`;

/**
 * The request's one output constraint, from its response format (`text`: JSON a reply must be) and its tools: a tool
 * set whose calls may answer (holding the response format for replies without calls), the response format alone, or
 * nothing. An empty `tools` is no tools; with `tool_choice: "none"` the model is shown none. A named function in
 * `tool_choice` must be one of them, and names must be unique, since a call is known by its name. Each function's
 * schema carries the request's own name for it, for the refusals of its parameters; all of them together are held to
 * the request's schema budget (`schema-budget.ts`).
 */
export function toConstraint(
  text: JsonConstraint | undefined,
  tools: readonly WireFunction[],
  choice: WireToolChoice | null | undefined,
  parallel: boolean | null | undefined,
  paramOf: ToolParamNamer,
  limits: SchemaLimits,
): OutputConstraint | undefined {
  // `tool_choice` without tools is refused before, by each route's schema.
  const definitions = tools.map((f, i): ToolDefinition => {
    if (tools.findIndex((t) => t.name === f.name) !== i) {
      throw invalidRequest(`Duplicate function name ${JSON.stringify(f.name)} in 'tools'.`, paramOf(i, 'name'));
    }
    return {
      name: f.name,
      ...(f.description != null && { description: f.description }),
      parameters: f.parameters ?? { type: 'object', properties: {} },
      ...(f.strict != null && { strict: f.strict }),
      param: paramOf(i, 'parameters'),
    };
  });
  checkSchemaBudget(
    [
      ...(text?.schema ? [{ param: text.param ?? 'response_format', schema: text.schema }] : []),
      ...definitions.map((t) => ({ param: t.param!, schema: t.parameters })),
    ],
    limits,
  );
  if (typeof choice === 'object' && choice !== null && !definitions.some((t) => t.name === choice.name)) {
    throw invalidRequest(
      `Invalid value for 'tool_choice': the function ${JSON.stringify(choice.name)} is not one of 'tools'.`,
      'tool_choice',
    );
  }
  if (!definitions.length || choice === 'none') return text;
  const constraint: ToolConstraint = {
    type: 'tools',
    tools: definitions,
    choice: choice ?? 'auto',
    parallel: parallel ?? true,
  };
  return text ? { ...constraint, text } : constraint;
}
