import type * as NodeLlamaCppModule from 'node-llama-cpp';
import type { Llama, Token } from 'node-llama-cpp';

type NodeLlamaCpp = typeof NodeLlamaCppModule;
import { EngineError, throwIfAborted, type EmbedResult } from '../../engine-interface/index.ts';
import type { ChatModel, EmbeddingModel, LoadContext } from '../model-loaders.ts';
import { isHubModel } from '../engine-descriptor.ts';
import { modelFolder } from '../model-files.ts';
import type { LlamaCppCandidate } from './llama-cpp-engine.ts';
import { kvBytesPerToken, NodeLlamaChatModel, type GgufMetadata } from './node-llama-chat-model.ts';

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

/** A chat context's window when the candidate names none: the model's training context, at most this. */
const DEFAULT_CONTEXT = 4096;

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

/**
 * Threads per context: half the cores. llama.cpp's threads spin while they wait for each other, so as many threads as
 * cores on a machine that also runs the server (and, in tests, browsers) slows it a hundredfold: on 2 vCPUs, 200 tokens
 * of stories260K took 111 s with node-llama-cpp's default and 113 ms with one thread.
 */
const threads = (candidate: LlamaCppCandidate) =>
  candidate.threads ?? Math.max(1, Math.floor(process.getBuiltinModule('node:os').availableParallelism() / 2));

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
    const contextLength = Math.min(candidate.contextWindow ?? DEFAULT_CONTEXT, model.trainContextSize);
    const tokenBytes = kvBytesPerToken(model.fileInfo.metadata as unknown as GgufMetadata);
    const fit = Math.floor(DEFAULT_SEQUENCE_BYTES / ((tokenBytes || 2 ** 17) * contextLength));
    const llamaContext = await model.createContext({
      sequences: candidate.sequences ?? Math.max(2, Math.min(MAX_SEQUENCES, fit)),
      contextSize: contextLength,
      threads: threads(candidate),
      // Every sequence keeps its own keys and values, and none is shifted: the generation core keeps each request
      // within the window.
      batchSize: Math.min(512, contextLength),
    });
    return new NodeLlamaChatModel(model, llamaContext, { contextLength, tokenBytes });
  } catch (error) {
    await model.dispose();
    throw error;
  }
}

export async function loadEmbeddingModel(candidate: LlamaCppCandidate, context: LoadContext): Promise<EmbeddingModel> {
  const runtime = await getRuntime();
  const model = await runtime.loadModel({ modelPath: await ggufPath(candidate, context) });
  const maxInputTokens = Math.min(candidate.maxInputTokens ?? Infinity, model.trainContextSize);
  const embedding = await model.createEmbeddingContext({
    contextSize: model.trainContextSize,
    threads: threads(candidate),
  });
  const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
  const eos = model.tokens.shouldAppendEosToken ? model.tokens.eos : null;
  /** The ids the model reads of a text: its own tokens, between the BOS and EOS the model adds (BERT's CLS, SEP). */
  const tokens = (text: string): Token[] => [
    ...(bos !== null ? [bos] : []),
    ...model.tokenize(text, false),
    ...(eos !== null ? [eos] : []),
  ];
  return {
    maxInputTokens,
    async embed(input, options = {}): Promise<EmbedResult> {
      const ids = input.map((text, index) => {
        const ids = tokens(text);
        if (ids.length > maxInputTokens) {
          throw new EngineError(
            'context_length_exceeded',
            `This model's maximum input length is ${maxInputTokens} tokens, but input[${index}] has ${ids.length} ` +
              'tokens. Please shorten or split it.',
            { param: 'input' },
          );
        }
        return ids;
      });
      const embeddings: Float32Array[] = [];
      for (const text of ids) {
        throwIfAborted(options.signal);
        const { vector } = await embedding.getEmbeddingFor(text);
        embeddings.push(normalized(vector));
      }
      return { embeddings, usage: { promptTokens: ids.reduce((sum, t) => sum + t.length, 0) } };
    },
  };
}

/** L2-normalised, as OpenAI's embeddings are (llama.cpp gives them as pooled). */
function normalized(vector: readonly number[]): Float32Array {
  const out = Float32Array.from(vector);
  const norm = Math.hypot(...out) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}
