/**
 * Items a client sends (`conversation.item.create`, `response.create`'s `input`), checked and given ids, and the
 * conversation as chat messages for `POST /v1/chat/completions`.
 */
import {
  isRecord,
  RealtimeClientError,
  realtimeId,
  type RealtimeContentPart,
  type RealtimeItem,
} from './realtime-events.ts';

/** A client item and, for a user `input_audio` part that brought audio but no transcript, that audio (base64). */
export interface ClientItem {
  item: RealtimeItem;
  audio?: { base64: string; contentIndex: number } | undefined;
}

const fail = (param: string, message: string, code = 'invalid_value'): never => {
  throw new RealtimeClientError(message, param, code);
};

function text(value: unknown, param: string): string {
  if (typeof value !== 'string') fail(param, `Invalid type for '${param}': expected a string.`);
  return value as string;
}

/** The parts each role may hold, as the GA protocol has them. */
const PARTS: Record<'user' | 'system' | 'assistant', readonly string[]> = {
  user: ['input_text', 'input_audio'],
  system: ['input_text'],
  assistant: ['output_text', 'output_audio'],
};

export function parseClientItem(raw: unknown, param = 'item'): ClientItem {
  if (!isRecord(raw)) return fail(param, `Invalid type for '${param}': expected an object.`);
  const id = raw.id === undefined || raw.id === null ? realtimeId('item') : text(raw.id, `${param}.id`);
  if (id.length > 64) fail(`${param}.id`, `Invalid '${param}.id': at most 64 characters.`);
  const base = { id, object: 'realtime.item' as const, status: 'completed' as const };
  switch (raw.type) {
    case 'message': {
      const role = raw.role;
      if (role !== 'user' && role !== 'system' && role !== 'assistant')
        return fail(`${param}.role`, `Invalid '${param}.role': expected 'user', 'system' or 'assistant'.`);
      if (!Array.isArray(raw.content))
        return fail(`${param}.content`, `Invalid type for '${param}.content': expected an array.`);
      let audio: ClientItem['audio'];
      const content = raw.content.map((part, i): RealtimeContentPart => {
        const at = `${param}.content[${i}]`;
        if (!isRecord(part)) return fail(at, `Invalid type for '${at}': expected an object.`);
        const type = part.type === 'text' ? (role === 'assistant' ? 'output_text' : 'input_text') : part.type;
        if (typeof type !== 'string' || !PARTS[role].includes(type))
          return fail(
            `${at}.type`,
            `Invalid '${at}.type': ${JSON.stringify(part.type)}. A ${role} message takes ${PARTS[role].join(' or ')}.`,
          );
        switch (type) {
          case 'input_text':
            return { type, text: text(part.text, `${at}.text`) };
          case 'output_text':
            return { type, text: text(part.text, `${at}.text`) };
          case 'input_audio': {
            const transcript = part.transcript == null ? null : text(part.transcript, `${at}.transcript`);
            if (transcript === null) {
              if (typeof part.audio !== 'string' || part.audio.length === 0)
                fail(
                  `${at}.audio`,
                  `Missing '${at}.audio': an input_audio part needs audio or a transcript.`,
                  'missing_required_parameter',
                );
              audio ??= { base64: part.audio as string, contentIndex: i };
            }
            return { type, transcript };
          }
          default:
            return {
              type: 'output_audio',
              transcript: part.transcript == null ? null : text(part.transcript, `${at}.transcript`),
            };
        }
      });
      return { item: { ...base, type: 'message', role, content }, audio };
    }
    case 'function_call':
      return {
        item: {
          ...base,
          type: 'function_call',
          call_id: text(raw.call_id, `${param}.call_id`),
          name: text(raw.name, `${param}.name`),
          arguments: raw.arguments === undefined ? '' : text(raw.arguments, `${param}.arguments`),
        },
      };
    case 'function_call_output':
      return {
        item: {
          ...base,
          type: 'function_call_output',
          call_id: text(raw.call_id, `${param}.call_id`),
          output: text(raw.output, `${param}.output`),
        },
      };
    default:
      return fail(
        `${param}.type`,
        `Invalid '${param}.type': ${JSON.stringify(raw.type)}. Supported: 'message', 'function_call', 'function_call_output'.`,
      );
  }
}

/** A message's words: its text parts and its audio's transcripts. */
export function itemText(content: readonly RealtimeContentPart[]): string {
  return content
    .map((p) => (p.type === 'input_text' || p.type === 'output_text' ? p.text : (p.transcript ?? '')))
    .join(' ')
    .trim();
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * The chat messages for a response: the instructions as the system message, then the items (a run of function calls
 * as one assistant message, as chat completions has them). A user message whose audio had no words is left out, and
 * so is a function output whose call is not among the items (the chat route would refuse it).
 */
export function chatMessages(instructions: string, items: readonly RealtimeItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (instructions.trim() !== '') messages.push({ role: 'system', content: instructions });
  const calls = new Set<string>();
  for (const item of items) {
    if (item.type === 'message') {
      const words = itemText(item.content);
      if (item.role === 'assistant') {
        if (words !== '') messages.push({ role: 'assistant', content: words });
      } else if (words !== '') messages.push({ role: item.role, content: words });
    } else if (item.type === 'function_call') {
      const call: ChatToolCall = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments || '{}' },
      };
      const last = messages.at(-1);
      if (last?.role === 'assistant' && last.tool_calls) last.tool_calls.push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
      calls.add(item.call_id);
    } else if (calls.has(item.call_id)) {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
    }
  }
  return messages;
}
