/**
 * llama.cpp against transformers.js in Node, on the same weights, in one run: each model's ONNX export
 * (transformers.js, CPU, fp32) and its GGUF (llama.cpp through node-llama-cpp, f32), converted from that export by
 * scripts/fixtures/gguf_convert.py, which gives the same greedy tokens. Both engines run under Lantern's own generation
 * core (the same decode loop and choice pipeline; transformers.js under Lantern's sampler and grammar masks, llama.cpp
 * under its own sampler and GBNF), each called directly (`createEngine`, `engine.chat`) with a profile of its one
 * candidate, so what differs is the runtime under the core:
 *
 * - load: ms from `createEngine` to the first token of the first request, each time a fresh engine (median of loads);
 * - first token: ms to the first token of a prompt of a few dozen tokens on the loaded engine, each request in a cache
 *   scope of its own so that no prefix is reused (median);
 * - decode: tokens/s after the first token of a long reply whose end tokens are banned (median of runs);
 * - 4 streams: tokens/s of four such requests at once, all of them together (median of rounds);
 * - constrained ÷ free: tokens/s of whole requests under a `json_schema` constraint (one field of more text than any
 *   reply of that many tokens writes, so every reply runs to the cap) against the same prompt free for
 *   as many tokens, median of pairs: what the grammar mask costs each engine.
 *
 * And for llama.cpp, a comparator: node-llama-cpp called directly, without Lantern, on the same GGUF with the same
 * threads and context, decoding greedily (its own sampler, `sequence.evaluateWithMetadata`) as many tokens from the
 * same prompt. Lantern's rate ÷ that one is what Lantern's generation core costs over the runtime, whose sampler draws
 * each token for Lantern's llama.cpp too (src/engines/llama-cpp/node-llama-runtime.ts). Paired so:
 *
 * - the decode above (greedy, end tokens banned by `logit_bias`) and a plain greedy decode;
 * - a `json_schema` request (a book's record) against node-llama-cpp under the GBNF Lantern's llama.cpp runs for it
 *   (src/grammar/llama-grammar.ts), compiled by node-llama-cpp's `createGrammar`: the same grammar work on both;
 * - a `logprobs: true` request (no alternatives) against node-llama-cpp asked each token's `confidence`, which is what
 *   Lantern's engine reads its log probability from.
 *
 * The models: stories260K (../shared/models; skipped without it), the realistic model (bench/realistic-model.ts; its
 * smoke variant in the smoke pass; skipped where it cannot be built) and the bundled tiny-chat with its committed GGUF.
 * The GGUFs of the first two are converted on first use into git-ignored folders (bench/.models/), and again when
 * missing or older than the ONNX model they come from.
 *
 * Part of `npm run bench`; also runs alone: `npx tsx bench/engines.ts` (`--smoke` for the smoke plan).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Llama, LlamaGrammar, Token } from 'node-llama-cpp';
import { createEngine, type ChatRequest, type ChatResult, type Engine } from '../src/index.ts';
import type { ModelCandidate } from '../src/models/model-profile.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../test/support/lantern.ts';
import { loadTokenizer, promptTokens, replyRoomAt } from './context.ts';
import { contextWindowOf } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import { llamaGrammar } from '../src/grammar/llama-grammar.ts';
import { ENGLISH } from './realistic-bench.ts';
import { prepareRealisticModel } from './realistic-model.ts';
import { endlessEngineRequest, ENDLESS_MESSAGES } from './requests.ts';
import { median, round } from './stats.ts';

export interface EnginesPlan {
  /** Fresh engines loaded for each model and engine, each timed from `createEngine` to its first token. */
  loads: number;
  /** [prompt tokens, runs] of the first-token measure: a prompt of that many tokens (or a word more). */
  firstToken: readonly [number, number];
  /** [tokens, runs] of the decode measure; on llama.cpp each run is paired with one of node-llama-cpp's directly. */
  decode: readonly [number, number];
  /** Requests at once, the tokens of each, and rounds. */
  streams: { streams: number; tokens: number; rounds: number };
  /** [tokens, pairs] of constrained against free (each pair: one request of each, alternating which goes first). */
  constrained: readonly [number, number];
}

export const ENGINES_PLAN: EnginesPlan = {
  loads: 3,
  firstToken: [32, 15],
  decode: [128, 10],
  streams: { streams: 4, tokens: 64, rounds: 3 },
  constrained: [128, 5],
};

/** The smoke pass: every measure once, on a few tokens (the prompt as long as the full run's). */
export const ENGINES_SMOKE_PLAN: EnginesPlan = {
  loads: 1,
  firstToken: [32, 1],
  decode: [4, 1],
  streams: { streams: 4, tokens: 2, rounds: 1 },
  constrained: [4, 1],
};

