import { gguf } from '@huggingface/gguf';
import type { GgufMetadata } from './llama-chat-model.ts';
import { DEFAULT_CONTEXT_WINDOW } from './llama-cpp-engine.ts';

/**
 * A GGUF's metadata read from its bytes in a browser (wllama reports only its scalar values, as text), nested by its
 * dotted keys as node-llama-cpp gives it (`tokenizer.ggml.tokens` → `metadata.tokenizer.ggml.tokens`). Read with
 * Hugging Face's GGUF parser, which asks for ranges of the file: they are sliced from the blob, so nothing is read
 * twice from the network or the store. `url` is the file's own (the parser checks that it names one).
 */
export async function readGgufMetadata(blob: Blob, url: string): Promise<GgufMetadata> {
  const { metadata } = await gguf(url, {
    fetch: async (_input: RequestInfo | URL, init?: RequestInit) => {
      const range = /bytes=(\d+)-(\d+)/.exec(new Headers(init?.headers).get('Range') ?? '');
      const start = range ? Number(range[1]) : 0;
      const end = range ? Math.min(Number(range[2]) + 1, blob.size) : blob.size;
      return new Response(blob.slice(start, end), {
        status: 206,
        headers: { 'content-range': `bytes ${start}-${end - 1}/${blob.size}` },
      });
    },
  });
  const nested: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata)) {
    const path = key.split('.');
    let node = nested;
    for (const part of path.slice(0, -1)) {
      const child = node[part];
      node = (
        typeof child === 'object' && child !== null && !Array.isArray(child) ? child : (node[part] = {})
      ) as Record<string, unknown>;
    }
    node[path.at(-1)!] = typeof value === 'bigint' ? Number(value) : value;
  }
  return nested as unknown as GgufMetadata;
}

/** The model's training context (`<architecture>.context_length`). */
export function trainContext(metadata: GgufMetadata): number {
  const arch = metadata[metadata.general.architecture] as { context_length?: number } | undefined;
  return arch?.context_length ?? DEFAULT_CONTEXT_WINDOW;
}

/**
 * Whether the model's memory holds a state of the whole sequence so far beside (or instead of) keys and values:
 * recurrent layers (Mamba's and Gated DeltaNet's `ssm`, RWKV's `wkv`) or short convolutions (LFM2's `shortconv`), which
 * llama.cpp cannot take back to an earlier position (removing a suffix of such a sequence fails). Read from the
 * architecture's own keys, where llama.cpp's loaders read the state's sizes, so a new hybrid needs no list here.
 */
export function holdsSequenceState(metadata: GgufMetadata): boolean {
  const arch = metadata[metadata.general.architecture];
  if (typeof arch !== 'object' || arch === null) return false;
  return ['ssm', 'shortconv', 'wkv'].some((key) => key in arch);
}
