/**
 * The Realtime API's wire (GA), as openai-node types it in `resources/realtime/realtime.d.ts`: the items of a
 * conversation, the client events the session reads and the ids it mints. Server events are sent as
 * {@link RealtimeServerEvent}: a `type`, an `event_id` and the fields openai-node lists for that type.
 */

/** A Realtime server event as sent on the wire (`type` plus its fields). */
export interface RealtimeServerEvent {
  type: string;
  event_id: string;
  [field: string]: unknown;
}

/** A server event before the session stamps its `event_id`. */
export type ServerEventBody = { type: string; [field: string]: unknown };

/** One part of a message item (`RealtimeConversationItem*Message`'s `content`). */
export type RealtimeContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_audio'; audio?: string | null; transcript: string | null }
  | { type: 'output_text'; text: string }
  | { type: 'output_audio'; audio?: string | null; transcript: string | null };

export type ItemStatus = 'completed' | 'incomplete' | 'in_progress';

export interface RealtimeMessageItem {
  id: string;
  object: 'realtime.item';
  type: 'message';
  role: 'user' | 'assistant' | 'system';
  status: ItemStatus;
  content: RealtimeContentPart[];
}

export interface RealtimeFunctionCallItem {
  id: string;
  object: 'realtime.item';
  type: 'function_call';
  status: ItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}

export interface RealtimeFunctionCallOutputItem {
  id: string;
  object: 'realtime.item';
  type: 'function_call_output';
  status: ItemStatus;
  call_id: string;
  output: string;
}

export type RealtimeItem = RealtimeMessageItem | RealtimeFunctionCallItem | RealtimeFunctionCallOutputItem;

/** `RealtimeResponseUsage`: the tokens the chat model counted (audio tokens are not counted separately here). */
export interface RealtimeUsage {
  total_tokens: number;
  input_tokens: number;
  output_tokens: number;
  input_token_details: { text_tokens: number; audio_tokens: number; cached_tokens: number };
  output_token_details: { text_tokens: number; audio_tokens: number };
}

export type ResponseStatus = 'in_progress' | 'completed' | 'cancelled' | 'incomplete' | 'failed';

/** `RealtimeResponse` as `response.created` and `response.done` carry it. */
export interface RealtimeResponse {
  id: string;
  object: 'realtime.response';
  status: ResponseStatus;
  status_details: null | { type: string; reason?: string; error?: { type: string; code?: string; message?: string } };
  output: RealtimeItem[];
  conversation_id: string | null;
  output_modalities: ('text' | 'audio')[];
  max_output_tokens: number | 'inf';
  audio: { output: { format: unknown; voice: string } };
  usage: RealtimeUsage | null;
  metadata: Record<string, string> | null;
}

/** The `error` object of an `error` event (`RealtimeError`). */
export interface RealtimeErrorBody {
  type: 'invalid_request_error' | 'server_error';
  code: string | null;
  message: string;
  param: string | null;
  event_id: string | null;
}

/** A client event that broke a rule, answered as an `error` event rather than thrown. */
export class RealtimeClientError extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = 'invalid_value',
    readonly errorType: RealtimeErrorBody['type'] = 'invalid_request_error',
  ) {
    super(message);
  }
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An id like OpenAI's (`event_…`, `item_…`, `resp_…`, `sess_…`, `call_…`): the prefix and 22 random characters. */
export function realtimeId(prefix: 'event' | 'item' | 'resp' | 'sess' | 'call' | 'conv'): string {
  const bytes = crypto.getRandomValues(new Uint8Array(22));
  let id = '';
  for (const b of bytes) id += ID_ALPHABET[b % ID_ALPHABET.length];
  return `${prefix}_${id}`;
}

/** Narrows a parsed JSON value to a plain object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