/**
 * llama.cpp's threads, as src/engines/llama-cpp/node-llama-runtime.ts sets them when a candidate names none (half the
 * cores: its threads spin while they wait for each other); node-llama-cpp directly gets as many.
 */
const THREADS = Math.max(1, Math.floor(os.availableParallelism() / 2));

const ID = 'engines-bench';
const PYTHON = '/usr/bin/python3';
const CONVERTER = fileURLToPath(new URL('../scripts/fixtures/gguf_convert.py', import.meta.url));
/** stories260K's folder is read-only (../shared/models): its GGUF is cached here (`<folder>/gguf/<name>-f32.gguf`). */
const STORIES_GGUF_DIR = fileURLToPath(new URL('./.models/stories260K/gguf', import.meta.url));

type EngineName = 'transformers' | 'llama.cpp';
const ENGINES: readonly EngineName[] = ['transformers', 'llama.cpp'];

/** One model as both engines run it: its transformers.js folder, its GGUF, and words to write prompts with. */
export interface BenchModel {
  name: string;
  dir: string;
  gguf: string;
  words: readonly string[];
}

/** What one engine did on one model. */
export interface EngineFigures {
  /** `createEngine` to the first token of the first request, ms (median of fresh engines). */
  loadMs: number;
  /** First token of a prompt of `promptTokens` tokens, nothing of it cached, ms p50. */
  firstTokenMs: number;
  promptTokens: number;
  /** Tokens/s after the first token, over `decodeTokens` tokens (median of runs). */
  decodeTokensPerSecond: number;
  decodeTokens: number;
  /**
   * The same decode without the ban on end tokens (no `logit_bias`): a plain greedy request, which needs nothing of
   * the distribution but its top token, so llama.cpp draws it itself. Tokens/s (median of runs) over the tokens the
   * model wrote before it ended, at most `decodeTokens` (`plainTokens`, the median).
   */
  plainDecodeTokensPerSecond: number;
  plainTokens: number;
  /** Tokens/s of `streams` requests of `streamTokens` tokens at once, all together, from the start to the last end. */
  streamsTokensPerSecond: number;
  streams: number;
  streamTokens: number;
  /** Whole requests of `tokens` tokens each, tokens/s: constrained, free, and the median of the pairs' ratios. */
  constrained: { tokens: number; constrainedTokensPerSecond: number; freeTokensPerSecond: number; ratio: number };
}

/** node-llama-cpp called directly on the GGUF, paired with Lantern's llama.cpp decode runs. */
export interface DirectFigures {
  decodeTokensPerSecond: number;
  /** Lantern's llama.cpp decode ÷ node-llama-cpp's, median of the pairs (1 = the generation core costs nothing). */
  lanternRatio: number;
  /** The plain greedy decode (no ban: llama.cpp draws the token itself) ÷ node-llama-cpp's, median of the pairs. */
  plainRatio: number;
  /**
   * Whether node-llama-cpp's greedy tokens, up to the first end token it picked (it cannot ban those: its TokenBias
   * ignores end-of-generation tokens, so it decodes on past them), are the text Lantern's reply starts with; and how
   * many tokens that is. What follows costs the same, a forward pass and a greedy pick a token.
   */
  sameGreedyText: boolean;
  tokensBeforeEnd: number;
  /** A `json_schema` request ({@link bookRequest}), paired with node-llama-cpp under the same GBNF. */
  jsonSchema: PairedFigures;
  /** A `logprobs: true` request (no alternatives), paired with node-llama-cpp asked each token's `confidence`. */
  logprobs: PairedFigures;
}

/**
 * One kind of request, Lantern's llama.cpp against node-llama-cpp directly, each decoding the same `tokens` tokens from
 * the same prompt: tokens/s after the first token (medians of the runs) and Lantern's ÷ node-llama-cpp's (the median
 * of the pairs' ratios); `sameText`: whether both wrote the same text in every pair.
 */
export interface PairedFigures {
  tokens: number;
  lanternTokensPerSecond: number;
  directTokensPerSecond: number;
  ratio: number;
  sameText: boolean;
}

export interface EnginesModelFigures {
  transformers: EngineFigures;
  'llama.cpp': EngineFigures;
  direct: DirectFigures;
}

export interface EnginesResults {
  /** llama.cpp's threads (node-llama-cpp's directly too), and the cores of this machine. */
  threads: number;
  cores: number;
  /** Keyed by the names the table shows. */
  models: Record<string, EnginesModelFigures>;
  /** Models not measured, and why. */
  skipped: Record<string, string>;
}

