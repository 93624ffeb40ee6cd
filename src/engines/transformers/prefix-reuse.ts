import { DynamicCache, Tensor } from '@huggingface/transformers';
import { PrefixCache, type PrefixEntry } from '../../generation/prefix-cache.ts';
import { isKeyValue } from './kv-batch.ts';

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
 * A hybrid model's turn keeps up to three (its row, and its prompt's checkpoints at its end and its newest turn's
 * start), each whole: about ten conversations' latest turns.
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
 * can continue whichever choice the client kept. A prompt reuses only what requests of its own scope kept
 * (ChatRequest.cacheScope: one API key's): the rows of one batch may be of different keys, and each keeps its cache
 * under its own.
 *
 * A hybrid or recurrent model's cache holds states beside its keys and values (`past_conv.*`, `past_recurrent.*`: see
 * isKeyValue), one of the whole sequence each, which cannot be cut back to a prefix. Such a cache is reused only
 * whole, by a prompt that extends all it holds: a finished row's (the conversation goes on), handed over and kept
 * again as the rows it becomes finish; or a checkpoint the batch kept while prefilling (TransformersBatch.checkpoint:
 * a prompt's end, its newest turn's start), copied out, so that every later prompt parting there reuses it too.
 */
export class PrefixReuse {
  readonly #cache: PrefixCache<DynamicCache>;
  /** The kept caches that are checkpoints (see keepCopy): copied out when reused, never handed over. */
  readonly #checkpoints = new WeakSet<DynamicCache>();

  /**
   * @param budget - bytes of keys and values kept between generations (0 turns reuse off).
   * @param maxEntries - most entries kept, whatever their bytes.
   */
  constructor(budget: number = DEFAULT_PREFIX_CACHE_BYTES, maxEntries = DEFAULT_PREFIX_CACHE_ENTRIES) {
    this.#cache = new PrefixCache(budget, disposeCache, maxEntries);
  }

  /**
   * The cache to prefill this prompt from, and how many of its tokens it holds: the longest prefix cached in `scope`,
   * up to all but the prompt's last token (at least one token must be fed to get the first logits), or an empty cache.
   * With `reuse` `checkpoints` (a model with states), only a cached entry the prompt extends whole. Always a cache of
   * one row that the caller owns, so that {@link keep} or {@link discard} can account for it.
   */
  async prepare(
    prompt: readonly number[],
    scope?: string,
    reuse: 'cut' | 'checkpoints' = 'cut',
  ): Promise<{ cache: DynamicCache; length: number }> {
    const nothing = { cache: new DynamicCache(), length: 0 };
    if (reuse === 'checkpoints') {
      const match = this.#cache.matchWhole(prompt, prompt.length - 1, scope);
      if (!match) return nothing;
      const { entry, length } = match;
      // A checkpoint stays for the next prompt that parts there (a shared system prompt, a regenerated reply): a copy
      // goes. A finished row's cache is handed over whole (every entry is one row: see keep): its rows are kept again.
      if (this.#checkpoints.has(entry.value)) return { cache: await copyCache(entry.value), length };
      return { cache: this.#cache.take(entry), length };
    }
    const match = this.#cache.match(prompt, prompt.length - 1, scope);
    if (!match) return nothing;
    const { entry, row, length } = match;
    if (entry.rows.length === 1 && length === entry.rows[0]!.length) return { cache: this.#cache.take(entry), length };
    if (length < MIN_COPIED_TOKENS || hasStates(entry.value)) return nothing;
    return { cache: await copyPrefix(entry, row, length), length };
  }

  /**
   * Keeps a one-row cache holding `tokens`, for later prompts of `scope` that start with them. One with states holds
   * exactly `tokens` (the caller's word: no attention tensor may say how many), and is reused only whole.
   */
  keep(tokens: readonly number[], cache: DynamicCache, scope?: string): void {
    if (Object.keys(cache).length === 0) return;
    if (hasStates(cache)) return this.#cache.add([[...tokens]], cacheBytes(cache), cache, scope, false);
    this.#cache.add([tokens.slice(0, cache.get_seq_length())], cacheBytes(cache), cache, scope);
  }

  /**
   * Keeps a copy of a one-row cache that holds exactly `tokens` and goes on being filled (a prefill's, at a
   * checkpoint), for later prompts of `scope` that start with them. Nothing where it would be over the whole budget.
   */
  async keepCopy(tokens: readonly number[], cache: DynamicCache, scope?: string): Promise<void> {
    if (cacheBytes(cache) > this.#cache.budget) return;
    const copy = await copyCache(cache);
    this.#checkpoints.add(copy);
    this.keep(tokens, copy, scope);
  }

  /** Bytes of the caches kept now. */
  get bytes(): number {
    return this.#cache.bytes;
  }

  /** Frees a cache that is not kept (a failed prefill's). */
  discard(cache: DynamicCache): void {
    disposeCache(cache);
  }
}

/** Whether a cache holds a state beside its keys and values, which cannot be cut back to a prefix. */
function hasStates(cache: DynamicCache): boolean {
  return Object.entries(cache).some(([name, tensor]) => !isKeyValue(name, tensor));
}

/** A CPU copy of every tensor of a cache. */
async function copyCache(cache: DynamicCache): Promise<DynamicCache> {
  const copy: Record<string, Tensor> = {};
  for (const [name, tensor] of Object.entries(cache)) copy[name] = await copyTensor(tensor);
  return new DynamicCache(copy);
}

/** A CPU copy of a tensor (read back from the GPU first): the source stays the caller's. */
async function copyTensor(tensor: Tensor): Promise<Tensor> {
  // A GPU tensor's data is read back into a new array; a CPU one's is the tensor's own.
  const data = (
    tensor.location === 'gpu-buffer' ? await tensor.ort_tensor.getData() : (tensor.data as Float32Array).slice()
  ) as Float32Array;
  return new Tensor(tensor.type, data, [...tensor.dims]);
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
