/**
 * A map that keeps only its `capacity` most recently used entries: compiled grammars and validators are reused while
 * an app keeps sending the same schemas, and memory stays bounded when it sends many.
 */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #capacity: number;
  readonly #onEvict: ((value: V) => void) | undefined;

  constructor(capacity: number, onEvict?: (value: V) => void) {
    this.#capacity = capacity;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value for `key`, made by `make` on a miss; a hit becomes the most recently used. */
  getOrCreate(key: K, make: () => V): V {
    if (this.#entries.has(key)) {
      const value = this.#entries.get(key)!;
      this.#entries.delete(key);
      this.#entries.set(key, value);
      return value;
    }
    const value = make();
    this.#entries.set(key, value);
    while (this.#entries.size > this.#capacity) {
      const [oldestKey, oldest] = this.#entries.entries().next().value!;
      this.#entries.delete(oldestKey);
      this.#onEvict?.(oldest);
    }
    return value;
  }

  /** Forgets `key` (a value that turned out to be a failure, say). */
  delete(key: K): void {
    this.#entries.delete(key);
  }
}