/** A profile serving only `candidate`, under the bench's one ID. */
function engineOn(candidate: ModelCandidate): Engine {
  return createEngine({ profile: { [ID]: { task: 'chat', created: 0, candidates: [candidate] } } });
}

function candidateOf(model: BenchModel, engine: EngineName): ModelCandidate {
  return engine === 'transformers'
    ? { engine: 'transformers', model: model.dir, dtype: 'fp32', device: 'cpu' }
    : { engine: 'llama.cpp', model: path.dirname(model.gguf), file: path.basename(model.gguf) };
}

/** One chat call: its result, and when its call began and each of its text deltas came (ms, performance.now()). */
async function timedChat(engine: Engine, request: ChatRequest) {
  const deltas: number[] = [];
  const started = performance.now();
  const result = await engine.chat(ID, request, {
    onEvent: (event) => event.type === 'delta' && event.text !== '' && deltas.push(performance.now()),
  });
  return { result, started, ended: performance.now(), deltas };
}

/**
 * Tokens/s after the first token, counted from usage rather than from deltas: a delta can carry several tokens (the
 * bytes of one character), and the reply's tokens are what each engine computed. The first delta counts as one.
 */
function decodeRate({ result, deltas }: Awaited<ReturnType<typeof timedChat>>): number {
  if (deltas.length < 2) return NaN;
  return ((result.usage.completionTokens - 1) * 1000) / (deltas.at(-1)! - deltas[0]!);
}

/** Tokens/s of a whole request (prefill and every token). */
const requestRate = ({ result, started, ended }: Awaited<ReturnType<typeof timedChat>>) =>
  (result.usage.completionTokens * 1000) / (ended - started);

/** Greedy, one token, end tokens banned, in a cache scope of its own: a prefill that reuses nothing, then one token. */
let scopes = 0;
const firstTokenRequest = (prompt: string): ChatRequest => ({
  ...endlessEngineRequest(1),
  messages: [{ role: 'user', content: prompt }],
  cacheScope: `engines-bench-${++scopes}`,
});

/** A prompt of `words` that the chat template of the model at `dir` makes `tokens` tokens long, or a word longer. */
export async function promptOf(dir: string, words: readonly string[], tokens: number): Promise<string> {
  const tokenizer = await loadTokenizer(dir);
  const picked: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    picked.push(words[i % words.length]!.trim());
    const content = picked.join(' ');
    if (promptTokens(tokenizer, [{ role: 'user', content }]) >= tokens) return content;
  }
  throw new Error(`${dir}: no prompt of ${tokens} tokens from its words`);
}

/**
 * Text no reply of the plans' lengths completes: 6 strings of 500 characters at least, 3000 characters, more than
 * 128 tokens of these vocabularies write (their longest token has 20 characters). Not one string of 3000: llama.cpp's
 * GBNF parser refuses a repetition whose expansion passes 2000 elements (MAX_REPETITION_THRESHOLD), and a JSON string's
 * character class counts 4, so 500 is the longest `minLength` it takes.
 */
const ENDLESS_TEXT = Object.freeze({
  type: 'array',
  items: { type: 'string', minLength: 500 },
  minItems: 6,
});

/**
 * The constrained request: a JSON object of one field ({@link ENDLESS_TEXT}), so the grammar never lets the reply end
 * and both sides decode exactly `tokens` tokens (checked). Its opening (`{"story":["`) is forced:
 * jump-forward appends it in one pass, as it does for any such reply.
 */
function constrainedRequest(tokens: number): ChatRequest {
  const schema = {
    type: 'object',
    properties: { story: ENDLESS_TEXT },
    required: ['story'],
    additionalProperties: false,
  };
  return { ...endlessEngineRequest(tokens), constraint: { type: 'json', schema } };
}

/**
 * A realistic small schema (a book's record: bounded strings, an integer range, an enum, an array) for the JSON schema
 * pairs, whose last field is {@link ENDLESS_TEXT}: the reply never completes, so both sides decode exactly the
 * plan's tokens (node-llama-cpp cannot ban the end tokens, but the grammar lets none through before the object is
 * whole).
 */
function bookConstraint() {
  const schema = {
    type: 'object',
    properties: {
      title: { type: 'string', maxLength: 60 },
      year: { type: 'integer', minimum: 1450, maximum: 2100 },
      genre: { enum: ['fiction', 'poetry', 'history', 'science'] },
      tags: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 4 },
      chapters: ENDLESS_TEXT,
    },
    required: ['title', 'year', 'genre', 'tags', 'chapters'],
    additionalProperties: false,
  };
  return { type: 'json' as const, schema };
}

