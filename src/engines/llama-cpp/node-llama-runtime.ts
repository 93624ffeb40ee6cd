import type * as NodeLlamaCppModule from 'node-llama-cpp';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import type { NativeDraw } from '../../generation/decode-loop.ts';
import { isHubModel } from '../engine-descriptor.ts';
import { modelFolder } from '../model-files.ts';
import { defaultCpuThreads } from '../cpu-threads.ts';
import type { ChatModel, EmbeddingModel, LoadContext } from '../model-loaders.ts';
import { llamaEmbeddingModel } from './llama-embedding-model.ts';
import { kvBytesPerToken, LlamaChatModel, type GgufMetadata, type LlamaRuntimeModel } from './llama-chat-model.ts';
import { contextWindowOf, type LlamaCppCandidate } from './llama-cpp-engine.ts';
import { ggufVocabulary } from './gguf-vocabulary.ts';
import { drawnToken, logProbabilities, type LlamaSequence } from './sequence-batch.ts';

type NodeLlamaCpp = typeof NodeLlamaCppModule;

/*
 * llama.cpp in Node, through node-llama-cpp: its prebuilt CPU binary (never a build from source, never a GPU probe, so
 * that a server without a GPU loads in moments), one per process.
 *
 * node-llama-cpp and Node's modules are taken when first used, by names a bundler does not follow: the engine worker's
 * browser bundle reaches this file through the loaders, and must not meet a native addon there.
 */

/** node-llama-cpp, as the app installs it (an optional peer dependency). */
const NODE_LLAMA_CPP = 'node-llama-cpp';
const nodeLlamaCpp = (): Promise<NodeLlamaCpp> => import(/* @vite-ignore */ NODE_LLAMA_CPP);

/**
 * The keys and values a chat model's sequences may hold together when the candidate does not say how many: each
 * sequence holds its whole window, so a model of 114 KiB a token (Qwen3-0.6B) at 4,096 tokens gets 2, the fixtures 16.
 * A sequence decodes one row and, between requests, keeps its tokens for the next prompt that starts the same way.
 */
const DEFAULT_SEQUENCE_BYTES = 2 ** 30;
const MAX_SEQUENCES = 16;

let llama: Promise<Llama> | undefined;

function getRuntime(): Promise<Llama> {
  llama ??= nodeLlamaCpp().then(({ getLlama, LlamaLogLevel }) =>
    getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }),
  );
  llama.catch(() => (llama = undefined));
  return llama;
}

/** Threads per context: the candidate's, else half the cores (see defaultCpuThreads: llama.cpp's threads spin). */
const threads = (candidate: LlamaCppCandidate) => candidate.threads ?? defaultCpuThreads();

/**
 * The GGUF's path on this machine: a folder's file as it is; a hub repository's or a URL's downloaded once into
 * node-llama-cpp's models folder (resumed, and found there afterwards, offline too).
 */
async function ggufPath(candidate: LlamaCppCandidate, context: LoadContext): Promise<string> {
  if (!isHubModel(candidate.model) && !/^https?:\/\//i.test(candidate.model)) {
    return process.getBuiltinModule('node:path').join(candidate.model, candidate.file);
  }
  const { resolveModelFile } = await nodeLlamaCpp();
  const url = modelFolder(candidate.model, candidate.hub).source + candidate.file;
  return resolveModelFile(url, {
    cli: false,
    onProgress: ({ downloadedSize, totalSize }) =>
      context.onProgress?.({
        status: 'progress',
        model: context.id,
        file: candidate.file,
        loaded: downloadedSize,
        total: totalSize,
        progress: totalSize ? (downloadedSize / totalSize) * 100 : 0,
      }),
  });
}

export async function loadChatModel(candidate: LlamaCppCandidate, context: LoadContext): Promise<ChatModel> {
  if (candidate.images)
    throw new Error('llama.cpp candidates read text only here: projectors (mmproj) are not supported yet');
  const runtime = await getRuntime();
  const model = await runtime.loadModel({ modelPath: await ggufPath(candidate, context) });
  try {
    const contextLength = contextWindowOf(candidate, model.trainContextSize);
    const tokenBytes = kvBytesPerToken(model.fileInfo.metadata as unknown as GgufMetadata);
    const fit = Math.floor(DEFAULT_SEQUENCE_BYTES / ((tokenBytes || 2 ** 17) * contextLength));
    const llamaContext = await createSequencesContext(model, {
      sequences: candidate.sequences ?? Math.max(2, Math.min(MAX_SEQUENCES, fit)),
      contextSize: contextLength,
      threads: threads(candidate),
    });
    const runtimeModel = nodeRuntimeModel(model, llamaContext);
    try {
      const draft = candidate.draft && (await loadDraft(candidate, candidate.draft, context, contextLength));
      try {
        return new LlamaChatModel(runtimeModel, { contextLength, tokenBytes, draft });
      } catch (error) {
        await draft?.model.dispose();
        throw error;
      }
    } catch (error) {
      await llamaContext.dispose();
      throw error;
    }
  } catch (error) {
    await model.dispose();
    throw error;
  }
}

