/// <reference types="vite/client" />
// wllama 2's package names no entry point that exists (`main` is `index.js`): its ESM build, by path.
import { Wllama } from '@wllama/wllama/esm/index.js';
import multiThreadWasm from '@wllama/wllama/esm/multi-thread/wllama.wasm?url';
import singleThreadWasm from '@wllama/wllama/esm/single-thread/wllama.wasm?url';
import type { CacheReuse } from '../../generation/decode-loop.ts';
import type { NativeStep } from '../../generation/sampling-plan.ts';
import type { RunsOn } from '../../engine-interface/index.ts';
import { runningOn, type ChatModel, type EmbeddingModel, type LoadContext } from '../model-loaders.ts';
import { holdsSequenceState, readGgufMetadata, trainContext } from './gguf-metadata.ts';
import { ggufVocabulary, vocabularyDecoder } from './gguf-vocabulary.ts';
import { llamaEmbeddingModel } from './llama-embedding-model.ts';
import { kvBytesPerToken, LlamaChatModel, type GgufMetadata } from './llama-chat-model.ts';
import { contextWindowOf, type LlamaCppCandidate } from './llama-cpp-engine.ts';
import { ggufBlobs, wasmBlobUrl } from './wllama-blobs.ts';
import { logProbabilities, type LlamaSequence } from './sequence-batch.ts';
import { WLLAMA2_SAMPLING, WllamaSampler } from './wllama-sampler.ts';
import { watchWorker, type WorkerWatch } from './wllama-worker-watch.ts';

/*
 * llama.cpp in browsers, through wllama 2 (llama.cpp compiled to WebAssembly, single-threaded, or multi-threaded where
 * the page is cross-origin isolated), in the engine worker. wllama 2 is the line that still exposes llama.cpp's own
 * calls (decode, the next token's distribution, its sampler, the KV cache): Lantern's generation core runs every row,
 * and the plans wllama's sampler covers are drawn there (see WLLAMA2_SAMPLING). (wllama 3 offers only OpenAI-shaped
 * calls that sample inside, with no logits.) Its 2.3 releases, not
 * 2.4: 2.4 is built for 64-bit WebAssembly memory, which WebKit does not have.
 *
 * wllama runs llama.cpp in a worker of its own, which it starts from the code it carries; its WebAssembly binary is
 * Lantern's (from this origin, precached), handed over as a blob so that the nested worker never needs the network.
 */

let wasmBlobs: Promise<{ single: string; multi: string }> | undefined;

/** wllama's binaries as blob URLs, read once per worker (from the precache when offline). */
function wasmPaths(): Promise<{ single: string; multi: string }> {
  wasmBlobs ??= (async () => {
    const single = await wasmBlobUrl(singleThreadWasm);
    // The multi-threaded build runs only where SharedArrayBuffer does: a cross-origin isolated page.
    const multi = self.crossOriginIsolated ? await wasmBlobUrl(multiThreadWasm) : '';
    return { single, multi };
  })();
  wasmBlobs.catch(() => (wasmBlobs = undefined));
  return wasmBlobs;
}

/** Threads: the candidate's, else half the cores (llama.cpp's threads spin while they wait for each other). */
const threads = (candidate: LlamaCppCandidate) =>
  candidate.threads ?? Math.max(1, Math.floor((navigator.hardwareConcurrency || 1) / 2));

/** A started wllama with the candidate's GGUF loaded, its metadata, and the watch on its worker (see watchWorker). */
async function loadWllama(
  candidate: LlamaCppCandidate,
  config: { n_ctx: (metadata: GgufMetadata) => number; embeddings?: boolean },
): Promise<{ wllama: Wllama; metadata: GgufMetadata; worker: WorkerWatch }> {
  const { blobs, urls } = await ggufBlobs(candidate);
  const metadata = await readGgufMetadata(blobs[0]!, urls[0]!);
  const paths = await wasmPaths();
  const worker = watchWorker();
  const wllama = new Wllama(
    { 'single-thread/wllama.wasm': paths.single, ...(paths.multi && { 'multi-thread/wllama.wasm': paths.multi }) },
    { suppressNativeLog: true, logger: worker.logger },
  );
  worker.watch(wllama);
  const nCtx = config.n_ctx(metadata);
  try {
    await withDocumentBase(() =>
      wllama.loadModel(blobs, {
        n_ctx: nCtx,
        // An embedding model reads its whole input in one batch.
        n_batch: config.embeddings ? nCtx : Math.min(512, nCtx),
        n_threads: threads(candidate),
        embeddings: config.embeddings ?? false,
      }),
    );
  } catch (error) {
    await wllama.exit().catch(() => {});
    const lost = worker.lost();
    throw lost === undefined ? error : new Error(`llama.cpp's worker failed while loading the model (${lost})`);
  }
  return { wllama, metadata, worker };
}

/** Where wllama 2 runs a loaded model: WebAssembly, on as many threads as its build runs (1 unless multi-threaded). */
const wllamaRunsOn = (wllama: Wllama, candidate: LlamaCppCandidate): RunsOn => ({
  device: 'wasm',
  threads: wllama.isMultithread() ? threads(candidate) : 1,
});

