import {
  messageParts,
  type ChatMessage,
  type ChatRequest,
  type FunctionCall,
  type MessagePart,
  type ToolDefinition,
} from '../engine-interface/index.ts';
import type { ReplyParserOptions } from './reply-parser.ts';
import { HERMES, type ToolCallSyntax, type ToolFormat } from './tool-call-syntax.ts';

/** A tool as chat templates take it: OpenAI's shape, in the transformers convention (`strict` is not the model's). */
export interface TemplateTool {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

/**
 * A message as chat templates take it: calls with their arguments as objects, as the transformers convention has; a
 * user turn with images as parts, `{type: "text", text}` and `{type: "image", image}` in the client's order, as vision
 * models' templates take them (they print their image token for each `image` part).
 */
export interface TemplateMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | MessagePart[];
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: unknown } }[];
  tool_call_id?: string;
  /** An assistant turn's thought, as templates of reasoning models take it (Qwen3's, DeepSeek-R1's). */
  reasoning_content?: string;
}

/** What a model is given and how its reply is read, for one request. */
export interface ToolPrompt {
  /** The messages to render with the model's template (or, for web-llm, to send). */
  messages: TemplateMessage[];
  /** The tools for the model's template, when it renders them itself. */
  tools?: TemplateTool[];
  /** How to read calls in the reply; absent when the reply may hold none (no tools, or `tool_choice: "none"`). */
  calls?: { syntax: ToolCallSyntax } & ReplyParserOptions;
}

/**
 * The prompt for a chat request in the model's tool format. Without a tool constraint (no tools, or `tool_choice:
 * "none"`) the model is not shown any: it cannot call what it does not see, and a conversation without tools renders
 * exactly as before; earlier calls and results in the history are still rendered. In the `template` format the model's
 * own template renders tools, calls and results; in the `generic` format Lantern writes them into plain turns
 * (`genericMessages`).
 */
export function toolPrompt(request: ChatRequest, format: ToolFormat): ToolPrompt {
  const constraint = request.constraint?.type === 'tools' ? request.constraint : undefined;
  const tools = constraint?.tools ?? [];
  const calls = constraint
    ? {
        syntax: format.syntax,
        names: new Set(tools.map((t) => t.name)),
        ...(!constraint.parallel && { maxCalls: 1 }),
      }
    : undefined;
  if (format.mode === 'generic') {
    return { messages: genericMessages(request.messages, tools), ...(calls && { calls }) };
  }
  return {
    messages: templateMessages(request.messages, format.syntax),
    ...(tools.length && { tools: tools.map(templateTool) }),
    ...(calls && { calls }),
  };
}

function templateTool({ name, description, parameters }: ToolDefinition): TemplateTool {
  return { type: 'function', function: { name, ...(description !== undefined && { description }), parameters } };
}

/**
 * The messages for a template that knows tools. Arguments go in as objects (templates write them with `tojson`); a
 * family that renders one call per turn gets an assistant turn per call.
 */
export function templateMessages(messages: ChatMessage[], syntax: ToolCallSyntax): TemplateMessage[] {
  return messages.flatMap((m): TemplateMessage[] => {
    if (m.role === 'tool') return [{ role: 'tool', content: m.content, tool_call_id: m.toolCallId ?? '' }];
    const thought = m.role === 'assistant' && m.reasoning ? { reasoning_content: m.reasoning } : {};
    if (m.role !== 'assistant' || !m.toolCalls?.length) return [{ role: m.role, content: contentOf(m), ...thought }];
    const calls = m.toolCalls.map((call) => ({
      id: call.id,
      type: 'function' as const,
      function: { name: call.name, arguments: argumentsObject(call.arguments) },
    }));
    if (syntax.parallel) return [{ role: 'assistant', content: m.content, tool_calls: calls, ...thought }];
    return calls.map((call, i) => ({
      role: 'assistant',
      content: i === 0 ? m.content : '',
      tool_calls: [call],
      ...(i === 0 && thought),
    }));
  });
}

/** A turn's content for a template: its text, or its parts where it has images. */
function contentOf(m: ChatMessage): string | MessagePart[] {
  return m.images?.length ? messageParts(m) : m.content;
}

/** The arguments as an object for the template; text that is not JSON stays text. */
function argumentsObject(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Lantern's generic tool format, for models whose template knows no tools: the Hermes format of Qwen2.5, written into
 * plain system, user and assistant turns. The tools are described at the end of the system turn (one is added if the
 * conversation has none); an assistant's calls are written after its text, each as `<tool_call>\n{"name": …,
 * "arguments": …}\n</tool_call>`; consecutive tool results form one user turn of `<tool_response>` blocks.
 */
export function genericMessages(messages: ChatMessage[], tools: ToolDefinition[]): TemplateMessage[] {
  const out: TemplateMessage[] = [];
  for (const m of messages) {
    if (m.role === 'tool') {
      const block = `<tool_response>\n${m.content}\n</tool_response>`;
      const last = out.at(-1);
      if (last?.role === 'user' && typeof last.content === 'string' && last.content.startsWith('<tool_response>')) {
        last.content += `\n${block}`;
      } else out.push({ role: 'user', content: block });
    } else if (m.role === 'assistant' && m.toolCalls?.length) {
      const calls = m.toolCalls.map((call) => writeCall(HERMES, call));
      out.push({ role: 'assistant', content: [m.content, ...calls].filter(Boolean).join('\n') });
    } else out.push({ role: m.role, content: contentOf(m) });
  }
  if (!tools.length) return out;
  const description = describeTools(tools);
  if (out[0]?.role === 'system') out[0] = { role: 'system', content: `${out[0].content}\n\n${description}` };
  else out.unshift({ role: 'system', content: description });
  return out;
}

/** The system prompt's tool section in the generic format: Qwen2.5's own words. */
export function describeTools(tools: ToolDefinition[]): string {
  const signatures = tools.map((t) => toJson(templateTool(t))).join('\n');
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${signatures}\n</tools>\n\n` +
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> ' +
    'XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** One call as `syntax` writes it: `<tool_call>\n{"name": "f", "arguments": {…}}\n</tool_call>` in Hermes. */
export function writeCall(syntax: ToolCallSyntax, call: FunctionCall): string {
  const parsed = argumentsObject(call.arguments || '{}');
  const args = typeof parsed === 'string' ? parsed : toJson(parsed);
  return `${syntax.open}{"${syntax.nameKey}": ${JSON.stringify(call.name)}, "${syntax.argumentsKey}": ${args}}${syntax.close}`;
}

/**
 * JSON as chat templates' `tojson` writes it (Python's `json.dumps`: `", "` and `": "` between items), so that the
 * generic format shows a model the same text as a template that knows tools would.
 */
export function toJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(toJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const items = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${items.map(([k, v]) => `${JSON.stringify(k)}: ${toJson(v)}`).join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
