import type { ChatMessage } from '../../engine-interface/index.ts';
import type { ResponseStore, StoredResponse } from '../../response-store/index.ts';
import { invalidRequest } from '../errors.ts';
import type { ConversationItem, ResponsesParams } from './schema.ts';
import type { Response, ResponseOutputItem } from './wire.ts';
import type { Conversations } from '../conversations/conversations.ts';
import { keptInput, keptOutput, toWireItem } from '../conversations/items.ts';
import type { ConversationItem as ConversationItemWire } from '../conversations/wire.ts';

/**
 * What the store keeps of a response (`StoredResponse.data`): the response object, and the conversation it answered
 * without its instructions (OpenAI does not carry instructions over to a continuation): the turns before it, then its
 * request's input. Continuing it is one read, and deleting an earlier response breaks nothing.
 */
export interface KeptResponse {
  response: Response;
  conversation: ConversationItem[];
}

/** A stored response, if it exists and belongs to this key: another key's responses do not exist for it. */
export async function ownResponse(store: ResponseStore, owner: string, id: string): Promise<KeptResponse | undefined> {
  const record = await store.get(owner, id);
  // The store reads the owner's records only; checked again so that a store of the app's own that did not still
  // shows no key another's.
  return record?.owner === owner ? (record.data as KeptResponse) : undefined;
}

/** A response's output as input items of a continuation. */
export function outputAsInput(item: ResponseOutputItem): ConversationItem {
  switch (item.type) {
    case 'message':
      return {
        type: 'message',
        role: 'assistant',
        content: item.content.map((part) => part.text).join(''),
        id: item.id,
      };
    case 'reasoning':
      return { type: 'reasoning', text: item.content.map((part) => part.text).join(''), id: item.id };
    case 'function_call':
      return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments, id: item.id };
    case 'file_search_call':
      return { type: 'file_search_call', queries: item.queries, id: item.id };
  }
}

/**
 * The conversation a request continues: the stored one of `previous_response_id` and its output, then the request's
 * input with each `item_reference` replaced by the stored item it names. Unknown ids are 400s naming them. `before`
 * is the context of a request that names a conversation (the Conversations API's) instead.
 */
export async function resolveConversation(
  store: ResponseStore,
  owner: string,
  params: Pick<ResponsesParams, 'previousResponseId' | 'input'>,
  before: ConversationItem[] = [],
): Promise<ConversationItem[]> {
  const items: ConversationItem[] = [...before];
  if (params.previousResponseId !== null) {
    const previous = await ownResponse(store, owner, params.previousResponseId);
    if (!previous) {
      throw invalidRequest(
        `Previous response with id '${params.previousResponseId}' not found.`,
        'previous_response_id',
        'previous_response_not_found',
      );
    }
    // A background response still running has no output to continue from yet (its record says `queued`).
    if (previous.response.status === 'queued' || previous.response.status === 'in_progress') {
      throw invalidRequest(
        `Previous response with id '${params.previousResponseId}' is still ${previous.response.status.replace('_', ' ')}: ` +
          'wait until it has ended (poll it with GET /v1/responses/{id}), then continue it.',
        'previous_response_id',
      );
    }
    items.push(...previous.conversation, ...previous.response.output.map(outputAsInput));
  }
  for (const [i, item] of params.input.entries()) {
    if (item.type !== 'item_reference') {
      items.push(item);
      continue;
    }
    const found = await findItem(store, owner, item.id);
    if (!found) throw invalidRequest(`Item with id '${item.id}' not found.`, `input[${i}]`, 'item_not_found');
    items.push(found);
  }
  return items;
}

/** An item of this key's kept responses: item ids are the client's to choose, so each key has its own. */
async function findItem(store: ResponseStore, owner: string, id: string): Promise<ConversationItem | undefined> {
  const record: StoredResponse | undefined = await store.findItem(owner, id);
  if (record?.owner !== owner) return undefined;
  const { response, conversation } = record.data as KeptResponse;
  const output = response.output.find((item) => item.id === id);
  return output ? outputAsInput(output) : conversation.find((item) => item.id === id);
}

/** The ids a kept response answers `item_reference`s with: its conversation's and its output's. */
export function itemIds({ response, conversation }: KeptResponse): string[] {
  return [...new Set([...conversation.flatMap((item) => item.id ?? []), ...response.output.map((item) => item.id)])];
}

