import type * as NodeLlamaCppModule from 'node-llama-cpp';
import type {
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaGrammar,
  LlamaGrammarEvaluationState,
  LlamaModel,
  Token,
  TokenBias,
} from 'node-llama-cpp';
import type { NativeSampling, NativeStep, SamplingPlan } from '../../generation/sampling-plan.ts';
import type { LogitBias } from '../../generation/sampling.ts';
import { THOUGHT_END, THOUGHT_START } from '../../generation/thought-splitter.ts';
import { isHubModel } from '../engine-descriptor.ts';
import { modelFolder } from '../model-files.ts';
import { defaultCpuThreads } from '../cpu-threads.ts';
import type { RunsOn } from '../../engine-interface/index.ts';
import { runningOn, type ChatModel, type EmbeddingModel, type LoadContext } from '../model-loaders.ts';
import { llamaEmbeddingModel } from './llama-embedding-model.ts';
import {
  controlTokens,
  kvBytesPerToken,
  LlamaChatModel,
  type GgufMetadata,
  type LlamaChatOptions,
  type LlamaRuntimeModel,
} from './llama-chat-model.ts';
import { contextWindowOf, type LlamaCppCandidate } from './llama-cpp-engine.ts';
import { ggufVocabulary } from './gguf-vocabulary.ts';
import { logProbabilities, LOWEST_LOGPROB, type LlamaSequence } from './sequence-batch.ts';

type NodeLlamaCpp = typeof NodeLlamaCppModule;

/*
 * llama.cpp in Node, through node-llama-cpp: its prebuilt binary for the machine's GPU where it may have one, its CPU
 * binary otherwise (never a build from source), one per process (see gpuBackend).
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

/**
 * The share of those bytes kept for checkpoints where the model's memory cannot be cut back (recurrent, hybrid, a
 * sliding window: node-llama-cpp's `needsCheckpoints`), split evenly between the sequences: node-llama-cpp's context
 * checkpoints hold only that part of a sequence's memory (llama.cpp's partial state), tens of MiB at most for the
 * small hybrids, and it prunes the oldest past its bound.
 */
const CHECKPOINT_SHARE = 1 / 4;
/** Checkpoints kept per sequence at most: a conversation's turn starts and prompt ends, its latest few. */
const CHECKPOINTS_PER_SEQUENCE = 8;
const MAX_SEQUENCES = 16;

let llama: Promise<Llama> | undefined;

/**
 * The backend node-llama-cpp runs on: its own detection (`'auto'`: Metal on a Mac, CUDA or Vulkan where their prebuilt
 * binary finds a device, the CPU otherwise) on a machine that may have a GPU; the CPU binary on Linux without a GPU
 * device node. There `'auto'` loaded the Vulkan binary to find no device and decode on the CPU all the same, 1.5 s
 * later (getLlama took 6.3 s against 4.8 s, five runs each, on a 2-core server without a GPU).
 */
function gpuBackend(): 'auto' | false {
  if (process.platform !== 'linux') return 'auto';
  const { existsSync } = process.getBuiltinModule('node:fs');
  return existsSync('/dev/dri') || existsSync('/dev/nvidiactl') ? 'auto' : false;
}

function getRuntime(): Promise<Llama> {
  llama ??= nodeLlamaCpp().then(({ getLlama, LlamaLogLevel }) =>
    getLlama({ gpu: gpuBackend(), build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }),
  );
  llama.catch(() => (llama = undefined));
  return llama;
}

/** Threads per context: the candidate's, else half the cores (see defaultCpuThreads: llama.cpp's threads spin). */
const threads = (candidate: LlamaCppCandidate) => candidate.threads ?? defaultCpuThreads();

/**
 * Where node-llama-cpp put a loaded model: on the GPU backend it found (`llama.gpu`) where it offloaded layers there,
 * on the CPU otherwise (no backend found, or a model it kept off the GPU), with the context's threads.
 */
export function nodeRunsOn(
  runtime: Pick<Llama, 'gpu'>,
  model: Pick<LlamaModel, 'gpuLayers'>,
  candidate: LlamaCppCandidate,
): RunsOn {
  return runtime.gpu !== false && model.gpuLayers > 0
    ? { device: runtime.gpu }
    : { device: 'cpu', threads: threads(candidate) };
}

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