/**
 * A context of sequences decoded together (a chat model's several, a draft's one). Every sequence keeps its own keys
 * and values, and none is shifted: the generation core keeps each request within the window.
 */
export async function createSequencesContext(
  model: LlamaModel,
  options: { sequences: number; contextSize: number; threads: number },
): Promise<LlamaContext> {
  const llamaContext = await model.createContext({ ...options, batchSize: Math.min(512, options.contextSize) });
  serializeOutputReorder(llamaContext);
  return llamaContext;
}

/** The part of node-llama-cpp's native context (`LlamaContext._ctx`, 3.21.1) that decodes a batch and samples from it. */
interface AddonContext {
  decodeBatch(...args: unknown[]): Promise<unknown>;
  sampleToken(...args: unknown[]): Promise<unknown>;
}

/**
 * After a batch of several sequences, node-llama-cpp samples each sequence's outputs on a worker thread of its own, all
 * at once. llama.cpp puts a batch's outputs back in the batch's order lazily, on the first read of any of them
 * (`llama_context::output_reorder`, swapping rows in place, unguarded), so those first reads race: a sequence is handed
 * another's distribution, or a half-swapped one. It showed as seeded requests that did not repeat, about one step in a
 * hundred with four sequences of mixed lengths (a speculating row beside others). The first sampling after each decode
 * now runs alone, and reorders; the others wait for it, then run together.
 */
function serializeOutputReorder(llamaContext: LlamaContext): void {
  const native = (llamaContext as unknown as { _ctx?: Partial<AddonContext> })._ctx;
  if (typeof native?.decodeBatch !== 'function' || typeof native.sampleToken !== 'function') {
    throw new Error(
      'node-llama-cpp no longer has the context this project guards: install the version package.json pins',
    );
  }
  const decodeBatch = native.decodeBatch.bind(native);
  const sampleToken = native.sampleToken.bind(native);
  /** The first sampling since the last decode, once one has started. */
  let first: Promise<unknown> | undefined;
  // The addon's methods are read-only on its prototype: each is shadowed on the instance.
  const own = <K extends keyof AddonContext>(name: K, value: AddonContext[K]) =>
    Object.defineProperty(native, name, { value, configurable: true });
  own('decodeBatch', async (...args) => {
    const decoded = await decodeBatch(...args);
    first = undefined;
    return decoded;
  });
  own('sampleToken', (...args) => {
    if (first) return first.then(() => sampleToken(...args));
    const sampled = sampleToken(...args);
    first = sampled.catch(() => undefined);
    return sampled;
  });
}

/** A loaded GGUF and its context as a chat model reads them (LlamaRuntimeModel); disposing frees both. */
function nodeRuntimeModel(model: LlamaModel, llamaContext: LlamaContext): LlamaRuntimeModel {
  const metadata = model.fileInfo.metadata as unknown as GgufMetadata;
  const vocabularySize = metadata.tokenizer.ggml.tokens.length;
  return {
    metadata,
    sequences: Array.from({ length: llamaContext.totalSequences }, () =>
      nodeSequence(llamaContext.getSequence(), vocabularySize),
    ),
    tokenize: (text, special) => [...model.tokenize(text, special)],
    tokenizer: nodeTokenizer(model, metadata),
    bos: model.tokens.shouldPrependBosToken ? (model.tokens.bos ?? undefined) : undefined,
    async dispose() {
      await llamaContext.dispose();
      await model.dispose();
    },
  };
}

/** A candidate's draft model: its GGUF with one sequence of the target's window (or its own, where shorter). */
async function loadDraft(
  candidate: LlamaCppCandidate,
  draft: NonNullable<LlamaCppCandidate['draft']>,
  context: LoadContext,
  targetWindow: number,
) {
  const runtime = await getRuntime();
  const file = { ...candidate, model: draft.model ?? candidate.model, file: draft.file };
  const model = await runtime.loadModel({ modelPath: await ggufPath(file, context) });
  try {
    const contextLength = Math.min(targetWindow, model.trainContextSize);
    const llamaContext = await createSequencesContext(model, {
      sequences: 1,
      contextSize: contextLength,
      threads: threads(candidate),
    });
    const metadata = model.fileInfo.metadata as unknown as GgufMetadata;
    return { model: nodeRuntimeModel(model, llamaContext), tokenBytes: kvBytesPerToken(metadata), contextLength };
  } catch (error) {
    await model.dispose();
    throw error;
  }
}

