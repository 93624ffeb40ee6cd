/**
 * The conversation: its items in order, placed after `previous_item_id` (or first, for `'root'`), within a bound.
 */
import { RealtimeClientError, type RealtimeItem } from './realtime-events.ts';

/**
 * The most items a conversation holds: a turn a few seconds long for a whole hour's call is well under it. Beyond it
 * new items are refused (`conversation_full`) until the client deletes some.
 */
export const MAX_CONVERSATION_ITEMS = 2000;

export class Conversation {
  readonly #items: RealtimeItem[] = [];

  get items(): readonly RealtimeItem[] {
    return this.#items;
  }

  get(id: string): RealtimeItem | undefined {
    return this.#items.find((item) => item.id === id);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** The id of the last item, or null when empty (what `previous_item_id` says of an appended item). */
  lastId(): string | null {
    return this.#items.at(-1)?.id ?? null;
  }

  /** Checks there is room for `count` more items. */
  checkRoom(count = 1): void {
    if (this.#items.length + count > MAX_CONVERSATION_ITEMS)
      throw new RealtimeClientError(
        `The conversation holds at most ${MAX_CONVERSATION_ITEMS} items: delete some (conversation.item.delete) first.`,
        null,
        'conversation_full',
      );
  }

  /**
   * Places `item`: appended when `previous` is undefined or null, first for `'root'`, else after that item. Returns
   * the id of the item before it (null when first).
   */
  insert(item: RealtimeItem, previous?: string | null, param = 'previous_item_id'): string | null {
    this.checkRoom();
    if (this.has(item.id))
      throw new RealtimeClientError(`Item with id '${item.id}' already exists.`, 'item.id', 'duplicate_item_id');
    if (previous === undefined || previous === null) {
      const before = this.lastId();
      this.#items.push(item);
      return before;
    }
    if (previous === 'root') {
      this.#items.unshift(item);
      return null;
    }
    const at = this.#items.findIndex((i) => i.id === previous);
    if (at < 0)
      throw new RealtimeClientError(
        `Item with id '${previous}' not found in the conversation.`,
        param,
        'item_not_found',
      );
    this.#items.splice(at + 1, 0, item);
    return previous;
  }

  delete(id: string): boolean {
    const at = this.#items.findIndex((i) => i.id === id);
    if (at < 0) return false;
    this.#items.splice(at, 1);
    return true;
  }
}
