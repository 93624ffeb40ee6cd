import type { Context } from 'hono';
import * as z from 'zod';
import type { RecordStore } from '../../record-store/index.ts';
import { ApiError } from '../errors.ts';
import { readListQuery } from '../list-query.ts';
import { parseJsonObject } from '../request-body.ts';
import { parse } from '../request-validation.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import type { ChatCompletion } from './wire.ts';

/*
 * Stored chat completions (`store: true` on `POST /v1/chat/completions`): each kept completion of a key, with the
 * request's messages and its `metadata`, listed (filtered by metadata and model), retrieved, its metadata updated,
 * deleted, and its messages listed, as OpenAI's `/v1/chat/completions/{id}` routes do.
 */

/** A completion as kept and shown: the answer, with the request's metadata. (A remote server's own shape as it sent it.) */
export type StoredCompletionObject = ChatCompletion & { metadata: Record<string, string> };

/** A message of the request, as `messages.list` shows it: `<completion id>-<index>`, as OpenAI's ids. */
export interface StoredMessage {
  id: string;
  role: string;
  content: string | null;
  /** The parts, when the message was sent as parts; null otherwise. */
  content_parts: unknown[] | null;
  name?: string;
  tool_calls?: unknown[];
  tool_call_id?: string;
}

/** What the record store keeps of a completion. */
export interface StoredChatCompletion {
  completion: StoredCompletionObject;
  messages: StoredMessage[];
}

/** Where chat completions with `store: true` are kept: a record store's collection, one record per completion. */
export type ChatCompletionStore = RecordStore<StoredChatCompletion>;

/** The request's messages as kept: each as sent, its text parts joined as `content`, with its id. */
export function storedMessages(completionId: string, sent: unknown): StoredMessage[] {
  const messages = Array.isArray(sent) ? (sent as Record<string, unknown>[]) : [];
  return messages.map((message, index) => {
    const { role, content, name, tool_calls: calls, tool_call_id: callId } = message;
    const parts = Array.isArray(content) ? (content as { type?: unknown; text?: unknown }[]) : null;
    const text = parts
      ? parts.flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n')
      : typeof content === 'string'
        ? content
        : null;
    return {
      id: `${completionId}-${index}`,
      role: String(role),
      content: text,
      content_parts: parts,
      ...(typeof name === 'string' && { name }),
      ...(Array.isArray(calls) && { tool_calls: calls }),
      ...(typeof callId === 'string' && { tool_call_id: callId }),
    };
  });
}

/** Lists of completions and of messages: 20 by default, 100 at most, oldest first unless `order=desc`, as OpenAI's. */
const LIST = { defaultLimit: 20, maxLimit: 100 };

const listQuery = (url: string) => {
  const query = readListQuery(url, LIST);
  return new URL(url).searchParams.has('order') ? query : { ...query, order: 'asc' as const };
};

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'At most 16 metadata pairs are allowed.');
const updateSchema = z.object({ metadata: metadata.nullable() });

const notFound = (id: string) =>
  new ApiError(404, `No chat completion found with id '${id}'.`, { param: 'completion_id', code: 'not_found' });

/** The routes of stored chat completions, every call on the caller key's own completions: another key's are 404s. */
export function storedCompletionRoutes({ chatCompletions, now }: RouteDeps) {
  const owner = (c: Context<Env>) => c.get('key').id;
  const id = (c: Context<Env>) => c.req.param('id')!;
  const kept = async (c: Context<Env>) => {
    const record = await chatCompletions.get(owner(c), id(c));
    if (record?.owner !== owner(c)) throw notFound(id(c));
    return record;
  };

  return {
    /** `GET /v1/chat/completions`: `model=` and `metadata[key]=value` (each pair must match) filter it. */
    list: async (c: Context<Env>) => {
      const query = listQuery(c.req.url);
      const params = new URL(c.req.url).searchParams;
      const model = params.get('model') || undefined;
      const wanted = [...params].flatMap(([name, value]) => {
        const key = /^metadata\[(.+)\]$/.exec(name)?.[1];
        return key === undefined ? [] : [[key, value] as const];
      });
      const page = await chatCompletions.list(owner(c), {
        ...query,
        filter: ({ completion }) =>
          (model === undefined || completion.model === model) &&
          wanted.every(([key, value]) => completion.metadata[key] === value),
      });
      const data = page.records.map((record) => record.data.completion);
      return c.json({
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore,
      });
    },
    retrieve: async (c: Context<Env>) => c.json<StoredCompletionObject>((await kept(c)).data.completion),
    /** `POST /v1/chat/completions/{id}`: its metadata replaced (null clears it); nothing else changes. */
    update: async (c: Context<Env>) => {
      const { metadata: replaced } = parse(updateSchema, parseJsonObject(c.get('body')));
      const record = await kept(c);
      record.data.completion.metadata = replaced ?? {};
      record.storedAt = now();
      // Metadata is at most 16 short pairs: the record stays within the limits it was kept in, bar a few KiB.
      await chatCompletions.put(record);
      return c.json<StoredCompletionObject>(record.data.completion);
    },
    delete: async (c: Context<Env>) => {
      if (!(await chatCompletions.delete(owner(c), id(c)))) throw notFound(id(c));
      return c.json({ object: 'chat.completion.deleted', id: id(c), deleted: true });
    },
    /** `GET /v1/chat/completions/{id}/messages`: the request's messages, a page. */
    messages: async (c: Context<Env>) => {
      const query = listQuery(c.req.url);
      const { messages } = (await kept(c)).data;
      const ordered = query.order === 'asc' ? messages : [...messages].reverse();
      let start = 0;
      if (query.after !== undefined) {
        const at = ordered.findIndex((message) => message.id === query.after);
        start = at < 0 ? ordered.length : at + 1;
      }
      const data = ordered.slice(start, start + query.limit);
      return c.json({
        object: 'list',
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: start + query.limit < ordered.length,
      });
    },
  };
}
