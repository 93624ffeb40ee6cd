/**
 * The browser's Cache API (`caches`: CacheStorage, Cache) in memory, for Node tests of code that reads what the
 * engines store there (web-llm's `webllm/model` cache, transformers.js' `transformers-cache`). Keys are URLs; a
 * response is kept as its bytes and headers and read back as a new Response each time, as the Cache API does.
 */

type Stored = { body: ArrayBuffer; init: ResponseInit };
type Key = RequestInfo | URL;

const urlOf = (key: Key) => (typeof key === 'string' ? key : key instanceof URL ? key.href : key.url);
const withoutSearch = (url: string) => url.replace(/[?#].*$/, '');

export class MemoryCache implements Cache {
  readonly #entries = new Map<string, Stored>();

  async put(key: Key, response: Response): Promise<void> {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    const init = { status: response.status, statusText: response.statusText, headers };
    this.#entries.set(urlOf(key), { body: await response.arrayBuffer(), init });
  }

  async match(key: Key, options?: CacheQueryOptions): Promise<Response | undefined> {
    const url = urlOf(key);
    const found = options?.ignoreSearch
      ? [...this.#entries].find(([stored]) => withoutSearch(stored) === withoutSearch(url))?.[1]
      : this.#entries.get(url);
    return found && new Response(found.body.slice(0), found.init);
  }

  async matchAll(key?: Key, options?: CacheQueryOptions): Promise<readonly Response[]> {
    if (key === undefined) return [...this.#entries.values()].map((s) => new Response(s.body.slice(0), s.init));
    const one = await this.match(key, options);
    return one ? [one] : [];
  }

  async keys(): Promise<readonly Request[]> {
    return [...this.#entries.keys()].map((url) => new Request(url));
  }

  async delete(key: Key): Promise<boolean> {
    return this.#entries.delete(urlOf(key));
  }

  async add(): Promise<void> {
    throw new Error('MemoryCache cannot fetch: put the response instead.');
  }

  async addAll(): Promise<void> {
    throw new Error('MemoryCache cannot fetch: put the responses instead.');
  }
}

export class MemoryCacheStorage implements CacheStorage {
  readonly #caches = new Map<string, MemoryCache>();

  async open(name: string): Promise<Cache> {
    let cache = this.#caches.get(name);
    if (!cache) this.#caches.set(name, (cache = new MemoryCache()));
    return cache;
  }

  async has(name: string): Promise<boolean> {
    return this.#caches.has(name);
  }

  async delete(name: string): Promise<boolean> {
    return this.#caches.delete(name);
  }

  async keys(): Promise<string[]> {
    return [...this.#caches.keys()];
  }

  async match(key: Key, options?: MultiCacheQueryOptions): Promise<Response | undefined> {
    const names = options?.cacheName === undefined ? [...this.#caches.keys()] : [options.cacheName];
    for (const name of names) {
      const found = await this.#caches.get(name)?.match(key, options);
      if (found) return found;
    }
    return undefined;
  }
}

/** Installs a fresh in-memory `caches` as the global one (a new browser profile), and returns it. */
export function installMemoryCaches(storage = new MemoryCacheStorage()): MemoryCacheStorage {
  (globalThis as { caches?: CacheStorage }).caches = storage;
  return storage;
}