/** The JSON schema request: the endless greedy request (end tokens banned) under {@link bookConstraint}. */
const bookRequest = (tokens: number): ChatRequest => ({
  ...endlessEngineRequest(tokens),
  constraint: bookConstraint(),
});

/** The `logprobs: true` request (`top_logprobs` 0: the drawn token's alone, which llama.cpp gives natively). */
const logprobsRequest = (tokens: number): ChatRequest => ({ ...endlessEngineRequest(tokens), logprobs: 0 });

/**
 * node-llama-cpp's runtime for the direct runs, got as node-llama-runtime.ts gets Lantern's (the prebuilt CPU binary,
 * never a build or a GPU probe), once: never disposed, since disposing a runtime disposes the native bindings it
 * shares with Lantern's.
 */
let directLlama: Promise<Llama> | undefined;
const llamaRuntime = () =>
  (directLlama ??= import('node-llama-cpp').then(({ getLlama, LlamaLogLevel }) =>
    getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false }),
  ));

/** node-llama-cpp without Lantern: the GGUF in a context like Lantern's (window, batch, threads), greedy decoding. */
async function directRunner(model: BenchModel) {
  const loaded = await (await llamaRuntime()).loadModel({ modelPath: model.gguf });
  // Lantern's window (contextWindowOf), and its batches of at most 512.
  const contextSize = contextWindowOf({}, loaded.trainContextSize);
  // One sequence, as an app decoding one reply has: Lantern's context has more (one per row, up to 16 here), which
  // does not change one sequence's pace (on the realistic model, 1 and 16 decoded alike within the noise).
  const context = await loaded.createContext({
    contextSize,
    sequences: 1,
    threads: THREADS,
    batchSize: Math.min(512, contextSize),
  });
  const sequence = context.getSequence();
  // The prompt Lantern's decode runs send: the model's chat template around the same message, its special tokens read.
  const tokenizer = await loadTokenizer(model.dir);
  const text = tokenizer.apply_chat_template(ENDLESS_MESSAGES as never, {
    tokenize: false,
    add_generation_prompt: true,
  });
  const prompt = loaded.tokenize(text as string, true);
  const { LlamaGrammarEvaluationState } = await import('node-llama-cpp');
  return {
    /**
     * `tokens` greedy tokens: their times (ms) and the text up to the first end token, with its length in tokens. With
     * `confidence`, node-llama-cpp also gives each token's probability (what Lantern's `logprobs` reads); with
     * `grammar`, it draws under it.
     */
    async run(tokens: number, { confidence = false, grammar }: { confidence?: boolean; grammar?: LlamaGrammar } = {}) {
      await sequence.clearHistory();
      const times: number[] = [];
      const generated: Token[] = [];
      const grammarEvaluationState = grammar && new LlamaGrammarEvaluationState({ model: loaded, grammar });
      // yieldEogToken: an end token is one more token, decoded past, so that the run has `tokens` tokens.
      const options = { temperature: 0, yieldEogToken: true, grammarEvaluationState };
      // evaluateWithMetadata with no metadata is what `evaluate` runs.
      for await (const next of sequence.evaluateWithMetadata(prompt, { confidence }, options)) {
        times.push(performance.now());
        if (confidence && typeof (next as { confidence?: number }).confidence !== 'number') {
          throw new Error('node-llama-cpp gave no confidence for a token');
        }
        generated.push(next.token);
        if (generated.length >= tokens) break;
      }
      const end = generated.findIndex((token) => loaded.isEogToken(token));
      const beforeEnd = end < 0 ? generated : generated.slice(0, end);
      const rate = times.length < 2 ? NaN : ((times.length - 1) * 1000) / (times.at(-1)! - times[0]!);
      return { rate, text: loaded.detokenize(beforeEnd), tokensBeforeEnd: beforeEnd.length };
    },
    async dispose() {
      await context.dispose();
      await loaded.dispose();
    },
  };
}

/**
 * Everything on one model and engine. `direct`, on llama.cpp: node-llama-cpp's runner, whose runs are paired with the
 * decode runs (alternating which goes first, so that neither always follows the other).
 */