export async function loadEmbeddingModel(candidate: LlamaCppCandidate, context: LoadContext): Promise<EmbeddingModel> {
  const runtime = await getRuntime();
  const model = await runtime.loadModel({ modelPath: await ggufPath(candidate, context) });
  // node-llama-cpp reads an input one token shorter than its context at most (it refused one of the context's length
  // with a plain error, a 500); and it reads it in one batch only if the batch holds the context: its default batch of
  // 512 cut a longer input into pieces, and a BERT-type model keeps no cache between them, so the vector was the last
  // piece's (issue 63).
  const maxInputTokens = Math.min(candidate.maxInputTokens ?? Infinity, model.trainContextSize - 1);
  const embedding = await model.createEmbeddingContext({
    contextSize: model.trainContextSize,
    batchSize: model.trainContextSize,
    threads: threads(candidate),
  });
  return llamaEmbeddingModel({
    maxInputTokens,
    tokenize: (text) => [...model.tokenize(text, false)],
    bos: model.tokens.shouldPrependBosToken ? (model.tokens.bos ?? undefined) : undefined,
    eos: model.tokens.shouldAppendEosToken ? (model.tokens.eos ?? undefined) : undefined,
    embed: async (tokens) => (await embedding.getEmbeddingFor(tokens as Token[])).vector,
  });
}

/** node-llama-cpp's tokenizer as generation reads it: llama.cpp's own encoding and decoding. */
function nodeTokenizer(model: LlamaModel, metadata: GgufMetadata) {
  return {
    encode: (text: string) => [...model.tokenize(text, false)] as number[],
    decode: (ids: number[]) => (ids.length ? model.detokenize(ids as Token[], false) : ''),
    tokenString: (token: number) => model.detokenize([token as Token], true),
    readVocabulary: () => ggufVocabulary(metadata.tokenizer.ggml),
  };
}

/**
 * One of a node-llama-cpp context's sequences (see LlamaSequence). Evaluations of one tick, across sequences, are
 * gathered into one llama.cpp batch by node-llama-cpp.
 */
function nodeSequence(sequence: LlamaContextSequence, vocabularySize: number): LlamaSequence {
  /** One array per position asked for (the last, or each of a speculated step's), written again each evaluation. */
  const each: Float32Array[] = [];
  // No context shift: a sequence that is full fails rather than silently forgetting the start of its prompt (the
  // generation core keeps prompt and reply within the window, so this is only ever a bug).
  const evaluate = (input: unknown[]) => sequence.controlledEvaluate(input as never, { contextShift: { size: 0 } });
  const evaluateEach: NonNullable<LlamaSequence['evaluateEach']> = async (tokens, next, from) => {
    const base = sequence.nextTokenIndex;
    const input = tokens.map((token, i) => {
      if (i < from) return token as Token;
      const generateNext =
        next === 'distribution'
          ? { probabilities: true, options: FULL_DISTRIBUTION }
          : { token: true, options: drawOptions(next, base + i + 1) };
      return [token as Token, { generateNext }] as const;
    });
    const output = await evaluate(input);
    return output.slice(from).map((item, k) => {
      const out = (each[k] ??= new Float32Array(vocabularySize));
      const drawn = item?.next;
      if (next === 'distribution') {
        if (!drawn?.probabilities) throw new Error('llama.cpp gave no probabilities for the next token');
        return logProbabilities(out, drawn.probabilities as Map<number, number>);
      }
      if (drawn?.token === undefined || drawn.token === null) throw new Error('llama.cpp drew no next token');
      return drawnToken(out, drawn.token);
    });
  };
  return {
    evaluateEach,
    async evaluate(tokens, next) {
      if (next !== undefined) return (await evaluateEach(tokens, next, tokens.length - 1))[0];
      await evaluate(tokens);
      return undefined;
    },
    async truncate(length) {
      const held = sequence.nextTokenIndex;
      if (held > length) await sequence.eraseContextTokenRanges([{ start: length, end: held }]);
    },
    clear: () => sequence.clearHistory(),
  };
}

/** llama.cpp's sampler settings under which its probabilities are the model's own: no temperature, no truncation. */
const FULL_DISTRIBUTION = Object.freeze({ temperature: 1, topK: 0, topP: 1, minP: 0 });

/**
 * A native draw's sampler after `position` tokens, seeded per position: node-llama-cpp seeds a fresh sampler for each
 * call, whose first draw it would otherwise repeat.
 */
const drawOptions = (draw: NativeDraw, position: number) => ({
  ...FULL_DISTRIBUTION,
  temperature: draw.temperature,
  seed: (Math.imul(draw.seed ^ position, 0x85ebca6b) >>> 1) % 0x7fffffff,
});
