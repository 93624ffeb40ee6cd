import type { ConversationItem as InputItem } from '../responses/schema.ts';
import { encodeCompaction } from '../responses/compaction-content.ts';
import { outputAsInput } from '../responses/conversation.ts';
import type { ResponseOutputItem } from '../responses/wire.ts';
import type { ConversationItem, ItemContentPart } from './wire.ts';

/**
 * An item of a conversation as kept: what the model is given of it (`item`, the Responses API's input item, with its
 * id), and what lists show (`wire`: a response's output item as it was answered, or the input item in OpenAI's shape).
 */
export interface KeptItem {
  item: InputItem & { id: string };
  wire: ConversationItem;
}

/** A new item id, with the prefix OpenAI gives items of its kind. */
function newItemId(type: InputItem['type']): string {
  const prefix = {
    message: 'msg_',
    function_call: 'fc_',
    function_call_output: 'fco_',
    reasoning: 'rs_',
    compaction: 'cmp_',
  }[type as string];
  return (prefix ?? 'fs_') + crypto.randomUUID().replace(/-/g, '');
}

/** An input item as a conversation keeps it, with an id of its own when it came without one. */
export function keptInput(item: InputItem): KeptItem {
  const withId = { ...item, id: item.id ?? newItemId(item.type) };
  return { item: withId, wire: toWireItem(withId) };
}

/** A response's output item as a conversation keeps it: as answered, and as the next turn's input. */
export function keptOutput(output: ResponseOutputItem): KeptItem {
  return { item: { ...outputAsInput(output), id: output.id }, wire: output };
}

/** An input item in the shape OpenAI lists it. */
export function toWireItem(item: InputItem & { id: string }): ConversationItem {
  switch (item.type) {
    case 'message':
      return { id: item.id, type: 'message', role: item.role, status: 'completed', content: messageParts(item) };
    case 'function_call':
      return { ...item, status: 'completed' };
    case 'function_call_output':
      return { ...item, status: 'completed' };
    case 'reasoning':
      return {
        id: item.id,
        type: 'reasoning',
        summary: [],
        content: [{ type: 'reasoning_text', text: item.text }],
        status: 'completed',
      };
    case 'file_search_call':
      return { id: item.id, type: 'file_search_call', queries: item.queries, status: 'completed', results: null };
    case 'compaction':
      return { id: item.id, type: 'compaction', encrypted_content: encodeCompaction(item.summary) };
  }
}

/** A message's text and images as parts, each image where it stood among the text. */
export function messageParts(item: InputItem & { type: 'message' }): ItemContentPart[] {
  const text = (t: string): ItemContentPart =>
    item.role === 'assistant'
      ? { type: 'output_text', text: t, annotations: [], logprobs: [] }
      : { type: 'input_text', text: t };
  const parts: ItemContentPart[] = [];
  // Texts were joined by new lines: a piece after an earlier one begins with its new line.
  const piece = (from: number, to?: number) => item.content.slice(from, to).replace(from > 0 ? /^\n/ : /^$/, '');
  let at = 0;
  for (const image of item.images ?? []) {
    const before = piece(at, image.at);
    if (before) parts.push(text(before));
    parts.push({ type: 'input_image', image_url: image.url, detail: image.detail, file_id: null });
    at = image.at;
  }
  const rest = piece(at);
  if (rest || !parts.length) parts.push(text(rest));
  return parts;
}
