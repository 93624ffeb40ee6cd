import type { Context } from 'hono';
import { ApiError } from '../errors.ts';
import { readListQuery, type ListQuery } from '../list-query.ts';
import { parseJsonObject } from '../request-body.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { keptInput } from './items.ts';
import { readCreate, readItems, readUpdate } from './schema.ts';
import type { Conversation, ConversationDeleted, ConversationItem, ConversationItemList } from './wire.ts';

/** Lists of items: 20 by default, 100 at most, as OpenAI's. */
export const ITEM_LIST = { defaultLimit: 20, maxLimit: 100 };

/** A page of items (oldest first as given) in the query's order, after its cursor: as OpenAI's lists. */
export function itemPage(items: ConversationItem[], query: ListQuery): ConversationItemList {
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    start = at < 0 ? ordered.length : at + 1;
  }
  const data = ordered.slice(start, start + query.limit);
  return list(data, start + query.limit < ordered.length);
}

const list = (data: ConversationItem[], hasMore = false): ConversationItemList => ({
  object: 'list',
  data,
  first_id: data[0]?.id ?? null,
  last_id: data.at(-1)?.id ?? null,
  has_more: hasMore,
});

const itemNotFound = (id: string) =>
  new ApiError(404, `Item with id '${id}' not found.`, { param: 'item_id', code: 'not_found' });

/**
 * The Conversations API (`/v1/conversations`, its `items`), every call on the caller key's own conversations: another
 * key's are 404s. A conversation is the context of the responses that name it (`conversation` on `POST /v1/responses`),
 * which add their turns to it.
 */
export function conversationRoutes({ conversations, limits, now }: RouteDeps) {
  const owner = (c: Context<Env>) => c.get('key').id;
  const id = (c: Context<Env>) => c.req.param('id')!;
  const body = (c: Context<Env>) => {
    const bytes = c.get('body');
    // `conversations.create()` without arguments sends no body.
    return bytes.byteLength === 0 ? {} : parseJsonObject(bytes);
  };

  return {
    create: async (c: Context<Env>) => {
      const { items, metadata } = readCreate(body(c), limits);
      const conversation: Conversation = {
        id: 'conv_' + crypto.randomUUID().replace(/-/g, ''),
        object: 'conversation',
        created_at: Math.floor(now() / 1000),
        metadata,
      };
      await conversations.create(owner(c), { conversation, items: items.map(keptInput) });
      return c.json<Conversation>(conversation);
    },
    retrieve: async (c: Context<Env>) => c.json<Conversation>((await conversations.get(owner(c), id(c))).conversation),
    update: async (c: Context<Env>) => {
      const { metadata } = readUpdate(body(c));
      const updated = await conversations.update(owner(c), id(c), (kept) => {
        kept.conversation.metadata = metadata;
        return kept.conversation;
      });
      return c.json<Conversation>(updated);
    },
    delete: async (c: Context<Env>) => {
      if (!(await conversations.store.delete(owner(c), id(c)))) {
        // Another key's conversation is not found, as an unknown one.
        await conversations.get(owner(c), id(c));
      }
      return c.json<ConversationDeleted>({ id: id(c), object: 'conversation.deleted', deleted: true });
    },

    addItems: async (c: Context<Env>) => {
      const added = readItems(body(c), limits).map(keptInput);
      await conversations.update(owner(c), id(c), (kept) => kept.items.push(...added));
      return c.json<ConversationItemList>(list(added.map((item) => item.wire)));
    },
    listItems: async (c: Context<Env>) => {
      // `include` asks for fields Lantern's items either always have or never produce: read and let be.
      const query = readListQuery(c.req.url, ITEM_LIST);
      const kept = await conversations.get(owner(c), id(c));
      return c.json<ConversationItemList>(
        itemPage(
          kept.items.map((item) => item.wire),
          query,
        ),
      );
    },
    retrieveItem: async (c: Context<Env>) => {
      const itemId = c.req.param('item_id')!;
      const kept = await conversations.get(owner(c), id(c));
      const found = kept.items.find((item) => item.item.id === itemId);
      if (!found) throw itemNotFound(itemId);
      return c.json<ConversationItem>(found.wire);
    },
    deleteItem: async (c: Context<Env>) => {
      const itemId = c.req.param('item_id')!;
      const conversation = await conversations.update(owner(c), id(c), (kept) => {
        const at = kept.items.findIndex((item) => item.item.id === itemId);
        if (at < 0) throw itemNotFound(itemId);
        kept.items.splice(at, 1);
        return kept.conversation;
      });
      return c.json<Conversation>(conversation);
    },
  };
}