async function measureEngine(
  log: (message: string) => void,
  label: string,
  candidate: ModelCandidate,
  prompt: string,
  plan: EnginesPlan,
  direct?: Awaited<ReturnType<typeof directRunner>>,
) {
  log(`${label}: load (${plan.loads} fresh engines)`);
  const loads: number[] = [];
  let engine: Engine | undefined;
  for (let i = 0; i < plan.loads; i++) {
    const started = performance.now();
    engine = engineOn(candidate);
    const { deltas } = await timedChat(engine, firstTokenRequest(prompt));
    loads.push((deltas[0] ?? NaN) - started);
  }
  engine = engine!;

  log(`${label}: first token`);
  const firsts: number[] = [];
  let promptLength = NaN;
  const [, firstRuns] = plan.firstToken;
  for (let i = 0; i < firstRuns; i++) {
    const { started, deltas, result } = await timedChat(engine, firstTokenRequest(prompt));
    firsts.push((deltas[0] ?? NaN) - started);
    promptLength = result.usage.promptTokens;
  }

  const [tokens, runs] = plan.decode;
  log(`${label}: decode, ${tokens} tokens${direct ? ', paired with node-llama-cpp directly' : ''}`);
  await timedChat(engine, endlessEngineRequest(8)); // warm up the decode path
  await direct?.run(8);
  const rates: number[] = [];
  const plainRates: number[] = [];
  const plainTokens: number[] = [];
  const pairs: {
    lantern: number;
    plain: number;
    direct: number;
    text: string;
    directText: string;
    tokensBeforeEnd: number;
  }[] = [];
  const plainRequest = () => ({ ...endlessEngineRequest(tokens), logitBias: undefined });
  for (let i = 0; i < runs; i++) {
    const lantern = () => timedChat(engine, endlessEngineRequest(tokens));
    const plain = async () => {
      const run = await timedChat(engine, plainRequest());
      plainRates.push(decodeRate(run));
      plainTokens.push(run.result.usage.completionTokens);
      return decodeRate(run);
    };
    if (!direct) {
      rates.push(decodeRate(await lantern()));
      await plain();
      continue;
    }
    const directFirst = i % 2 === 1;
    const before = directFirst ? await direct.run(tokens) : undefined;
    const run = await lantern();
    const plainRate = await plain();
    const other = before ?? (await direct.run(tokens));
    rates.push(decodeRate(run));
    pairs.push({
      lantern: decodeRate(run),
      plain: plainRate,
      direct: other.rate,
      text: run.result.choices[0]!.text,
      directText: other.text,
      tokensBeforeEnd: other.tokensBeforeEnd,
    });
  }

  // The requests with per-token work, each paired with node-llama-cpp doing the same work (decode's tokens and runs).
  let jsonSchema: PairedFigures | undefined;
  let logprobs: PairedFigures | undefined;
  if (direct) {
    log(`${label}: a JSON schema request, ${tokens} tokens, paired with node-llama-cpp under the same GBNF`);
    // The GBNF Lantern's llama.cpp engine runs natively for this constraint (llama-cpp-loaders.ts' nativeGrammar, no
    // thinking), compiled by node-llama-cpp for the direct side: the grammar work is the same on both.
    const gbnf = await llamaGrammar(bookConstraint());
    if (gbnf === undefined) throw new Error(`${label}: the book schema has no GBNF: it would not run natively`);
    const grammar = await (await llamaRuntime()).createGrammar({ grammar: gbnf });
    jsonSchema = await pairedRuns(label, engine, bookRequest(tokens), () => direct.run(tokens, { grammar }), runs);
    log(`${label}: a logprobs request, ${tokens} tokens, paired with node-llama-cpp asked each token's confidence`);
    logprobs = await pairedRuns(
      label,
      engine,
      logprobsRequest(tokens),
      () => direct.run(tokens, { confidence: true }),
      runs,
    );
  }

  const { streams, tokens: streamTokens, rounds } = plan.streams;
  log(`${label}: ${streams} streams of ${streamTokens} tokens at once`);
  const aggregate: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    const results: ChatResult[] = await Promise.all(
      Array.from({ length: streams }, () => engine.chat(ID, endlessEngineRequest(streamTokens))),
    );
    const ms = performance.now() - started;
    aggregate.push((results.reduce((n, r) => n + r.usage.completionTokens, 0) * 1000) / ms);
  }

  const [constrainedTokens, constrainedPairs] = plan.constrained;
  log(`${label}: constrained against free, ${constrainedTokens} tokens`);
  const check = (side: Awaited<ReturnType<typeof timedChat>>) => {
    const { completionTokens } = side.result.usage;
    if (completionTokens !== constrainedTokens) {
      throw new Error(`${label}: a reply of ${completionTokens} tokens where the plan has ${constrainedTokens}`);
    }
    return side;
  };
  const constrainedSide = async () => check(await timedChat(engine, constrainedRequest(constrainedTokens)));
  const freeSide = async () => check(await timedChat(engine, endlessEngineRequest(constrainedTokens)));
  await constrainedSide(); // compiles the grammar for this vocabulary (cached from then on)
  await freeSide();
  const constrained: number[] = [];
  const free: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < constrainedPairs; i++) {
    const constrainedFirst = i % 2 === 0;
    const first = await (constrainedFirst ? constrainedSide() : freeSide());
    const second = await (constrainedFirst ? freeSide() : constrainedSide());
    const [c, f] = constrainedFirst ? [first, second] : [second, first];
    constrained.push(requestRate(c));
    free.push(requestRate(f));
    ratios.push(requestRate(c) / requestRate(f));
  }

  const figures: EngineFigures = {
    loadMs: round(median(loads), 0),
    firstTokenMs: round(median(firsts)),
    promptTokens: promptLength,
    decodeTokensPerSecond: round(median(rates), 1),
    decodeTokens: tokens,
    plainDecodeTokensPerSecond: round(median(plainRates), 1),
    plainTokens: median(plainTokens),
    streamsTokensPerSecond: round(median(aggregate), 1),
    streams,
    streamTokens,
    constrained: {
      tokens: constrainedTokens,
      constrainedTokensPerSecond: round(median(constrained), 1),
      freeTokensPerSecond: round(median(free), 1),
      ratio: round(median(ratios), 3),
    },
  };
  const directFigures: DirectFigures | undefined = direct && {
    decodeTokensPerSecond: round(median(pairs.map((p) => p.direct)), 1),
    lanternRatio: round(median(pairs.map((p) => p.lantern / p.direct)), 3),
    plainRatio: round(median(pairs.map((p) => p.plain / p.direct)), 3),
    sameGreedyText: pairs.every((p) => p.text.startsWith(p.directText)),
    tokensBeforeEnd: pairs[0]?.tokensBeforeEnd ?? NaN,
    jsonSchema: jsonSchema!,
    logprobs: logprobs!,
  };
  return { figures, direct: directFigures };
}

