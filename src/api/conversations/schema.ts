import * as z from 'zod';
import { invalidRequest } from '../errors.ts';
import { checkImageCount } from '../image-parts.ts';
import type { Limits } from '../options.ts';
import { optional, parse } from '../request-validation.ts';
import { inputItem, toInputItems, type ConversationItem } from '../responses/schema.ts';

/*
 * The Conversations API's request bodies, with OpenAI's bounds: at most 20 items added at a time, 16 metadata pairs
 * (keys of 64 characters, values of 512). Items are the Responses API's input items, read as its `input` is;
 * `item_reference`s are refused (a conversation holds items, not references to other responses' items).
 */

/** OpenAI's bound on the items one call adds. */
export const MAX_ITEMS_PER_CALL = 20;

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'At most 16 metadata pairs are allowed.');

const items = z.array(inputItem).max(MAX_ITEMS_PER_CALL);

const createSchema = z.object({ items: optional(items), metadata: optional(metadata) });
const updateSchema = z.object({ metadata: metadata.nullable() });
const addSchema = z.object({ items: items.min(1) });

/** A conversation's items as sent: normalised as `input` is, each with its place in `items` named in refusals. */
function conversationItems(sent: z.output<typeof items>, limits: Limits): ConversationItem[] {
  const items = toInputItems(sent, limits, 'items').map((item, i) => {
    if (item.type === 'item_reference') {
      throw invalidRequest('Item references cannot be added to a conversation: send the items.', `items[${i}]`);
    }
    return item;
  });
  // As many images as one request may hold: each is given to the model with every turn that uses the conversation.
  checkImageCount(
    items.filter((item) => item.type === 'message'),
    limits.maxImages,
  );
  return items;
}

/** `POST /v1/conversations`. */
export function readCreate(body: unknown, limits: Limits) {
  const p = parse(createSchema, body);
  return { items: conversationItems(p.items ?? [], limits), metadata: p.metadata ?? {} };
}

/** `POST /v1/conversations/{id}`: the metadata replaced (null clears it). */
export function readUpdate(body: unknown) {
  return { metadata: parse(updateSchema, body).metadata ?? {} };
}

/** `POST /v1/conversations/{id}/items`. */
export function readItems(body: unknown, limits: Limits) {
  return conversationItems(parse(addSchema, body).items, limits);
}
