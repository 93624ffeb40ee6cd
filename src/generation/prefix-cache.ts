/**
 * Cached token sequences and what the model computed for them (a KV cache), looked up by shared prefix within a scope,
 * kept within a byte budget by evicting the least recently used. Engine-agnostic: the engine says what a value is, what
 * it costs, and how it is freed.
 */

/**
 * One cached value: a batch of `rows` token sequences (one per batch row) whose keys and values it holds, and the
 * scope of the requests they came from (ChatRequest.cacheScope: an API key's id).
 */
export interface PrefixEntry<T> {
  readonly rows: readonly (readonly number[])[];
  readonly scope: string | undefined;
  readonly bytes: number;
  readonly value: T;
}

/** The cached row sharing the longest prefix with a prompt, and how many tokens it shares. */
export interface PrefixMatch<T> {
  entry: PrefixEntry<T>;
  row: number;
  length: number;
}

/**
 * Least-recently-used cache of token sequences, bounded in bytes and in entries. A prompt matches only entries of its
 * own scope, and an entry makes only entries of its own scope redundant: which tokens another scope cached changes
 * nothing a scope sees (issue 41: `cached_tokens` told one key another's prompt, a digit at a time). Scopes share the
 * budget, so another's use can evict a scope's entries: that says how much was cached lately, never what.
 *
 * @example
 * const cache = new PrefixCache<Kv>(256 * 2 ** 20, (kv) => kv.dispose());
 * cache.add([[1, 2, 3]], 1024, kv, 'key_a');
 * cache.match([1, 2, 9], 2, 'key_a'); // { entry, row: 0, length: 2 }
 * cache.match([1, 2, 9], 2, 'key_b'); // undefined
 */
export class PrefixCache<T> {
  /** Insertion order is recency order: the first entry is the least recently used. */
  readonly #entries = new Set<PrefixEntry<T>>();
  readonly #budget: number;
  readonly #dispose: (value: T) => void;
  readonly #maxEntries: number;
  #bytes = 0;

  /**
   * @param budget - the most bytes the cached values may hold together; 0 caches nothing.
   * @param dispose - frees a value that is evicted or refused.
   * @param maxEntries - the most entries held, whatever their bytes: each costs a scan on every {@link match}, and
   *   objects of its own beside the bytes it counts (issue 42).
   */
  constructor(budget: number, dispose: (value: T) => void, maxEntries = Infinity) {
    this.#budget = budget;
    this.#dispose = dispose;
    this.#maxEntries = maxEntries;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The most bytes the cached values may hold together. */
  get budget(): number {
    return this.#budget;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The row of `scope`'s entries sharing the longest prefix with `tokens`, counted up to `limit` tokens; the entry
   * becomes the most recently used. Undefined when no row of the scope shares a token.
   */
  match(tokens: readonly number[], limit = tokens.length, scope?: string): PrefixMatch<T> | undefined {
    let best: PrefixMatch<T> | undefined;
    for (const entry of this.#entries) {
      if (entry.scope !== scope) continue;
      entry.rows.forEach((row, index) => {
        const length = sharedPrefix(row, tokens, limit);
        if (length > (best?.length ?? 0)) best = { entry, row: index, length };
      });
    }
    if (best) this.#touch(best.entry);
    return best;
  }

  /**
   * The longest row of `scope`'s entries that `tokens` starts with whole, of at most `limit` tokens: what a cache that
   * cannot be cut back (a recurrent state) can reuse. The entry becomes the most recently used. Undefined when none.
   */
  matchWhole(tokens: readonly number[], limit = tokens.length, scope?: string): PrefixMatch<T> | undefined {
    let best: PrefixMatch<T> | undefined;
    for (const entry of this.#entries) {
      if (entry.scope !== scope) continue;
      entry.rows.forEach((row, index) => {
        const whole = row.length <= limit && sharedPrefix(row, tokens) === row.length;
        if (whole && row.length > (best?.length ?? 0)) best = { entry, row: index, length: row.length };
      });
    }
    if (best) this.#touch(best.entry);
    return best;
  }

  /** Removes an entry without freeing it: its value now belongs to the caller. */
  take(entry: PrefixEntry<T>): T {
    if (this.#entries.delete(entry)) this.#bytes -= entry.bytes;
    return entry.value;
  }

  /**
   * Caches a value of `scope` as the most recently used. Entries of the scope it makes redundant (every row of theirs
   * a prefix of one of its rows; with `cuts` false, a value that cannot be cut back to a prefix: the same rows) are
   * freed, then the least recently used until the budget and the number of entries hold. A value over the whole budget
   * is freed at once.
   */
  add(rows: readonly (readonly number[])[], bytes: number, value: T, scope?: string, cuts = true): void {
    if (bytes > this.#budget || this.#maxEntries < 1) return this.#dispose(value);
    const covers = (old: readonly number[], row: readonly number[]) =>
      sharedPrefix(old, row) === old.length && (cuts || old.length === row.length);
    for (const entry of [...this.#entries]) {
      const redundant = entry.scope === scope && entry.rows.every((old) => rows.some((row) => covers(old, row)));
      if (redundant) this.#evict(entry);
    }
    this.#entries.add({ rows, scope, bytes, value });
    this.#bytes += bytes;
    for (const entry of this.#entries) {
      if (this.#bytes <= this.#budget && this.#entries.size <= this.#maxEntries) break;
      this.#evict(entry);
    }
  }

  /** Frees every entry. */
  clear(): void {
    for (const entry of [...this.#entries]) this.#evict(entry);
  }

  #touch(entry: PrefixEntry<T>): void {
    this.#entries.delete(entry);
    this.#entries.add(entry);
  }

  #evict(entry: PrefixEntry<T>): void {
    this.#dispose(this.take(entry));
  }
}

/** How many leading tokens two sequences share, up to `limit`. */
export function sharedPrefix(a: readonly number[], b: readonly number[], limit = Infinity): number {
  const end = Math.min(a.length, b.length, limit);
  let i = 0;
  while (i < end && a[i] === b[i]) i++;
  return i;
}