/**
 * `runs` pairs of one request to Lantern's engine and one of node-llama-cpp's runs doing the same work, alternating
 * which goes first, after one of each unmeasured (Lantern compiles and caches its grammar then). Each of Lantern's
 * replies must have exactly `request.maxTokens` tokens, with a log probability each where asked.
 */
async function pairedRuns(
  label: string,
  engine: Engine,
  request: ChatRequest,
  direct: () => Promise<{ rate: number; text: string; tokensBeforeEnd: number }>,
  runs: number,
): Promise<PairedFigures> {
  const tokens = request.maxTokens!;
  const lantern = async () => {
    const run = await timedChat(engine, request);
    const { completionTokens } = run.result.usage;
    if (completionTokens !== tokens) throw new Error(`${label}: a reply of ${completionTokens} tokens, not ${tokens}`);
    const logprobs = run.result.choices[0]!.logprobs?.length;
    if (request.logprobs !== undefined && logprobs !== tokens) {
      throw new Error(`${label}: ${logprobs ?? 'no'} log probabilities for ${tokens} tokens`);
    }
    return run;
  };
  await lantern();
  await direct();
  const pairs: { lantern: number; direct: number; same: boolean }[] = [];
  for (let i = 0; i < runs; i++) {
    const directFirst = i % 2 === 1;
    const before = directFirst ? await direct() : undefined;
    const run = await lantern();
    const other = before ?? (await direct());
    pairs.push({
      lantern: decodeRate(run),
      direct: other.rate,
      // The whole text where node-llama-cpp wrote no end token; else up to the one it wrote (see DirectFigures).
      same:
        other.tokensBeforeEnd === tokens
          ? run.result.choices[0]!.text === other.text
          : run.result.choices[0]!.text.startsWith(other.text),
    });
  }
  return {
    tokens,
    lanternTokensPerSecond: round(median(pairs.map((p) => p.lantern)), 1),
    directTokensPerSecond: round(median(pairs.map((p) => p.direct)), 1),
    ratio: round(median(pairs.map((p) => p.lantern / p.direct)), 3),
    sameText: pairs.every((p) => p.same),
  };
}

/** Why this machine's Python cannot run the converter (numpy or onnx missing), or undefined when it can. */
function missingPython(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import numpy, onnx'], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (probe.status === 0) return undefined;
  const said = probe.error?.message ?? probe.stderr?.toString().trim().split('\n').at(-1) ?? `exit ${probe.status}`;
  return `${PYTHON} cannot import numpy and onnx (apt-get install python3-numpy python3-onnx): ${said}`;
}

