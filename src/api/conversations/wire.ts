import type { CompactionItem } from '../responses/compaction.ts';
import type { ResponseOutputItem } from '../responses/wire.ts';

/**
 * The Conversations API's wire format, as openai-node's `Conversation`, `ConversationDeletedResource` and
 * `ConversationItemList` have it, for the items Lantern keeps: messages, function calls and their outputs, reasoning
 * and file searches. Request bodies are described by `schema.ts`.
 */

export interface Conversation {
  /** `conv_…` */
  id: string;
  object: 'conversation';
  /** Unix seconds. */
  created_at: number;
  metadata: Record<string, string>;
}

/** `DELETE /v1/conversations/{id}`. */
export interface ConversationDeleted {
  id: string;
  object: 'conversation.deleted';
  deleted: true;
}

/** A part of a message item: text by the side that wrote it, or an image of a user's message. */
export type ItemContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'output_text'; text: string; annotations: unknown[]; logprobs: unknown[] }
  | { type: 'input_image'; image_url: string; detail: 'auto' | 'low' | 'high'; file_id: null };

/** A message of a conversation, whoever wrote it. */
export interface MessageItem {
  id: string;
  type: 'message';
  role: 'user' | 'assistant' | 'system' | 'developer';
  status: 'completed';
  content: ItemContentPart[];
}

/** An item of a conversation as listed: a response's output items as they were answered, or an input item. */
export type ConversationItem =
  | ResponseOutputItem
  | MessageItem
  | { id: string; type: 'function_call_output'; call_id: string; output: string; status: 'completed' }
  /** A compaction's summary, as `/v1/responses/compact` made it. */
  | CompactionItem;

/** A list of items: `items.create`'s answer, and each page of `items.list` and of a response's `input_items`. */
export interface ConversationItemList {
  object: 'list';
  data: ConversationItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