/**
 * The conversation as the engine takes it: the instructions first, as a system message; `developer` messages as
 * system messages, as in chat completions. Function calls join the assistant turn they follow (a reply's text, then
 * its calls, as one chat message with `tool_calls`), and each `function_call_output` is a `tool` turn. As OpenAI's
 * API does, an output must answer a call before it, and every call must have its output before the conversation goes
 * on. `offset` is the position of the request's first input item in `items` (after a continued conversation), so
 * that a refusal names the request's own item (an earlier one is named as `earlier`: where it came from).
 */
export function toChatMessages(
  instructions: string | null,
  items: ConversationItem[],
  offset = 0,
  earlier = 'previous_response_id',
): ChatMessage[] {
  const messages: ChatMessage[] = instructions === null ? [] : [{ role: 'system', content: instructions }];
  /** Calls made and not yet answered. */
  let unanswered: string[] = [];
  /** A thought not yet given to the assistant turn it came before. */
  let thought: string | undefined;
  const param = (i: number) => (i >= offset ? `input[${i - offset}]` : earlier);
  /** A new assistant turn: the thought before it is its own. */
  const assistant = (message: ChatMessage): ChatMessage => {
    if (thought) message.reasoning = thought;
    thought = undefined;
    return message;
  };
  items.forEach((item, i) => {
    // A search of an earlier turn: its passages were that turn's; this turn searches for its own question.
    if (item.type === 'file_search_call') return;
    // What a compaction replaced, as the model reads any context it is given: a system turn where it stands.
    if (item.type === 'compaction') {
      messages.push({ role: 'system', content: `${SUMMARY_HEADING}\n\n${item.summary}` });
      return;
    }
    if (item.type === 'reasoning') {
      thought = thought ? `${thought}\n${item.text}` : item.text;
      return;
    }
    if (item.type === 'function_call_output') {
      if (!unanswered.includes(item.call_id)) {
        throw invalidRequest(`No tool call found for function call output with call_id ${item.call_id}.`, param(i));
      }
      unanswered = unanswered.filter((id) => id !== item.call_id);
      messages.push({ role: 'tool', content: item.output, toolCallId: item.call_id });
      return;
    }
    if (item.type === 'function_call') {
      const call = { id: item.call_id, name: item.name, arguments: item.arguments };
      const last = messages.at(-1);
      // Calls after the assistant's text, or after its other calls, are that turn's; after results, a new turn.
      if (last?.role === 'assistant') (last.toolCalls ??= []).push(call);
      else if (unanswered.length) throw noOutput(unanswered, param(i));
      else messages.push(assistant({ role: 'assistant', content: '', toolCalls: [call] }));
      unanswered.push(item.call_id);
      return;
    }
    if (unanswered.length) throw noOutput(unanswered, param(i));
    const message: ChatMessage = { role: item.role === 'developer' ? 'system' : item.role, content: item.content };
    if (item.images?.length) message.images = item.images;
    messages.push(item.role === 'assistant' ? assistant(message) : message);
  });
  if (unanswered.length) throw noOutput(unanswered, 'input');
  return messages;
}

/** How a compaction's summary is introduced to the model. */
export const SUMMARY_HEADING = 'A summary of the conversation before this point:';

const noOutput = (ids: string[], param: string) =>
  invalidRequest(`No tool output found for function call ${ids.join(', ')}.`, param);

/**
 * The request's own items (from `offset` in the conversation), each with an id: what the Responses API lists as the
 * response's input items, and adds to its conversation. Ids are OpenAI's kind of id for the item's type.
 */
export function withItemIds(conversation: ConversationItem[], offset: number): ConversationItem[] {
  return conversation.map((item, i) => (i < offset || item.id !== undefined ? item : keptInput(item).item));
}

/**
 * Adds a finished turn to its conversation (the Conversations API's): the request's input items, then the response's
 * output, in turn with the conversation's other changes.
 */
export async function addTurn(
  conversations: Conversations,
  owner: string,
  id: string,
  input: ConversationItem[],
  output: ResponseOutputItem[],
): Promise<void> {
  const turn = [...input.map(keptInput), ...output.map(keptOutput)];
  await conversations.update(owner, id, (kept) => kept.items.push(...turn));
}

/** `GET /v1/responses/{id}/input_items`' items: the conversation the response answered, in OpenAI's shape. */
export function inputItemsOf(kept: KeptResponse): ConversationItemWire[] {
  // Items kept before input items were given ids have one made from their place, the same at every call.
  return kept.conversation.map((item, i) => toWireItem({ ...item, id: item.id ?? `msg_${kept.response.id}_${i}` }));
}