/**
 * The GGUF of the model at `dir`, at `out`: converted unless it is there and newer than the model's ONNX export (a
 * regenerated model gets a new one). Written beside under another name, then renamed: a cut conversion leaves no file
 * that looks whole. Returns why not when this machine's Python cannot convert; a converter that fails with its modules
 * installed is a broken bench: that throws.
 */
function prepareGguf(log: (message: string) => void, dir: string, out: string): string | undefined {
  const onnx = `${dir}/onnx/model.onnx`;
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(onnx).mtimeMs) return undefined;
  const missing = missingPython();
  if (missing) return missing;
  log(`converting ${dir} to ${out} (once; seconds)`);
  mkdirSync(path.dirname(out), { recursive: true });
  const partial = `${out}.partial`;
  const run = spawnSync(PYTHON, [CONVERTER, dir, partial], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (run.status !== 0 || !existsSync(partial)) {
    rmSync(partial, { force: true });
    const reason = run.error?.message ?? run.stderr?.toString().trim() ?? `exit ${run.status}`;
    throw new Error(`scripts/fixtures/gguf_convert.py failed on ${dir} (its Python modules are installed): ${reason}`);
  }
  renameSync(partial, out);
  return undefined;
}

/** The models this machine has, in order (converting their GGUFs where needed), and those it has not, with why. */
export function benchModels(log: (message: string) => void, smoke: boolean) {
  const models: BenchModel[] = [];
  const skipped: Record<string, string> = {};
  if (HAS_STORIES_260K) {
    const gguf = `${STORIES_GGUF_DIR}/stories260K-f32.gguf`;
    const why = prepareGguf(log, STORIES_260K, gguf);
    if (why) skipped.stories260K = why;
    else models.push({ name: 'stories260K', dir: STORIES_260K, gguf, words: ENGLISH });
  } else {
    skipped.stories260K = `${STORIES_260K} not found`;
  }
  const realisticName = smoke ? 'realistic (smoke variant)' : 'realistic';
  const { model: realistic, skipped: noRealistic } = prepareRealisticModel(log, { smoke });
  if (realistic) {
    const gguf = `${realistic.dir}/gguf/${path.basename(realistic.dir)}-f32.gguf`;
    const why = prepareGguf(log, realistic.dir, gguf);
    if (why) skipped[realisticName] = why;
    else models.push({ name: realisticName, dir: realistic.dir, gguf, words: realistic.words });
  } else {
    skipped[realisticName] = noRealistic!;
  }
  const tinyChat = `${BUNDLED_MODELS}/tiny-chat`;
  const tinyGguf = `${tinyChat}/gguf/tiny-chat-f32.gguf`;
  if (!existsSync(tinyGguf))
    throw new Error(`${tinyGguf} is missing: npm run fixtures writes it (generate.py's gguf step)`);
  models.push({ name: 'bundled tiny-chat', dir: tinyChat, gguf: tinyGguf, words: ENGLISH });
  return { models, skipped };
}

/** The plan with its replies cut to what the window of the model at `dir` leaves after the prompt (said in the log). */
export async function fitPlan(
  log: (message: string) => void,
  plan: EnginesPlan,
  model: BenchModel,
): Promise<EnginesPlan> {
  const room = await replyRoomAt(model.dir, ENDLESS_MESSAGES);
  const cut = (tokens: number) => {
    if (tokens > room) log(`${model.name}: ${tokens} tokens cut to the ${room} its window leaves after the prompt`);
    return Math.min(tokens, room);
  };
  return {
    ...plan,
    decode: [cut(plan.decode[0]), plan.decode[1]],
    streams: { ...plan.streams, tokens: cut(plan.streams.tokens) },
    constrained: [cut(plan.constrained[0]), plan.constrained[1]],
  };
}

export async function enginesBench(
  log: (message: string) => void,
  plan: EnginesPlan = ENGINES_PLAN,
  smoke = false,
): Promise<EnginesResults> {
  const { models, skipped } = benchModels(log, smoke);
  for (const [name, why] of Object.entries(skipped)) log(`${name} skipped: ${why}`);
  // Each runtime starts once a process (onnxruntime's, node-llama-cpp's binary): on the bundled model first,
  // unmeasured, so that no model's load carries it.
  log('starting both runtimes (unmeasured)');
  const tiny = models.at(-1)!;
  for (const engine of ENGINES) await engineOn(candidateOf(tiny, engine)).chat(ID, endlessEngineRequest(1));
  const results: Record<string, EnginesModelFigures> = {};
  for (const model of models) {
    const fitted = await fitPlan(log, plan, model);
    const prompt = await promptOf(model.dir, model.words, plan.firstToken[0]);
    const transformers = await measureEngine(
      log,
      `${model.name}, transformers.js`,
      candidateOf(model, 'transformers'),
      prompt,
      fitted,
    );
    const direct = await directRunner(model);
    try {
      const llamaCpp = await measureEngine(
        log,
        `${model.name}, llama.cpp`,
        candidateOf(model, 'llama.cpp'),
        prompt,
        fitted,
        direct,
      );
      results[model.name] = {
        transformers: transformers.figures,
        'llama.cpp': llamaCpp.figures,
        direct: llamaCpp.direct!,
      };
    } finally {
      await direct.dispose();
    }
  }
  return { threads: THREADS, cores: os.availableParallelism(), models: results, skipped };
}

