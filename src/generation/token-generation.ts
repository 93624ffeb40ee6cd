import {
  EngineError,
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type GeneratedTokenLogprob,
  type OutputConstraint,
  thoughtBudget,
} from '../engine-interface/index.ts';
import { invalidOutput } from '../grammar/output-constraint.ts';
import type { ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import type { ToolPrompt } from '../tools/tool-prompt.ts';
import { ChoiceSet } from './choice-set.ts';
import { rowSeed, type DecodeJob } from './decode-loop.ts';
import type { GenerationTokenizer } from './generation-tokenizer.ts';
import { nativeLogprob, tokenLogprob, type TokenText } from './logprobs.ts';
import { DRAFT_LENGTHS, type Drafter } from './draft-model.ts';
import { PromptLookup } from './prompt-lookup.ts';
import { ProposalLength } from './proposal-length.ts';
import { adjustLogits, argmax, logitBiasOf, sampleToken, type SamplingParams } from './sampling.ts';
import { executesPlan, type NativeSampling, type NativeStep, type SamplingPlan } from './sampling-plan.ts';
import { seed31, seededRandom } from './seeded-random.ts';
import { THOUGHT_END } from './thought-splitter.ts';

/** A template with a thinking mode: Qwen3's switch, or the `<think>` tag that DeepSeek-R1's and others write. */
const THINKING_TEMPLATE = /enable_thinking|<think>/;

/** Whether a model with this chat template has a thinking mode: it switches it (`enable_thinking`) or writes `<think>`. */
export function templateThinks(template: string | undefined): boolean {
  return template !== undefined && THINKING_TEMPLATE.test(template);
}

/** Whether a request to a model (with a thinking mode or not) has it think. */
export function requestThinks(modelThinks: boolean, request: ChatRequest): boolean {
  // A raw prompt has no template to think in.
  return modelThinks && request.thinking === true && request.prompt === undefined;
}

/**
 * Refuses a `logit_bias` that names a token the model does not have, as the OpenAI API does ("Invalid key in
 * 'logit_bias'"): an id past the vocabulary biased nothing, or (past 2³¹, read as a 32-bit id) another token, or, on
 * a GPU kernel that indexes by it, memory that is not the logits'.
 */
export function checkLogitBias(bias: Readonly<Record<number, number>>, vocabularySize: number): void {
  for (const id of Object.keys(bias)) {
    if (Number(id) < vocabularySize) continue;
    throw new EngineError(
      'invalid_request',
      `Invalid key in 'logit_bias': ${id}. This model's token ids run from 0 to ${vocabularySize - 1}.`,
      { param: 'logit_bias' },
    );
  }
}

/**
 * The most tokens each choice may generate, for a prompt of `promptTokens` in a context window of `contextLength`;
 * refuses an empty prompt, and one whose reply (the tokens asked for, or one) would not fit (`context_length_exceeded`,
 * worded as the OpenAI API words it).
 */
export function maxNewTokensFor(request: ChatRequest, promptTokens: number, contextLength: number): number {
  // A prompt that is no token at all (blank text on a tokenizer that adds no BOS) gives the model nothing to continue.
  if (promptTokens === 0) throw new EngineError('invalid_request', 'The prompt is empty.', { param: 'prompt' });
  const room = contextLength - promptTokens;
  if (room < 1 || (request.maxTokens ?? 1) > room) {
    const asked = request.maxTokens ?? 1;
    const what = request.prompt !== undefined ? 'prompt' : 'messages';
    throw new EngineError(
      'context_length_exceeded',
      `This model's maximum context length is ${contextLength} tokens. However, you requested ` +
        `${promptTokens + asked} tokens (${promptTokens} in the ${what}, ${asked} in the completion). ` +
        `Please reduce the length of the ${what} or completion.`,
      { param: what },
    );
  }
  return request.maxTokens ?? Math.min(room, request.defaultMaxTokens ?? room);
}

/** How one request is generated, beyond the request itself. */
export interface GenerationOptions {
  /** The prompt's length in tokens (positions that are not tokens, an image's, included). */
  promptTokens: number;
  /** The context window: prompt and completion together, in tokens. */
  contextLength: number;
  /** Whether the model thinks first (see {@link requestThinks}): its thought is reported apart and counted. */
  thinking: boolean;
  /** How to read calls in the reply (see `toolPrompt`); absent when it may hold none. */
  calls?: ToolPrompt['calls'];
  /** The model's syntax of calls, which a tool constraint's grammar writes. */
  syntax: ToolCallSyntax;
  /** Append the tokens a constraint forces in one pass (jump-forward). */
  jumpForward: boolean;
  /** Propose tokens from the prompt and the reply so far (prompt lookup, see PromptLookup) where the engine checks them. */
  promptLookup: boolean;
  /**
   * The model's draft model, where it has one (see DraftModel): it proposes where prompt lookup has nothing, for a row
   * that the engine decodes alone.
   */
  draft?: Drafter | undefined;
  /**
   * What of a row's sampling plan the engine's batch draws itself (DecodeBatch.executes): a request whose plan it
   * covers whole runs natively, its tokens drawn in the engine's runtime; any other on the logits path.
   */
  executes?: NativeSampling | undefined;
  /**
   * The constraint as llama.cpp GBNF (root rule `root`), for an engine that constrains natively; undefined where it
   * has no such grammar (the constraint then runs on the logits path, with Lantern's grammar mask).
   */
  nativeGrammar?:
    | ((constraint: OutputConstraint, syntax: ToolCallSyntax, thinking: boolean) => Promise<string | undefined>)
    | undefined;
  signal?: AbortSignal | undefined;
  /** Receives each event as it happens (after the result has it). */
  onEvent?: ((event: ChatEvent) => void) | undefined;
}

/** What the engine's decode loop calls for one request: a row per choice (the engine adds the prompt and the rest). */
export type GenerationSteps = Pick<
  DecodeJob,
  'rows' | 'maxNewTokens' | 'next' | 'done' | 'propose' | 'native' | 'checkpoints'
>;

/**
 * Generates `request`'s choices, for any engine whose logits Lantern sees: the engine encodes the prompt and runs the
 * forward passes (`run`, its decode loop, calls the steps until every row is done, and resolves with how many prompt
 * tokens came from a cache); this checks the prompt fits, compiles the constraint's grammars, decides each row's
 * tokens and returns the result with its usage.
 *
 * Each choice is a row: its logits get the request's penalties and `logit_bias`, then its grammar mask (after the
 * penalties, so that none can lift a masked token), then the draw (greedy is the argmax; otherwise a seeded draw under
 * temperature and top_p); each token goes through the choice's pipeline (stop sequences, calls, logprobs, the end
 * checked against the constraint). Where a constraint allows exactly one continuation, its tokens are appended at once
 * and fed in one pass (jump-forward, see {@link forcedTokens}). A thought that reaches its budget (`thoughtBudget`: a
 * share of the reply's tokens by reasoning effort) is closed there: its end tag is written in the model's place, one
 * token a step, and the model answers after it, as it would after a thought of its own.
 *
 * Where the engine draws a row's whole sampling plan itself (`options.executes`, see {@link samplingPlans}), that row
 * is drawn there instead, and only its tokens come back; the choice pipeline is the same.
 */
export async function generateTokens(
  tokenizer: GenerationTokenizer,
  request: ChatRequest,
  options: GenerationOptions,
  run: (steps: GenerationSteps) => Promise<{ cachedPromptTokens: number }>,
): Promise<ChatResult> {
  const { promptTokens, thinking, signal } = options;
  const maxNewTokens = maxNewTokensFor(request, promptTokens, options.contextLength);
  if (request.logitBias) checkLogitBias(request.logitBias, tokenizer.vocabulary().strings.length);
  const { constraint } = request;
  // All of the request's seed in 31 bits (at random without one): native draws take it, choices mix theirs from it.
  const seed = seed31(request.seed);
  const sampling: SamplingParams = {
    temperature: request.temperature,
    topP: request.topP,
    presencePenalty: request.presencePenalty,
    frequencyPenalty: request.frequencyPenalty,
    logitBias: request.logitBias && logitBiasOf(request.logitBias),
  };
  const plans = await samplingPlans(request, sampling, seed, options);
  const grammars =
    constraint && !plans
      ? await (await tokenizer.grammars()).matchers(constraint, request.n, options.syntax, thinking)
      : undefined;
  const logprobs = request.logprobs === undefined ? undefined : { top: request.logprobs, words: tokenizer.tokenText() };
  const set = new ChoiceSet(request, request.n, {
    thinking,
    calls: options.calls,
    decode: (ids) => tokenizer.decode(ids),
    endTokens: tokenizer.eos,
    maxTokens: maxNewTokens,
    onEvent: options.onEvent,
  });
  const thoughtEnd = thinking ? thoughtEndTokens(tokenizer) : [];
  // Room for the end tag inside the budget; a tokenizer that cannot write the tag leaves thoughts unbounded.
  const thoughtLimit =
    thoughtEnd.length > 0 ? thoughtBudget(request.reasoningEffort, maxNewTokens) - thoughtEnd.length : Infinity;
  const prediction = options.promptLookup ? predictionTokens(tokenizer, request.prediction) : [];
  const choices = Array.from({ length: request.n }, (_, index) => ({
    pipeline: set.pipelines[index]!,
    counts: new Map<number, number>(),
    /**
     * Its own draws, one a sampled token: what a choice samples under a seed does not depend on what was proposed, nor
     * on how the other choices' steps fell beside it. The first draws from the request's seed (one choice samples as a
     * request of one does), each other from one mixed as a native draw's row is.
     */
    random: seededRandom(index === 0 ? request.seed : rowSeed(seed, index)),
    grammar: grammars?.[index],
    /** The tokens generated so far (jump-forward retokenizes the last of them). */
    tokens: [] as number[],
    lookup: options.promptLookup ? new PromptLookup(prediction) : undefined,
    /** The draft model's proposals' lengths and outcomes for this row. */
    drafted: options.draft ? new ProposalLength(DRAFT_LENGTHS) : undefined,
    /** Who made the proposal being checked. */
    proposer: undefined as PromptLookup | ProposalLength | undefined,
    /** Its step where the engine draws its tokens itself (its plan and what it generated), else undefined. */
    native: undefined as NativeStep | undefined,
    /** The tokens of the thought's end tag still to write, once its budget is spent (undefined before). */
    closing: undefined as number[] | undefined,
  }));
  const accept = (index: number, token: number, logprob: GeneratedTokenLogprob | undefined) => {
    const choice = choices[index]!;
    if (choice.grammar && !choice.grammar.accept(token)) {
      throw invalidOutput(index, `the grammar engine rejected token ${token} that its own mask allowed`);
    }
    choice.counts.set(token, (choice.counts.get(token) ?? 0) + 1);
    choice.tokens.push(token);
    choice.pipeline.pushToken(token, logprob);
  };

  const greedy = sampling.temperature === 0;
  if (plans) choices.forEach((choice, index) => (choice.native = { plan: plans[index]!, generated: choice.tokens }));
  let scratch: Float32Array | undefined;
  const steps: GenerationSteps = {
    rows: request.n,
    maxNewTokens,
    next: (row, logits, mayJump, proposed) => {
      const choice = choices[row]!;
      const { pipeline } = choice;
      if (!choice.closing && pipeline.thinking && pipeline.reasoningTokens >= thoughtLimit)
        choice.closing = [...thoughtEnd];
      if (choice.closing?.length && pipeline.thinking) {
        // In the draw's place, native or not (a native grammar follows the tokens generated: see NativeStep).
        const token = choice.closing.shift()!;
        accept(row, token, logprobs && forcedLogprob(token, logprobs.top, logprobs.words));
        return [token];
      }
      if (!(logits instanceof Float32Array)) {
        // Drawn by the engine under the row's whole plan (a native grammar's too: no jump-forward without Lantern's
        // own matcher, which a native row does not compile).
        if (proposed !== undefined && logits.token === proposed) choice.proposer?.accept();
        accept(row, logits.token, logprobs && nativeLogprob(logits, logprobs.top, logprobs.words));
        return [logits.token];
      }
      adjustLogits(logits, sampling, choice.counts);
      if (choice.grammar && !choice.grammar.apply(logits)) {
        throw new EngineError('invalid_output', 'The grammar allows no next token: the constrained output is stuck.');
      }
      scratch ??= new Float32Array(logits.length);
      // A proposed token is checked by the draw itself, which is the one made without a proposal: it is taken where
      // the model draws it. Proposals are single tokens (prompt lookup, a greedy draft), for which this is speculative
      // sampling's rule (accepted with its probability, else a draw from the rest) with one uniform draw, so that
      // speculation changes no draw.
      const token = greedy ? argmax(logits) : sampleToken(logits, sampling, choice.random, scratch);
      if (proposed !== undefined && token === proposed) choice.proposer?.accept();
      accept(row, token, logprobs && tokenLogprob(logits, token, sampling.temperature, logprobs.top, logprobs.words));
      const tokens = [token];
      if (!mayJump || !options.jumpForward || !choice.grammar) return tokens;
      for (const forced of forcedTokens(tokenizer, choice.grammar, choice.tokens)) {
        if (choice.pipeline.finishReason) break;
        accept(row, forced, logprobs && forcedLogprob(forced, logprobs.top, logprobs.words));
        tokens.push(forced);
      }
      return tokens;
    },
    done: (row) => choices[row]!.pipeline.finishReason !== null,
    ...(plans && { native: (row: number) => choices[row]!.native }),
    ...((options.promptLookup || options.draft) && {
      propose: (row: number, context: readonly number[], limit: number, alone: boolean) => {
        const choice = choices[row]!;
        // A native grammar's state takes every token the engine draws: one drawn for a rejected proposal could not be
        // taken back out of it.
        if (choice.native?.plan.grammar !== undefined) return [];
        const looked = choice.lookup?.propose(context, promptTokens, limit) ?? [];
        choice.proposer = choice.lookup;
        const { draft } = options;
        if (looked.length > 0 || !draft || !alone) return looked;
        const length = choice.drafted!.next(limit);
        if (length === 0) return looked;
        return draft.propose(choice, context, length, request.cacheScope).then((drafted) => {
          choice.drafted!.made(drafted.length);
          choice.proposer = choice.drafted;
          return drafted;
        });
      },
    }),
  };
  let cachedPromptTokens: number;
  try {
    ({ cachedPromptTokens } = await run(steps));
  } catch (error) {
    throw EngineError.from(error);
  } finally {
    grammars?.forEach((g) => g.dispose());
    if (options.draft) for (const choice of choices) await options.draft.release(choice);
  }
  throwIfAborted(signal);
  choices.forEach((choice) => choice.pipeline.end('length'));
  const proposers = choices.flatMap((c) => [c.lookup, c.drafted]);
  const proposed = proposers.reduce((sum, p) => sum + (p?.proposed ?? 0), 0);
  const accepted = proposers.reduce((sum, p) => sum + (p?.accepted ?? 0), 0);

  return set.result(
    { promptTokens, cachedPromptTokens },
    proposed > 0 ? { acceptedPredictionTokens: accepted, rejectedPredictionTokens: proposed - accepted } : {},
  );
}

/**
 * Each row's sampling plan, where the engine draws the whole of it itself (`options.executes`); undefined where any
 * part of it needs the logits path. Sampled choices of a request of several share the prompt's first distribution but
 * not its draw, which the engine makes once at the prefill: they stay on the logits path. A constraint runs natively
 * only as GBNF the engine takes (`options.nativeGrammar`), asked for only when the rest of the plan runs natively.
 */
async function samplingPlans(
  request: ChatRequest,
  sampling: SamplingParams,
  seed: number,
  options: GenerationOptions,
): Promise<SamplingPlan[] | undefined> {
  const { executes } = options;
  if (!executes || (request.temperature > 0 && request.n > 1)) return undefined;
  const plan: SamplingPlan = { ...sampling, seed, logprobs: request.logprobs };
  if (!executesPlan(executes, plan)) return undefined;
  let grammar: string | undefined;
  if (request.constraint) {
    if (!executes.grammar || !options.nativeGrammar) return undefined;
    grammar = await options.nativeGrammar(request.constraint, options.syntax, options.thinking);
    if (grammar === undefined) return undefined;
  }
  return Array.from({ length: request.n }, (_, row) => ({ ...plan, seed: rowSeed(seed, row), grammar }));
}

/** The tokens of a thought's end tag: the one token that spells it (Qwen3's, DeepSeek-R1's), else its text's tokens. */
function thoughtEndTokens(tokenizer: GenerationTokenizer): number[] {
  const known = thoughtEnds.get(tokenizer);
  if (known) return known;
  const tag = new TextEncoder().encode(THOUGHT_END);
  const id = tokenizer
    .vocabulary()
    .bytes.findIndex((bytes) => bytes.length === tag.length && bytes.every((byte, i) => byte === tag[i]));
  // A tokenizer that cannot encode here (wllama's, in its own worker) and has no such token leaves the thought unbounded.
  const tokens = id >= 0 ? [id] : (tokenizer.encode?.(THOUGHT_END) ?? []);
  thoughtEnds.set(tokenizer, tokens);
  return tokens;
}

const thoughtEnds = new WeakMap<GenerationTokenizer, number[]>();

/**
 * The tokens of the client's prediction (OpenAI's Predicted Outputs), which prompt lookup searches first; none where
 * this tokenizer cannot encode in the step (wllama's tokenizes in its own worker).
 */
function predictionTokens(tokenizer: GenerationTokenizer, prediction: string | undefined): number[] {
  return (prediction && tokenizer.encode?.(prediction)) || [];
}

/**
 * Jump-forward: the tokens of the text a choice's grammar forces next (XGrammar's jump-forward string), tokenized as
 * the tokenizer itself would write them in context, which is how the model saw such text in training. Both ends are
 * retokenized. The left, as SGLang does: the last few generated tokens' text and the forced text are tokenized
 * together, and the forced tokens start where that tokenization reaches the end of the generated text; when a token
 * spans that point (the model split the text where the tokenizer would not), nothing is forced this step, the model
 * takes one more token and the next step tries again. The right: what follows the forced text can merge with its
 * last tokens (`": {` then `"` is `":` then ` {"`), so only the tokens that stay the same whatever character comes
 * next (each of {@link NEXT_CHARACTERS}) are forced; the rest is left to the model. Nothing is forced past a special
 * token.
 */
export function forcedTokens(
  tokenizer: Pick<GenerationTokenizer, 'encode' | 'vocabulary'>,
  grammar: { forcedText(): string },
  generated: readonly number[],
): number[] {
  const { encode } = tokenizer;
  const text = grammar.forcedText();
  if (!text || !encode) return [];
  const vocabulary = tokenizer.vocabulary();
  const tail: number[] = [];
  for (let i = generated.length - 1; i >= 0 && tail.length < JUMP_TAIL_TOKENS; i--) {
    if (vocabulary.special.has(generated[i]!)) break;
    tail.unshift(generated[i]!);
  }
  const tailBytes = tail.map((t) => vocabulary.bytes[t] ?? NO_BYTES);
  const tailLength = tailBytes.reduce((sum, bytes) => sum + bytes.length, 0);
  let whole: string;
  try {
    const decoder = new TextDecoder('utf-8', { fatal: true });
    whole = tailBytes.map((bytes) => decoder.decode(bytes, { stream: true })).join('') + decoder.decode() + text;
  } catch {
    return []; // the tail ends inside a character
  }
  // A SentencePiece tokenizer puts its own space before the text: the text's first space is that one.
  if (vocabulary.prependSpace) {
    if (!whole.startsWith(' ')) return [];
    whole = whole.slice(1);
  }
  const ids = encode(whole);
  // The tokenization must spell the text byte for byte, with a token boundary where the tail ends: forcing starts
  // at the token after it.
  const target = new TextEncoder().encode(vocabulary.prependSpace ? ` ${whole}` : whole);
  let at = 0;
  let first = -1;
  for (const [i, id] of ids.entries()) {
    if (first < 0 && at === tailLength) first = i;
    const bytes = vocabulary.bytes[id] ?? NO_BYTES;
    if (bytes.some((byte, j) => byte !== target[at + j])) return [];
    at += bytes.length;
  }
  if (at !== target.length || first < 0) return [];
  let stable = ids.length;
  for (const next of NEXT_CHARACTERS) {
    const extended = encode(whole + next);
    let same = first;
    while (same < stable && extended[same] === ids[same]) same++;
    stable = same;
    if (stable === first) return [];
  }
  const forced = ids.slice(first, stable);
  const special = forced.findIndex((t) => vocabulary.special.has(t));
  return special >= 0 ? forced.slice(0, special) : forced;
}

/** Generated tokens whose text is retokenized with the forced text (see {@link forcedTokens}). */
const JUMP_TAIL_TOKENS = 3;

/**
 * Characters of every class a tokenizer's pre-tokenizer tells apart (letters, digits, spaces, line breaks, quotes,
 * brackets, punctuation): a forced token that no character of these changes is one that what follows cannot merge
 * into.
 */
const NEXT_CHARACTERS = ['a', 'Z', 'é', '0', ' ', '\n', '\t', '"', "'", '{', '}', '[', ']', ',', ':', '.', '-', '_'];

const NO_BYTES = new Uint8Array();

/**
 * A forced token's log probability: under the constraint it was the only token allowed, so its probability is 1 and
 * it is its own only alternative (OpenAI's API reports what was sampled from; nothing else could be).
 */
export function forcedLogprob(token: number, top: number, words: TokenText): GeneratedTokenLogprob {
  const entry = { token: words.text(token), logprob: 0, bytes: [...words.bytes(token)] };
  return { ...entry, topLogprobs: top > 0 ? [entry] : [] };
}
