import { creationClock, recordSize, type KeptRecord, type RecordStore } from '../../record-store/index.ts';
import { ApiError } from '../errors.ts';
import type { KeptItem } from './items.ts';
import type { Conversation } from './wire.ts';

/** What the record store keeps of a conversation: the object, and its items in order, oldest first. */
export interface KeptConversation {
  conversation: Conversation;
  items: KeptItem[];
}

/** Where the Conversations API keeps conversations: a record store's collection, one record per conversation. */
export type ConversationStore = RecordStore<KeptConversation>;

/**
 * Most items in one conversation: a long day's agent session. A conversation is one record, read whole for each turn
 * that uses it; the key's byte limit binds too (see {@link Conversations.update}).
 */
export const MAX_CONVERSATION_ITEMS = 10_000;

/** An unknown conversation, or another key's, named as the request named it (a path's id, or `conversation`). */
export const conversationNotFound = (id: string, param = 'conversation_id') =>
  new ApiError(404, `Conversation with id '${id}' not found.`, { param, code: 'not_found' });

/**
 * A key's conversations over the store, each changed by one writer at a time: every change reads the conversation,
 * changes it and writes it back in turn with the others of that conversation (two responses of one conversation that
 * finish together both add their turns). One conversation is one record, so one read gives a turn its whole context
 * and deleting it is one delete; the store's limits bound its size.
 */
export class Conversations {
  readonly store: ConversationStore;
  readonly #now: () => number;
  readonly #createdAt: () => number;
  readonly #turns = new Map<string, Promise<unknown>>();

  constructor(store: ConversationStore, now: () => number) {
    this.store = store;
    this.#now = now;
    this.#createdAt = creationClock(now);
  }

  /** The key's conversation, or a 404 (another key's conversations do not exist for it). */
  async get(owner: string, id: string, notFound = conversationNotFound): Promise<KeptConversation> {
    const record = await this.store.get(owner, id);
    if (record?.owner !== owner) throw notFound(id);
    return record.data;
  }

  /** Keeps a new conversation. */
  async create(owner: string, kept: KeptConversation): Promise<void> {
    const now = this.#createdAt();
    await this.#write({ id: kept.conversation.id, owner, createdAt: now, storedAt: now, data: kept });
  }

  /**
   * Changes the key's conversation with `change` (which may throw to refuse), in turn with the other changes of it,
   * and keeps it. A conversation that would grow over the key's byte limit, or over {@link MAX_CONVERSATION_ITEMS}, is
   * refused with a 400 and left as it was (the store would otherwise drop it whole).
   */
  update<T>(owner: string, id: string, change: (kept: KeptConversation) => T): Promise<T> {
    const key = `${owner}\u0000${id}`;
    const turn = (this.#turns.get(key) ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        const record = await this.store.get(owner, id);
        if (record?.owner !== owner) throw conversationNotFound(id);
        const result = change(record.data);
        await this.#write({ ...record, storedAt: this.#now() });
        return result;
      });
    this.#turns.set(key, turn);
    // The chain is forgotten once it is done, so that it holds only conversations being changed.
    void turn
      .catch(() => undefined)
      .then(() => {
        if (this.#turns.get(key) === turn) this.#turns.delete(key);
      });
    return turn;
  }

  async #write(record: KeptRecord<KeptConversation>): Promise<void> {
    if (record.data.items.length > MAX_CONVERSATION_ITEMS) {
      throw new ApiError(400, `A conversation holds at most ${MAX_CONVERSATION_ITEMS} items.`, {
        param: 'items',
        code: 'conversation_full',
      });
    }
    if (recordSize(record) > this.store.limits.maxBytes) {
      throw new ApiError(
        400,
        `A conversation is kept in at most ${this.store.limits.maxBytes} bytes (its items' JSON): this one would be ` +
          'over. Start a new conversation.',
        { param: 'items', code: 'conversation_full' },
      );
    }
    // The store rejects only when the storage fails (an origin over its quota): a server error.
    await this.store.put(record);
  }
}