/** The section's table: for each model, a row per engine, node-llama-cpp's own, and llama.cpp ÷ transformers.js. */
export function enginesTable(results: EnginesResults): string {
  const rows: string[] = [];
  const cells = (...values: (string | number)[]) => `| ${values.join(' | ')} |`;
  for (const [name, m] of Object.entries(results.models)) {
    const t = m.transformers;
    const l = m['llama.cpp'];
    const row = (engine: string, f: EngineFigures, paired: (string | number)[]) =>
      cells(
        name,
        engine,
        f.loadMs,
        `${f.firstTokenMs} (${f.promptTokens})`,
        f.decodeTokensPerSecond,
        `${f.plainDecodeTokensPerSecond} (${f.plainTokens})`,
        f.streamsTokensPerSecond,
        `${f.constrained.ratio} (${f.constrained.constrainedTokensPerSecond} ÷ ${f.constrained.freeTokensPerSecond})`,
        ...paired,
      );
    const { jsonSchema, logprobs } = m.direct;
    rows.push(
      row('transformers.js (cpu, fp32)', t, ['–', '–']),
      row('llama.cpp (Lantern)', l, [jsonSchema.lanternTokensPerSecond, logprobs.lanternTokensPerSecond]),
    );
    const versus = (p: PairedFigures) =>
      `${p.directTokensPerSecond}; Lantern ÷ direct ${p.ratio} (same text: ${p.sameText ? '✓' : '✗'})`;
    rows.push(
      cells(
        name,
        'node-llama-cpp directly (no Lantern)',
        '–',
        '–',
        `${m.direct.decodeTokensPerSecond}; Lantern ÷ direct ${m.direct.lanternRatio} ` +
          `(same greedy text: ${m.direct.sameGreedyText ? '✓' : '✗'}, ${m.direct.tokensBeforeEnd} tokens)`,
        `Lantern ÷ direct ${m.direct.plainRatio}`,
        '–',
        '–',
        versus(jsonSchema),
        versus(logprobs),
      ),
    );
    const x = (a: number, b: number) => `${round(a / b, 2)}×`;
    rows.push(
      cells(
        name,
        'llama.cpp ÷ transformers.js (ms: under 1× is faster; tokens/s: over 1×)',
        x(l.loadMs, t.loadMs),
        x(l.firstTokenMs, t.firstTokenMs),
        x(l.decodeTokensPerSecond, t.decodeTokensPerSecond),
        x(l.plainDecodeTokensPerSecond, t.plainDecodeTokensPerSecond),
        x(l.streamsTokensPerSecond, t.streamsTokensPerSecond),
        '–',
        '–',
        '–',
      ),
    );
  }
  const first = Object.values(results.models)[0]?.transformers;
  const decodeTokens = first ? ` (${first.decodeTokens} tokens)` : '';
  const streams = first ? `${first.streams} streams of ${first.streamTokens} tokens` : 'Streams';
  const skipped = Object.entries(results.skipped).map(([name, why]) => `\n\n${name} skipped: ${why}`);
  return (
    [
      `| Model | Engine | Load → first token, ms | First token, ms p50 (prompt tokens) | ` +
        `Decode, end tokens banned (logit_bias), tokens/s${decodeTokens} | ` +
        'Decode, plain greedy, tokens/s (tokens before the end) | ' +
        `${streams}, tokens/s together | Constrained ÷ free, whole requests (tokens/s) | ` +
        `JSON schema (a book's record), tokens/s${decodeTokens} | \`logprobs: true\`, tokens/s${decodeTokens} |`,
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
    ].join('\n') + skipped.join('')
  );
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const smoke = process.argv.includes('--smoke');
  const results = await enginesBench(console.log, smoke ? ENGINES_SMOKE_PLAN : ENGINES_PLAN, smoke);
  console.log(JSON.stringify(results, null, 2));
  console.log(enginesTable(results));
}
