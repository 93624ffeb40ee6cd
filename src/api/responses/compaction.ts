import type { Context } from 'hono';
import { messageParts } from '../conversations/items.ts';
import type { MessageItem } from '../conversations/wire.ts';
import { newId } from '../ids.ts';
import { parseJsonObject } from '../request-body.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { responseUsage } from '../usage.ts';
import { encodeCompaction } from './compaction-content.ts';
import { responsesParser, type ConversationItem } from './schema.ts';
import { asInputError, prepareTurn } from './turn.ts';
import type { ResponseUsage } from './wire.ts';

/** The item that stands for everything else a compaction replaced. */
export interface CompactionItem {
  id: string;
  type: 'compaction';
  encrypted_content: string;
}

/** `POST /v1/responses/compact`'s answer (openai-node's `CompactedResponse`). */
export interface CompactedResponse {
  id: string;
  object: 'response.compaction';
  created_at: number;
  output: (MessageItem | CompactionItem)[];
  usage: ResponseUsage;
}

/**
 * Most tokens of a summary: a page of notes, a small share of a small model's window, so that the compacted
 * conversation leaves room for the turns after it. A request's `max_output_tokens` may set it lower or higher.
 */
const SUMMARY_MAX_TOKENS = 512;

/** What the model is asked, after the conversation it summarises. */
const SUMMARY_REQUEST =
  'Summarize the conversation so far for yourself, to continue it later without it: keep every name, number, date, ' +
  'decision and open question, what the user wants, and what you were doing. Include any earlier summary. Write ' +
  'only the summary.';

/**
 * `POST /v1/responses/compact`: the conversation of a request (its `input`, after the stored response it continues)
 * made short, as OpenAI's compaction does: every user message as it was, then one `compaction` item whose content
 * stands for the rest (the assistant's replies, tool calls and their outputs, earlier summaries). The model writes
 * that summary. The output is the input of the next request: `[...output, newMessage]`, where the compaction item is
 * read back as a system turn. Nothing is stored, as OpenAI stores nothing of a compaction.
 */
export function compactResponse(deps: RouteDeps) {
  const parse = responsesParser(deps.limits, { inputOptional: true });
  return async (c: Context<Env>) => {
    const params = parse(await parseJsonObject(c.get('body')));
    const signal = c.req.raw.signal;
    // A summary calls no tool and needs no format: only the conversation and the request for it.
    const { constraint: _constraint, ...request } = params.request;
    const turn = await prepareTurn(
      deps,
      c.get('key').id,
      { ...params, request: { ...request, defaultMaxTokens: SUMMARY_MAX_TOKENS }, fileSearch: null },
      signal,
    );
    const result = await turn
      .chat({ signal }, [...turn.messages, { role: 'user', content: SUMMARY_REQUEST }])
      .catch(asInputError);
    const summary = result.choices[0]!.text.trim();
    return c.json<CompactedResponse>({
      id: newId('resp_'),
      object: 'response.compaction',
      created_at: Math.floor(deps.now() / 1000),
      output: [
        ...turn.conversation.flatMap(userMessage),
        { id: newId('cmp_'), type: 'compaction', encrypted_content: encodeCompaction(summary) },
      ],
      usage: responseUsage(result.usage),
    });
  };
}

/** A user message of the conversation as a compaction keeps it (as the Conversations API lists it); nothing else. */
function userMessage(item: ConversationItem): MessageItem[] {
  if (item.type !== 'message' || item.role !== 'user') return [];
  return [
    { id: item.id ?? newId('msg_'), type: 'message', role: 'user', status: 'completed', content: messageParts(item) },
  ];
}