/** `options`: what the chat model takes beyond the candidate (the constraint's GBNF, for the sampler to constrain). */
export async function loadChatModel(
  candidate: LlamaCppCandidate,
  context: LoadContext,
  options: Pick<LlamaChatOptions, 'nativeGrammar'> = {},
): Promise<ChatModel> {
  if (candidate.images)
    throw new Error('llama.cpp candidates read text only here: projectors (mmproj) are not supported yet');
  const runtime = await getRuntime();
  const model = await runtime.loadModel({ modelPath: await ggufPath(candidate, context) });
  try {
    const contextLength = contextWindowOf(candidate, model.trainContextSize);
    const tokenBytes = kvBytesPerToken(model.fileInfo.metadata as unknown as GgufMetadata);
    const { isHybrid, isRecurrent, swaSize } = model.fileInsights;
    const checkpointBytes =
      isHybrid || isRecurrent || swaSize !== undefined ? DEFAULT_SEQUENCE_BYTES * CHECKPOINT_SHARE : 0;
    const fit = Math.floor((DEFAULT_SEQUENCE_BYTES - checkpointBytes) / ((tokenBytes || 2 ** 17) * contextLength));
    const llamaContext = await createSequencesContext(model, {
      sequences: candidate.sequences ?? Math.max(2, Math.min(MAX_SEQUENCES, fit)),
      contextSize: contextLength,
      threads: threads(candidate),
    });
    const runtimeModel = nodeRuntimeModel(
      await nodeLlamaCpp(),
      runtime,
      model,
      llamaContext,
      checkpointBytes / llamaContext.totalSequences,
    );
    try {
      const draft = candidate.draft && (await loadDraft(candidate, candidate.draft, context, contextLength));
      try {
        const chat = new LlamaChatModel(runtimeModel, {
          contextLength,
          tokenBytes,
          draft,
          prefixReuse: candidate.prefixCacheBytes !== 0,
          ...options,
        });
        return runningOn(chat, nodeRunsOn(runtime, model, candidate));
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
function nodeRuntimeModel(
  module: NodeLlamaCpp,
  runtime: Llama,
  model: LlamaModel,
  llamaContext: LlamaContext,
  checkpointBytes = 0,
): LlamaRuntimeModel {
  const metadata = model.fileInfo.metadata as unknown as GgufMetadata;
  const vocabularySize = metadata.tokenizer.ggml.tokens.length;
  const sampler = new NativeSampler(module, runtime, model);
  return {
    metadata,
    sequences: Array.from({ length: llamaContext.totalSequences }, () =>
      nodeSequence(
        // Checkpoints only where the decode loop asks for them (a prompt's end, its newest turn's start), none by
        // interval: a conversation reuses those, and they are what the byte bound is spent on.
        llamaContext.getSequence({
          checkpoints: { max: CHECKPOINTS_PER_SEQUENCE, interval: false, maxMemory: checkpointBytes },
        }),
        vocabularySize,
        sampler,
      ),
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
    return {
      model: nodeRuntimeModel(await nodeLlamaCpp(), runtime, model, llamaContext),
      tokenBytes: kvBytesPerToken(metadata),
      contextLength,
    };
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
  const embedder = llamaEmbeddingModel({
    maxInputTokens,
    tokenize: (text) => [...model.tokenize(text, false)],
    bos: model.tokens.shouldPrependBosToken ? (model.tokens.bos ?? undefined) : undefined,
    eos: model.tokens.shouldAppendEosToken ? (model.tokens.eos ?? undefined) : undefined,
    embed: async (tokens) => (await embedding.getEmbeddingFor(tokens as Token[])).vector,
  });
  return runningOn(embedder, nodeRunsOn(runtime, model, candidate));
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
 * What node-llama-cpp's sampler draws of a plan (a chain of llama.cpp samplers, fresh for each evaluation, in the order
 * logit bias, penalties, top-k, top-p, min-p, temperature, the seeded draw):
 * - the temperature and the seed, mixed with the position (see {@link drawSeed});
 * - `logit_bias`, added to the logits (llama.cpp's logit-bias sampler), on any token, the end tokens included;
 * - presence and frequency penalties, with the row's generated tokens (never the prompt's) as the history llama.cpp's
 *   penalty sampler counts: `logit -= count × frequency + (count > 0) × presence`, OpenAI's formula, with its
 *   repetition penalty left at 1;
 * - a GBNF grammar, through the sequence's sampler settings (see {@link grammarChannel});
 * - the drawn token's logprob without alternatives (`logprobs` with `top_logprobs` 0): node-llama-cpp's `confidence`,
 *   its probability under the chain's distribution (grammar, bias, penalties, temperature), which the addon computes
 *   in C: about 3 ms a step on a 32,000-token vocabulary (it sorts the candidates), where `probabilities` builds a
 *   sorted Map of every token for about 25 ms (14.6 / 17.9 / 36.4 ms a step, token alone / with confidence / with
 *   probabilities, on the realistic model).
 * Not top_p under a temperature: llama.cpp cuts the nucleus before the temperature, OpenAI after it, and the two keep
 * other tokens. Not alternatives (`top_logprobs` 1 or more): only `probabilities` lists them, at the logits path's
 * cost, with no top-k cut that keeps the whole distribution's normaliser.
 */
const NODE_SAMPLING: NativeSampling = Object.freeze({
  temperature: true,
  nucleus: false,
  penalties: true,
  logitBias: true,
  grammar: true,
  logprobs: 0,
});

/**
 * A model's native sampling: its plans' logit biases as node-llama-cpp takes them, its grammars compiled once each.
 * node-llama-cpp takes a bias only as its TokenBias, whose public `set` tokenizes text and skips the end tokens:
 * Lantern's ids go into its map (`_biases`, 3.21.1), checked to be there.
 */
class NativeSampler {
  readonly #module: NodeLlamaCpp;
  readonly #runtime: Llama;
  readonly model: LlamaModel;
  readonly #biases = new WeakMap<LogitBias, TokenBias>();
  readonly #grammars = new Map<string, Promise<LlamaGrammar>>();

  constructor(module: NodeLlamaCpp, runtime: Llama, model: LlamaModel) {
    this.#module = module;
    this.#runtime = runtime;
    this.model = model;
    const probe = new module.TokenBias(model.tokenizer) as unknown as { _biases?: unknown };
    const accept = (
      runtime as unknown as { _bindings?: { AddonSampler?: { acceptGrammarEvaluationStateToken?: unknown } } }
    )._bindings?.AddonSampler?.acceptGrammarEvaluationStateToken;
    if (!(probe._biases instanceof Map) || typeof accept !== 'function') {
      throw new Error(
        'node-llama-cpp no longer has the sampler internals this project uses: install the version package.json pins',
      );
    }
  }

  /**
   * A plan's logit bias as node-llama-cpp takes it; under a grammar, with the model's control tokens taken out too (see
   * {@link controlTokens}).
   */
  tokenBias(bias: LogitBias | undefined, grammar: boolean): TokenBias | undefined {
    if (!bias && !grammar) return undefined;
    const key = bias ?? NO_BIAS;
    const kept = grammar ? this.#guardedBiases : this.#biases;
    let tokenBias = kept.get(key);
    if (!tokenBias) {
      tokenBias = new this.#module.TokenBias(this.model.tokenizer);
      const map = (tokenBias as unknown as { _biases: Map<number, number> })._biases;
      for (let i = 0; i < key.ids.length; i++) map.set(key.ids[i]!, key.values[i]!);
      // After the request's own bias, which may not lift them.
      if (grammar) for (const token of this.#controlTokens()) map.set(token, -Infinity);
      kept.set(key, tokenBias);
    }
    return tokenBias;
  }

  readonly #guardedBiases = new WeakMap<LogitBias, TokenBias>();
  #control: number[] | undefined;

  /**
   * The control tokens a grammar must not let through: llama.cpp's grammar matches a token by its text, so a control
   * token whose text fits (`<|im_start|>` inside a JSON string) would be drawn, which Lantern's mask never allows. The
   * end tokens stay (the grammar decides where the reply may end), and so do a thought's tags, which a thinking
   * model writes as its own control tokens and the grammar expects.
   */
  #controlTokens(): number[] {
    this.#control ??= [...controlTokens((this.model.fileInfo.metadata as unknown as GgufMetadata).tokenizer.ggml)]
      .filter(([text, token]) => !THOUGHT_TAGS.has(text) && !this.model.isEogToken(token as Token))
      .map(([, token]) => token);
    return this.#control;
  }

  /** A fresh state of a GBNF grammar (compiled once per text, while the model is loaded). */
  async grammarState(gbnf: string): Promise<LlamaGrammarEvaluationState> {
    let grammar = this.#grammars.get(gbnf);
    if (!grammar) {
      grammar = this.#runtime.createGrammar({ grammar: gbnf });
      grammar.catch(() => this.#grammars.delete(gbnf));
      // A server's requests bring schemas of their own: the oldest compiled grammar goes past a few.
      if (this.#grammars.size >= GRAMMARS_KEPT) this.#grammars.delete(this.#grammars.keys().next().value!);
      this.#grammars.set(gbnf, grammar);
    }
    return new this.#module.LlamaGrammarEvaluationState({ model: this.model, grammar: await grammar });
  }

  /** Follows a token the sampler did not draw (forced by the core, or drawn on another sequence) in a grammar state. */
  acceptToken(state: LlamaGrammarEvaluationState, token: number): void {
    // As node-llama-cpp's sampler does after its own draws: an end token is not the grammar's to follow.
    if (this.model.isEogToken(token as Token)) return;
    const bindings = (this.#runtime as unknown as { _bindings: { AddonSampler: AddonSamplerStatics } })._bindings;
    bindings.AddonSampler.acceptGrammarEvaluationStateToken((state as unknown as { _state: unknown })._state, token);
  }
}

interface AddonSamplerStatics {
  acceptGrammarEvaluationStateToken(state: unknown, token: number): void;
}

/** Compiled grammars a model keeps for requests that bring the same one again. */
const GRAMMARS_KEPT = 16;

/** A thought's tags, which a thinking model writes as control tokens of its own and a thinking grammar spells. */
const THOUGHT_TAGS = new Set([THOUGHT_START, THOUGHT_END]);

/** The bias of a plan without one: under a grammar, the control tokens' alone. */
const NO_BIAS: LogitBias = Object.freeze({ ids: new Int32Array(), values: new Float32Array() });

/**
 * Gives a sequence's sampler a grammar: node-llama-cpp's `controlledEvaluate` (3.21.1) does not forward a grammar to
 * its sampler settings, though the sequence's `_resolveSamplerConfig`, which builds them, takes one (as its `evaluate`
 * passes it). The sequence's own `_resolveSamplerConfig` is shadowed with one that adds the state set here, for the
 * evaluation under way (one at a time per sequence: the decode loop feeds a row once per step). The sampler then
 * masks with it and follows each token it draws (node-llama-cpp's `AddonSampler::acceptToken`).
 */
function grammarChannel(sequence: LlamaContextSequence): (state: LlamaGrammarEvaluationState | undefined) => void {
  const own = sequence as unknown as { _resolveSamplerConfig?: (options: Record<string, unknown>) => unknown };
  const resolve = own._resolveSamplerConfig;
  if (typeof resolve !== 'function') {
    throw new Error(
      'node-llama-cpp no longer has the sequence this project guards: install the version package.json pins',
    );
  }
  let current: LlamaGrammarEvaluationState | undefined;
  Object.defineProperty(sequence, '_resolveSamplerConfig', {
    value: (options: Record<string, unknown>) =>
      resolve.call(sequence, { ...options, grammarEvaluationState: current }),
    configurable: true,
  });
  return (state) => (current = state);
}

/**
 * One of a node-llama-cpp context's sequences (see LlamaSequence). Evaluations of one tick, across sequences, are
 * gathered into one llama.cpp batch by node-llama-cpp.
 */
function nodeSequence(sequence: LlamaContextSequence, vocabularySize: number, sampler: NativeSampler): LlamaSequence {
  /** One array per position asked for (the last, or each of a speculated step's), written again each evaluation. */
  const each: Float32Array[] = [];
  const useGrammar = grammarChannel(sequence);
  /** The grammar state of the row whose plan has one: the tokens it has followed, which its draws extend. */
  let grammar: { plan: SamplingPlan; state: LlamaGrammarEvaluationState; followed: number[] } | undefined;
  /**
   * The grammar state of a row's plan, having followed exactly what the row generated: made for a new row, caught up
   * with tokens the sampler did not draw, made again where the row's tokens are not those it followed (a token the
   * core wrote in place of a draw: a thought's end tag). Only the last token it followed can differ from the row's:
   * each before it was checked a step earlier, and a grammar's row draws one token an evaluation.
   */
  const grammarFor = async ({ plan, generated }: NativeStep) => {
    if (plan.grammar === undefined) return undefined;
    const fresh = () =>
      sampler.grammarState(plan.grammar!).then((state) => ({ plan, state, followed: [] as number[] }));
    const last = (grammar?.followed.length ?? 0) - 1;
    if (grammar?.plan !== plan || (last >= 0 && generated[last] !== grammar.followed[last])) grammar = await fresh();
    for (let i = grammar.followed.length; i < generated.length; i++) {
      sampler.acceptToken(grammar.state, generated[i]!);
      grammar.followed.push(generated[i]!);
    }
    return grammar;
  };
  // No context shift: a sequence that is full fails rather than silently forgetting the start of its prompt (the
  // generation core keeps prompt and reply within the window, so this is only ever a bug).
  const evaluate = (input: unknown[]) => sequence.controlledEvaluate(input as never, { contextShift: { size: 0 } });
  const evaluateEach: NonNullable<LlamaSequence['evaluateEach']> = async (tokens, next, from) => {
    const base = sequence.nextTokenIndex;
    const followed = next === 'distribution' ? undefined : await grammarFor(next);
    // A grammar's state follows each draw: one per evaluation (the core does not speculate on such rows).
    if (followed && from < tokens.length - 1) throw new Error('a native grammar draws one token an evaluation');
    const input = tokens.map((token, i) => {
      if (i < from) return token as Token;
      const generateNext =
        next === 'distribution'
          ? { probabilities: true, options: FULL_DISTRIBUTION }
          : {
              token: true,
              confidence: next.plan.logprobs !== undefined,
              options: planOptions(sampler, next, tokens.slice(from + 1, i + 1), base + i + 1),
            };
      return [token as Token, { generateNext }] as const;
    });
    useGrammar(followed?.state);
    let output;
    try {
      output = await evaluate(input);
    } catch (error) {
      if (followed) grammar = undefined; // what its state followed is not known
      throw error;
    } finally {
      useGrammar(undefined);
    }
    return output.slice(from).map((item, k) => {
      const drawn = item?.next;
      if (next === 'distribution') {
        if (!drawn?.probabilities) throw new Error('llama.cpp gave no probabilities for the next token');
        return logProbabilities(
          (each[k] ??= new Float32Array(vocabularySize)),
          drawn.probabilities as Map<number, number>,
        );
      }
      if (drawn?.token === undefined || drawn.token === null) throw new Error('llama.cpp drew no next token');
      followed?.followed.push(drawn.token);
      if (next.plan.logprobs === undefined) return { token: drawn.token };
      if (drawn.confidence === undefined) throw new Error('llama.cpp gave no probability for the token it drew');
      return { token: drawn.token, logprob: Math.max(Math.log(drawn.confidence), LOWEST_LOGPROB), top: [] };
    });
  };
  return {
    executes: NODE_SAMPLING,
    // A model whose memory cannot be cut back: node-llama-cpp restores its latest checkpoint at or before a cut and
    // evaluates the rest again inside `eraseContextTokenRanges`; the batch cuts only to where none are evaluated.
    reuse: sequence.needsCheckpoints ? 'checkpoints' : 'cut',
    restorable(length) {
      if (length <= 0 || length >= sequence.nextTokenIndex) return Math.max(0, length);
      // The checkpoints held: node-llama-cpp's `getRestoreToPrefixIndexEvaluationSize` asks only its latest one
      // (whose state starts after any earlier cut), though a cut prunes the later ones first and restores the one at
      // or before it, so it says every shorter cut evaluates all again. Its list (3.21.1, pinned) says what a cut keeps.
      const held = (sequence as unknown as { _checkpoints?: { _checkpoints?: [unknown, { maxPos: number }][] } })
        ._checkpoints?._checkpoints;
      if (!Array.isArray(held)) return length - sequence.getRestoreToPrefixIndexEvaluationSize(length - 1);
      return Math.max(0, ...held.map(([, checkpoint]) => checkpoint.maxPos + 1).filter((tokens) => tokens <= length));
    },
    checkpoint: () => sequence.takeCheckpoint(),
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
 * A native step's sampler settings after `position` tokens: its plan, with the row's generated tokens and `ahead` (the
 * speculated tokens fed before this position, as if generated) as the penalties' history.
 */
function planOptions(
  sampler: NativeSampler,
  { plan, generated }: NativeStep,
  ahead: readonly number[],
  position: number,
) {
  const penalized = plan.presencePenalty !== 0 || plan.frequencyPenalty !== 0;
  const history = penalized ? [...generated, ...ahead] : [];
  const { logitBias } = plan;
  return {
    ...FULL_DISTRIBUTION,
    temperature: plan.temperature,
    seed: drawSeed(plan.seed, position),
    ...(penalized && {
      repeatPenalty: {
        penalty: 1,
        presencePenalty: plan.presencePenalty,
        frequencyPenalty: plan.frequencyPenalty,
        // All of it: node-llama-cpp widens its window (64 tokens by default) to the history it is given.
        punishTokens: history as Token[],
      },
    }),
    tokenBias: sampler.tokenBias(logitBias, plan.grammar !== undefined),
  };
}

/**
 * A draw's seed at `position`: node-llama-cpp seeds a fresh sampler for each evaluation, whose first draw it would
 * otherwise repeat at every step.
 */
const drawSeed = (seed: number, position: number) => (Math.imul(seed ^ position, 0x85ebca6b) >>> 1) % 0x7fffffff;
