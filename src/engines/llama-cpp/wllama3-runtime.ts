/// <reference types="vite/client" />
import { Wllama, WllamaAbortError, type RawCompletionChunk, type RawCompletionParams } from '@wllama/wllama3';
import wllama3Wasm from '@wllama/wllama3/esm/wasm/wllama.wasm?url';
import { EngineError, throwIfAborted, type RunsOn } from '../../engine-interface/index.ts';
import { readGgufMetadata, trainContext } from './gguf-metadata.ts';
import type { GgufMetadata } from './llama-chat-model.ts';
import { contextWindowOf, type LlamaCppCandidate } from './llama-cpp-engine.ts';
import { ggufBlobs, wasmBlobUrl } from './wllama-blobs.ts';
import type { LlamaDevice } from './wllama-device.ts';
import {
  completionRequest,
  pieceOf,
  PromptReuse,
  type Wllama3Chunk,
  type Wllama3Piece,
  type Wllama3Plan,
} from './wllama3-request.ts';

/*
 * llama.cpp in browsers through wllama 3 (3.13), where it runs on WebGPU (wllama-device.ts). wllama 3 runs llama.cpp's
 * server loop in its worker: a request is a whole completion that llama.cpp samples itself (temperature, top_p, seed,
 * logit_bias, a GBNF grammar), its text streamed back a token at a time; its sequences (slots) decode together, each
 * keeping its prompt for the next that starts the same way. It has no call that feeds tokens, tokenizes, or hands a
 * distribution over, so it is no LlamaSequence: the generation core hands it a plan it covers whole (wllama3Gap) and
 * feeds what comes back to the choice pipeline as text (ChoicePipeline.pushText), as web-llm's.
 */

/** A GGUF chat model loaded on wllama 3. */
export interface Wllama3Model {
  readonly device: LlamaDevice;
  /**
   * Where it runs: WebGPU as `device` chose it (only on an adapter with `shader-f16`, the one llama.cpp's WebGPU
   * backend takes), else WebAssembly. wllama 3 reports neither its backend nor the layers it offloaded, and its
   * native log (`offloaded N/M layers to GPU`) did not reach its logger in Chromium here.
   */
  readonly runsOn: RunsOn;
  readonly metadata: GgufMetadata;
  /** Tokens (prompt plus reply) the context holds; llama.cpp refuses a longer request before it decodes any of it. */
  readonly contextLength: number;
  /** Requests (rows) decoded together: a request's `n` choices each take one. */
  readonly rows: number;
  /**
   * Runs one row of a request: `prompt` is the rendered chat (special tokens written as text, which llama.cpp reads as
   * such). Yields its text as it is generated; the last piece says why it ended and what it counted. Stopping the
   * iteration (a stop sequence matched), or `signal`, cancels the row, freeing its sequence at once.
   */
  generate(
    prompt: string,
    plan: Wllama3Plan,
    scope: string | undefined,
    signal?: AbortSignal,
  ): AsyncIterable<Wllama3Piece>;
  dispose(): Promise<void>;
}

/** Rows decoded together, where the candidate names none: wllama 3's own default. */
const DEFAULT_ROWS = 4;

let wasm: Promise<string> | undefined;

export async function loadWllama3(candidate: LlamaCppCandidate, device: LlamaDevice): Promise<Wllama3Model> {
  if (candidate.images)
    throw new Error('llama.cpp candidates read text only here: projectors (mmproj) are not supported yet');
  const { blobs, urls } = await ggufBlobs(candidate);
  const metadata = await readGgufMetadata(blobs[0]!, urls[0]!);
  wasm ??= wasmBlobUrl(wllama3Wasm);
  wasm.catch(() => (wasm = undefined));
  const wllama = new Wllama({ default: await wasm }, { suppressNativeLog: true, logger: QUIET });
  const rows = candidate.sequences ?? DEFAULT_ROWS;
  const threads = candidate.threads ?? Math.max(1, Math.floor((navigator.hardwareConcurrency || 1) / 2));
  const contextLength = contextWindowOf(candidate, trainContext(metadata));
  try {
    await wllama.loadModel(blobs, {
      // Each row a window of its own (wllama 3 unifies them by default: one row could then take every row's cells,
      // and another fail mid-reply), which llama.cpp checks a request against before it decodes any of it.
      n_ctx: contextLength * rows,
      n_parallel: rows,
      kv_unified: false,
      // 0 keeps llama.cpp from registering its WebGPU device at all.
      n_gpu_layers: device.device === 'webgpu' ? 999 : 0,
      n_threads: threads,
    });
  } catch (error) {
    await wllama.exit().catch(() => {});
    throw error;
  }
  const reuse = new PromptReuse();
  return {
    device,
    runsOn:
      device.device === 'webgpu'
        ? { device: 'webgpu' }
        : { device: 'wasm', threads: wllama.isMultithread() ? threads : 1 },
    metadata,
    contextLength,
    rows,
    generate: (prompt, plan, scope, signal) =>
      completion(wllama, completionRequest(prompt, plan, reuse.admit(scope)), signal),
    dispose: () => wllama.exit(),
  };
}

async function* completion(
  wllama: Wllama,
  request: ReturnType<typeof completionRequest>,
  signal: AbortSignal | undefined,
): AsyncGenerator<Wllama3Piece> {
  // Its own controller: a consumer that stops reading (a stop sequence matched) cancels the row as an abort does.
  const cancel = new AbortController();
  const abort = () => cancel.abort();
  signal?.addEventListener('abort', abort, { once: true });
  const pieces: Wllama3Piece[] = [];
  let wake: (() => void) | undefined;
  let settled = false;
  let failure: unknown;
  // wllama's callback form: its iterator form leaves an abort's rejection unread when the consumer stops first.
  const run = wllama
    .createCompletion({
      // wllama's types list fewer of llama.cpp's sampling fields than its server reads (repeat_penalty, cache_prompt…).
      ...(request as unknown as RawCompletionParams),
      stream: true,
      abortSignal: cancel.signal,
      onData: (chunk: RawCompletionChunk) => {
        pieces.push(pieceOf(chunk as Wllama3Chunk));
        wake?.();
      },
    })
    .catch((error: unknown) => void (failure = error))
    .finally(() => {
      settled = true;
      wake?.();
    });
  try {
    for (;;) {
      // Pieces wllama streamed before an abort was heard are not the caller's any more.
      throwIfAborted(signal);
      const piece = pieces.shift();
      if (piece) {
        yield piece;
        if (piece.end) return;
      } else if (settled) break;
      else await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure !== undefined && !(failure instanceof WllamaAbortError)) throw asEngineError(failure);
  } finally {
    signal?.removeEventListener('abort', abort);
    cancel.abort();
    // The row's sequence is free again once wllama has cancelled it: the next request may take it.
    await run;
  }
}

/** llama.cpp's refusal of a request longer than the context, as the 400 it is. */
function asEngineError(error: unknown): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (/exceeds the available context size/.test(message))
    return new EngineError('invalid_request', `The prompt and max_tokens exceed the model's context: ${message}`, {
      param: 'messages',
    });
  return error;
}

/** wllama 3 logs every step at debug level; its warnings and errors still reach the console. */
const QUIET = {
  debug: () => {},
  log: () => {},
  warn: (...args: unknown[]) => console.warn(...args),
  error: (...args: unknown[]) => console.error(...args),
};
