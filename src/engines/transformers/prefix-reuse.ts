import { DynamicCache, Tensor } from '@huggingface/transformers';
import { PrefixCache, type PrefixEntry } from '../../generation/prefix-cache.ts';

/**
 * Default byte budget of each chat model's prefix cache. It holds about 3,000 tokens of SmolLM2-360M's keys and values
 * in fp32 (80 KB a token), 10,000 of Qwen2.5-0.5B's (24 KB) and 4,000 of Llama-3.2-1B's (64 KB): a long conversation,
 * or a few shorter ones sharing a system prompt.
 */
export const DEFAULT_PREFIX_CACHE_BYTES = 256 * 2 ** 20;

/**
 * Most entries (finished rows: a conversation's latest turn each) a chat model's prefix cache keeps, whatever their
 * bytes: 32 conversations going on at once is more than one device's apps keep. The byte budget binds first for entries
 * of more than 8 MiB (256 MiB / 32): 37 tokens of Qwen3-0.6B's fp32 keys and values, 105 of SmolLM2-360M's; shorter
 * prompts cost little to prefill again. The count bounds what the bytes do not: each entry's tensor objects (two a
 * layer) and token list, and a scan of every entry on each prompt. Before it, a model of 1 KiB a token (the bundled
 * fixtures) kept every distinct prompt of a 1,000-request soak, the heap and the worker growing with each (issue 42).
 */
export const DEFAULT_PREFIX_CACHE_ENTRIES = 32;

/**
 * A cached prefix is copied (rather than handed over whole) only from this many shared tokens on: below it, prefilling
 * the tokens again costs about what copying does, and on WebGPU the copy downloads the whole cached tensor.
 */
const MIN_COPIED_TOKENS = 16;

/**
 * Prefix reuse for the decode loop: each row's key/value cache is kept when it finishes, keyed by the tokens it holds,
 * and a later prompt that shares a prefix with one of them starts from that prefix, so only its new tokens are
 * prefilled (the next turn of a conversation, a shared system prompt, the prompt before a tool result). A row's cache
 * holds every token but the last one it generated (that one was never fed back).
 *
 * Layout: `past_key_values.<layer>.{key,value}` tensors of shape `[1, heads, sequence, head_dim]`, on the CPU or
 * (WebGPU) in GPU buffers. A whole cached entry, when the prompt extends all of it (the conversation goes on), is handed
 * over as it is; otherwise the shared prefix is copied into new CPU tensors (downloaded first from the GPU) and the
 * entry stays. A request of `n` choices prefills its prompt once; its rows are kept one entry each, so the next turn
 * can continue whichever choice the client kept. Models whose cache holds other state (recurrent or convolution
 * states) are never reused. A prompt reuses only what requests of its own scope kept (ChatRequest.cacheScope: one API
 * key's): the rows of one batch may be of different keys, and each keeps its cache under its own.
 */
export class PrefixReuse {
  readonly #cache: PrefixCache<DynamicCache>;

  /**
   * @param budget - bytes of keys and values kept between generations (0 turns reuse off).
   * @param maxEntries - most entries kept, whatever their bytes.
   */
  constructor(budget: number = DEFAULT_PREFIX_CACHE_BYTES, maxEntries = DEFAULT_PREFIX_CACHE_ENTRIES) {
    this.#cache = new PrefixCache(budget, disposeCache, maxEntries);
  }

  /**
   * The cache to prefill this prompt from: the longest prefix cached in `scope`, up to all but the prompt's last token
   * (at least one token must be fed to get the first logits), or an empty cache. Always a cache of one row that the
   * caller owns, so that {@link keep} or {@link discard} can account for it.
   */
  async prepare(prompt: readonly number[], scope?: string): Promise<DynamicCache> {
    const match = this.#cache.match(prompt, prompt.length - 1, scope);
    if (!match) return new DynamicCache();
    const { entry, row, length } = match;
    if (entry.rows.length === 1 && length === entry.rows[0]!.length) return this.#cache.take(entry);
    if (length < MIN_COPIED_TOKENS) return new DynamicCache();
    return copyPrefix(entry, row, length);
  }

  /** Keeps a one-row cache holding `tokens`, for later prompts of `scope` that start with them. */
  keep(tokens: readonly number[], cache: DynamicCache, scope?: string): void {
    if (!isAttentionCache(cache)) return disposeCache(cache);
    this.#cache.add([tokens.slice(0, cache.get_seq_length())], cacheBytes(cache), cache, scope);
  }

  /** Frees a cache that is not kept (a failed prefill's). */
  discard(cache: DynamicCache): void {
    disposeCache(cache);
  }
}

/** Whether every entry is an attention key or value with a sequence axis, which a prefix of can be cut. */
function isAttentionCache(cache: DynamicCache): boolean {
  const tensors = Object.entries(cache);
  return tensors.length > 0 && tensors.every(([name, t]) => name.startsWith('past_key_values.') && t.dims.length === 4);
}

/** Bytes held by a cache's tensors, wherever they are. */
export function cacheBytes(cache: DynamicCache): number {
  return Object.values(cache).reduce((sum, t) => sum + t.size * (BYTES_PER_ELEMENT[t.type] ?? 4), 0);
}

const BYTES_PER_ELEMENT: Readonly<Record<string, number>> = { float32: 4, float16: 2, bfloat16: 2, int8: 1, uint8: 1 };

/** Frees every tensor of a cache: GPU buffers at once, CPU data to the garbage collector. */
function disposeCache(cache: DynamicCache): void {
  for (const tensor of Object.values(cache)) tensor.dispose();
}

/** A new CPU cache holding the first `length` positions of one row of an entry. */
async function copyPrefix(entry: PrefixEntry<DynamicCache>, row: number, length: number): Promise<DynamicCache> {
  const copies: Record<string, Tensor> = {};
  for (const [name, tensor] of Object.entries(entry.value)) {
    const [batch, heads, sequence, width] = tensor.dims as [number, number, number, number];
    // A GPU tensor is read back first; its buffer stays with the cached entry.
    const data = (tensor.location === 'gpu-buffer' ? await tensor.ort_tensor.getData() : tensor.data) as Float32Array;
    if (row >= batch) throw new Error(`Prefix cache row ${row} is not in a batch of ${batch}.`);
    // The same typed array class as the source (Float32Array, or Uint16Array for float16).
    const out = new (data.constructor as Float32ArrayConstructor)(heads * length * width);
    for (let h = 0; h < heads; h++) {
      const from = (row * heads + h) * sequence * width;
      out.set(data.subarray(from, from + length * width), h * length * width);
    }
    copies[name] = new Tensor(tensor.type, out, [1, heads, length, width]);
  }
  return new DynamicCache(copies);
}