export async function loadChatModel(candidate: LlamaCppCandidate, _context: LoadContext): Promise<ChatModel> {
  if (candidate.images)
    throw new Error('llama.cpp candidates read text only here: projectors (mmproj) are not supported yet');
  const { wllama, metadata, worker } = await loadWllama(candidate, {
    n_ctx: (metadata) => contextWindowOf(candidate, trainContext(metadata)),
  });
  const { n_ctx: contextLength, n_batch: batchSize } = wllama.getLoadedContextInfo();
  const vocabulary = ggufVocabulary(metadata.tokenizer.ggml);
  const vocabularySize = vocabulary.strings.length;
  const sampler = new WllamaSampler(wllama, contextLength, vocabularySize);
  const chat = new LlamaChatModel(
    {
      metadata,
      // wllama 2 saves no state: on a model whose memory cannot be cut back, a prompt reuses only a whole extension.
      sequences: [
        wllamaSequence(
          wllama,
          vocabularySize,
          batchSize,
          worker,
          sampler,
          holdsSequenceState(metadata) ? 'extend' : 'cut',
        ),
      ],
      tokenize: worker.guard((text: string, special: boolean) => wllama.tokenize(text, special)),
      tokenizer: {
        // No `encode`: wllama tokenizes in its own worker, asynchronously, and jump-forward retokenizes within a step.
        ...vocabularyDecoder(vocabulary),
        readVocabulary: () => vocabulary,
      },
      bos: wllama.mustAddBosToken() ? wllama.getBOS() : undefined,
      dispose: () => wllama.exit(),
    },
    {
      contextLength,
      tokenBytes: kvBytesPerToken(metadata),
      jumpForward: false,
      prefixReuse: candidate.prefixCacheBytes !== 0,
    },
  );
  return runningOn(chat, wllamaRunsOn(wllama, candidate));
}

export async function loadEmbeddingModel(candidate: LlamaCppCandidate, _context: LoadContext): Promise<EmbeddingModel> {
  const { wllama, worker } = await loadWllama(candidate, {
    n_ctx: (metadata) => Math.min(candidate.maxInputTokens ?? Infinity, trainContext(metadata)),
    embeddings: true,
  });
  const info = wllama.getLoadedContextInfo();
  const embedder = llamaEmbeddingModel({
    maxInputTokens: Math.min(info.n_ctx, info.n_ubatch),
    tokenize: worker.guard((text: string) => wllama.tokenize(text, false)),
    bos: wllama.mustAddBosToken() ? wllama.getBOS() : undefined,
    eos: wllama.mustAddEosToken() ? wllama.getEOS() : undefined,
    embed: worker.guard(async (tokens: number[]) => {
      // Each input alone: what a previous one left in the cache would attend into it.
      await wllama.kvClear();
      return wllama.embeddings(tokens);
    }),
  });
  return runningOn(embedder, wllamaRunsOn(wllama, candidate));
}

/**
 * wllama's one sequence (see LlamaSequence). A plan its sampler covers (WLLAMA2_SAMPLING: greedy, with a bias and
 * penalties) is drawn by that sampler; every other request reads the whole distribution and the generation core draws.
 */
function wllamaSequence(
  wllama: Wllama,
  vocabularySize: number,
  batchSize: number,
  worker: WorkerWatch,
  sampler: WllamaSampler,
  reuse: CacheReuse,
): LlamaSequence {
  const logits = new Float32Array(vocabularySize);
  return {
    executes: WLLAMA2_SAMPLING,
    reuse,
    evaluate: worker.guard(async (tokens: number[], next: 'distribution' | NativeStep | undefined) => {
      // The sampler's set-up goes first: it touches no logits, and must precede the draw.
      const prepared = Promise.all(next !== undefined && next !== 'distribution' ? sampler.prepare(next) : []);
      prepared.catch(() => {}); // awaited below, or left where the pass fails first
      const decoded = wllama.decode(tokens, { skipLogits: next === undefined });
      if (next === undefined) return void (await decoded);
      // wllama's worker answers in the order it is asked: the read of what a pass leaves is sent along with the pass,
      // so that a token costs one round trip to that worker, not two. An input longer than a batch is decoded in
      // several passes, each awaited before the next is sent, so its read waits for all of them.
      if (tokens.length > batchSize) await decoded;
      if (next !== 'distribution') {
        // The drawn token reaches the sampler's history at the row's next step (WllamaSampler.prepare), where the core
        // may have written another in its place. getLogits(1) would sort the whole vocabulary first (a third of a
        // 32,000-token model's step in WebAssembly).
        const [, , { token }] = await Promise.all([prepared, decoded, wllama.samplingSample()]);
        return { token };
      }
      const [, distribution] = await Promise.all([decoded, wllama.getLogits(-1)]);
      return logProbabilities(
        logits,
        distribution.map(({ token, p }) => [token, p] as const),
      );
    }),
    // wllama 2's kvRemove(0, -1) clears the cache but not its token count, and reports a failure: kvClear does both.
    truncate: worker.guard((length: number) => (length === 0 ? wllama.kvClear() : wllama.kvRemove(length, -1))),
    clear: worker.guard(() => wllama.kvClear()),
  };
}

/**
 * Runs `load` with a `document.baseURI`: wllama 2 resolves its binaries' paths against it, and a worker has no
 * document. Removed afterwards, so that no library of the worker takes it for a page.
 */
async function withDocumentBase<T>(load: () => Promise<T>): Promise<T> {
  const global = globalThis as { document?: unknown };
  if (global.document !== undefined) return load();
  Object.defineProperty(globalThis, 'document', {
    value: { baseURI: self.location.href },
    configurable: true,
  });
  try {
    return await load();
  } finally {
    delete global.document;
  }
}
