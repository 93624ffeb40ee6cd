import type {
  ChatCompletionChunk,
  ChatCompletionRequestStreaming,
  ChatOptions,
  Completion,
  CompletionCreateParamsStreaming,
  MLCEngineConfig,
} from '@mlc-ai/web-llm';
import {
  ChatResultBuilder,
  EngineError,
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type FinishReason,
  type LoadProgress,
} from '../../engine-interface/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { TaskQueue } from '../task-queue.ts';
import { ChoicePipeline } from '../../generation/choice-pipeline.ts';
import { constraintGrammar, type GrammarSpec } from '../../grammar/output-constraint.ts';
import type { WebLLMCandidate } from './web-llm-engine.ts';
import { toolFormatOf } from '../../tools/tool-call-syntax.ts';
import { toolPrompt } from '../../tools/tool-prompt.ts';
import { failedBeforePrefill, loadError, runError } from './web-llm-errors.ts';
import { HeldConversation, type WebLLMMessage } from './held-conversation.ts';
import { webLLMProgress } from './web-llm-progress.ts';
import { readWebLLMTokenizer, type WebLLMTokenizer } from './web-llm-tokenizer.ts';
import { LogprobRecorder, logitProcessorSlot, type LogitProcessorSlot } from './web-llm-logprobs.ts';
import { endingWebLLMTakes, readAssistantRole, withoutPastThoughts } from './web-llm-turns.ts';
import type { TokenText } from '../../generation/logprobs.ts';
import { checkLogitBias } from '../../generation/token-generation.ts';

/**
 * web-llm builds prompts from its own conversation templates, not Jinja, and takes tools only for its Hermes models:
 * every model here gets tools in the generic format (Hermes, written into plain turns by Lantern), the format Qwen2.5
 * was trained on.
 */
const TOOL_FORMAT = toolFormatOf(undefined);

/** The part of web-llm's MLCEngine that this adapter uses; tests stand a fake with the same shape in its place. */
export interface WebLLMEngine {
  chat: {
    completions: {
      create(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
    };
  };
  /** Its text completion, which continues a raw prompt without the chat template. */
  completions: {
    create(request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  };
  /** Stops the running generation before its next token; it still ends with its final and usage chunks. */
  interruptGenerate(): Promise<void>;
  /** Drops the conversation and its KV cache: the next request is prefilled whole. Takes no lock: call it between runs. */
  resetChat(): Promise<void>;
  unload(): Promise<void>;
}

/**
 * web-llm models with a thinking mode, which web-llm switches off with `extra_body.enable_thinking: false` (it says
 * the switch is for Qwen3 only, and applies it to any model: it writes an empty thinking block into the reply).
 */
const THINKING_MODELS = /^Qwen3(\.\d+)?-\d/;

/** What web-llm writes at the start of a reply whose thinking it switched off (`forwardPrefill`, 0.2.86). */
const EMPTY_THINKING_BLOCK = '<think>\n\n</think>\n\n';

/** web-llm's `CreateMLCEngine`: a model ID, the engine's config, and chat options over the model's chat config. */
export type CreateWebLLMEngine = (
  modelId: string,
  config: MLCEngineConfig,
  chatOpts?: ChatOptions,
) => Promise<WebLLMEngine>;

/** web-llm, loaded only when a web-llm model is chosen: it is large, and useless without WebGPU. */
const createMLCEngine: CreateWebLLMEngine = async (modelId, config, chatOpts) =>
  (await import('@mlc-ai/web-llm')).CreateMLCEngine(modelId, config, chatOpts);

export interface WebLLMLoadOptions {
  /** The public model ID the progress events are reported under. */
  id: string;
  onProgress?: ((progress: LoadProgress) => void) | undefined;
  /** Creates the engine (default: web-llm's `CreateMLCEngine`). */
  create?: CreateWebLLMEngine;
}

/**
 * A chat model on web-llm (WebGPU), behind the engine interface. Every choice is one streamed web-llm request (web-llm
 * refuses `n > 1` when streaming): the first token of each arrives as it is generated. Stop sequences are matched here
 * rather than by web-llm, so a stop sequence split across tokens never leaks into the output. When one matches, the
 * generation is interrupted and its stream read to its end, which costs no further token and brings web-llm's usage
 * chunk (the prompt's tokens are counted nowhere else); `interruptGenerate` is safe there because the stream still
 * holds the model's lock, and web-llm clears the flag when the next generation starts (web-llm#447 concerns its
 * non-streamed requests). An abort closes the stream instead, which releases the lock at once.
 *
 * A constraint reaches web-llm as the same grammar text the transformers.js engine runs
 * (`response_format: {type: "grammar"}`, which web-llm compiles with its own XGrammar and applies as a mask), not as
 * web-llm's schema string, whose defaults allow unbounded whitespace and skip Lantern's narrowing; each constrained
 * choice is validated before its end is reported. Log probabilities are Lantern's, read inside web-llm by a logit
 * processor (LogprobRecorder): web-llm's own follow another rule.
 *
 * A thinking model (Qwen3) thinks when the request asks it to: its thought goes out apart from the answer (`reasoning`
 * events), and a constraint's grammar lets the thought come first. Otherwise its thinking is switched off
 * (`extra_body.enable_thinking: false`): web-llm then writes an empty thinking block into the reply, which is taken
 * out of the answer and kept out of `max_tokens` (see `toWebLLMRequest`).
 *
 * A raw prompt (`ChatRequest.prompt`) goes to web-llm's text completion instead (`completions.create`), whose chunks
 * are read the same way, the BOS its tokenizer adds before it; web-llm takes no grammar there, and the conversation it
 * held is gone afterwards.
 *
 * Prefix reuse is web-llm's own: it keeps the KV cache of its last conversation when the next request extends it (see
 * HeldConversation). Messages go to it as the client sent them (its system messages in one: `webLLMMessages`) and
 * replies come back as web-llm wrote them, so a client that sends the history back gets that reuse turn after turn;
 * a thinking model's past replies go without their thought (`withoutPastThoughts`: Qwen3's template drops them, and
 * Qwen3-0.6B cuts its replies short with them, mlc-llm#3482). A conversation that ends on an assistant turn, or holds
 * only system messages, which web-llm refuses, is sent ending on a turn it takes, so that the model answers after it
 * as on the CPU engines (`endingWebLLMTakes`).
 * With `n > 1`, choice 0 runs last, so the conversation web-llm holds afterwards is the one a client most likely
 * continues. That reuse is one key's (ChatRequest.cacheScope): a request of another key than the last one's makes
 * web-llm start afresh. Lantern's requests take web-llm one at a time (`#turns`), each with all its choices, so that
 * what it holds is known when a request is sent, and a reset never lands in another's generation (web-llm's
 * `resetChat` takes no lock).
 */
export class WebLLMChatModel {
  readonly #engine: WebLLMEngine;
  /**
   * A model with a thinking mode to switch off (Qwen3): the tokens of the empty thinking block web-llm then writes,
   * as its tokenizer encodes it. Undefined for a model without one.
   */
  readonly #thinkingBlockTokens: number | undefined;
  readonly #held = new HeldConversation();
  /** Requests to web-llm, one at a time (see the class comment); a request whose caller goes while it waits is skipped. */
  readonly #turns = new TaskQueue();
  /** The web-llm model ID. */
  readonly #model: string;
  /** The model's tokenizer.json, read from web-llm's cache when first needed. */
  #tokenizer: Promise<WebLLMTokenizer | undefined> | undefined;
  /** The model's logit processor in web-llm, which reads the log probabilities. */
  readonly #logprobs: LogprobRecorder;
  /** Where web-llm's pipeline holds that processor, attached only for a generation that reads it (see LogprobRecorder). */
  readonly #processorSlot: LogitProcessorSlot | undefined;
  /** The assistant role of the model's template, read from web-llm's cache when first needed (`endingWebLLMTakes`). */
  #assistantRole: Promise<string | undefined> | undefined;

  private constructor(
    engine: WebLLMEngine,
    model: string,
    logprobs: LogprobRecorder,
    thinkingBlockTokens: number | undefined,
  ) {
    this.#engine = engine;
    this.#model = model;
    this.#logprobs = logprobs;
    this.#processorSlot = logitProcessorSlot(engine, model);
    this.#thinkingBlockTokens = thinkingBlockTokens;
  }

  /** The assistant role of the model's conversation template (see `readAssistantRole`). */
  #assistantRoleOf(): Promise<string | undefined> {
    this.#assistantRole ??= readAssistantRole(this.#model).catch(() => undefined);
    return this.#assistantRole;
  }

  /** How `logprobs` spells this model's tokens: their text alone and their exact bytes, from its tokenizer.json. */
  async #tokenText(): Promise<TokenText> {
    const tokenizer = await this.#tokenizerFile();
    if (!tokenizer) {
      throw new EngineError(
        'invalid_request',
        "This model's tokenizer cannot be read: it reports no log probabilities.",
        {
          param: 'logprobs',
        },
      );
    }
    const { bytes } = tokenizer.vocabulary;
    const decoder = new TextDecoder();
    const none = new Uint8Array();
    return { text: (token) => decoder.decode(bytes[token] ?? none), bytes: (token) => bytes[token] ?? none };
  }

  /** The model's tokenizer.json as web-llm downloaded it (see WebLLMTokenizer). */
  #tokenizerFile(): Promise<WebLLMTokenizer | undefined> {
    this.#tokenizer ??= readWebLLMTokenizer(this.#model).catch(() => undefined);
    return this.#tokenizer;
  }

  static async load(candidate: WebLLMCandidate, options: WebLLMLoadOptions): Promise<WebLLMChatModel> {
    const { id, onProgress } = options;
    const logprobs = new LogprobRecorder();
    const config: MLCEngineConfig = {
      ...(onProgress && { initProgressCallback: webLLMProgress(id, candidate.downloadBytes ?? 0, onProgress) }),
      logitProcessorRegistry: new Map([[candidate.model, logprobs]]),
    };
    // web-llm's prebuilt models have a 4,096-token window (1,024 for -1k builds) unless chat options set another.
    const chatOpts =
      candidate.contextWindow === undefined ? undefined : { context_window_size: candidate.contextWindow };
    try {
      const engine = await (options.create ?? createMLCEngine)(candidate.model, config, chatOpts);
      const thinks = THINKING_MODELS.test(candidate.model);
      const blockTokens = thinks ? await promptTokensOf(engine, EMPTY_THINKING_BLOCK) : undefined;
      return new WebLLMChatModel(engine, candidate.model, logprobs, blockTokens);
    } catch (error) {
      throw loadError(error);
    }
  }

  async generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    if (request.prompt !== undefined && request.constraint) {
      throw new EngineError('invalid_request', 'web-llm cannot constrain the continuation of a raw prompt.', {
        param: 'prompt',
      });
    }
    // A thinking model thinks when asked to (its thought reported apart); otherwise its thinking is switched off. A
    // raw prompt has no template to switch it in.
    const thinks = this.#thinkingBlockTokens !== undefined && request.prompt === undefined;
    const thinking = thinks && request.thinking === true;
    // The request's constraint, its calls in the generic format's syntax, after a thought when the model thinks: one
    // grammar for all choices.
    const grammar = request.constraint
      ? await constraintGrammar(request.constraint, TOOL_FORMAT.syntax, { thinking })
      : undefined;
    // web-llm indexes its GPU logits by each id as given: one past the vocabulary is refused here, where its tokenizer
    // can be read (without it, web-llm's own checks are all there are).
    if (request.logitBias) {
      const vocabulary = (await this.#tokenizerFile())?.vocabulary;
      if (vocabulary) checkLogitBias(request.logitBias, vocabulary.strings.length);
    }
    // A raw prompt gets the BOS its tokenizer adds (transformers.js' too), which web-llm's text completion does not.
    const bos = request.prompt === undefined ? '' : ((await this.#tokenizerFile())?.bosText ?? '');
    const words = request.logprobs === undefined ? undefined : await this.#tokenText();
    const assistantRole = request.prompt === undefined ? await this.#assistantRoleOf() : undefined;
    const results = new ChatResultBuilder({ choices: request.n, logprobs: request.logprobs !== undefined });
    const onEvent = (event: ChatEvent) => {
      results.add(event);
      options.onEvent?.(event);
    };
    const usage = { promptTokens: 0, completionTokens: 0 };
    let reasoningTokens = 0;
    let cachedPromptTokens = 0;
    await this.#turns.run(async () => {
      // Another key's conversation is dropped before this one's request meets it.
      await this.#held.claim(request.cacheScope, () => this.#engine.resetChat());
      // From the last choice to the first: web-llm keeps only its last conversation's cache (see the class comment).
      for (let index = request.n - 1; index >= 0; index--) {
        const choice = await this.#generateChoice(request, index, { signal: options.signal, onEvent }, grammar, {
          bos,
          words,
          thinking,
          thinkingOff: thinks && !thinking,
          assistantRole,
        });
        usage.promptTokens = choice.promptTokens; // the same prompt for every choice: counted once
        usage.completionTokens += choice.completionTokens;
        reasoningTokens += choice.reasoningTokens;
        cachedPromptTokens = Math.max(cachedPromptTokens, choice.cachedPromptTokens);
      }
    }, options.signal);
    return results.result({
      ...usage,
      ...(thinking && { reasoningTokens }),
      ...(cachedPromptTokens > 0 && { cachedPromptTokens }),
    });
  }

  async #generateChoice(
    request: ChatRequest,
    index: number,
    { signal, onEvent }: RunOptions,
    grammar: GrammarSpec | undefined,
    how: {
      bos: string;
      words: TokenText | undefined;
      thinking: boolean;
      thinkingOff: boolean;
      assistantRole: string | undefined;
    },
  ) {
    const { bos, words, thinking: reasoning, thinkingOff, assistantRole } = how;
    throwIfAborted(signal);
    const rawPrompt = request.prompt !== undefined;
    // A continued conversation is sent as web-llm holds it (its replies as it wrote them), so that it keeps its cache,
    // but for the thoughts of a thinking model's past replies (`withoutPastThoughts`); a raw prompt continues none.
    const held = rawPrompt ? [] : this.#held.asHeld(request.messages);
    const messages = this.#thinkingBlockTokens === undefined ? held : withoutPastThoughts(held);
    const sent = rawPrompt ? request : { ...request, messages };
    const chat = rawPrompt
      ? undefined
      : toWebLLMRequest(sent, index, thinkingOff ? this.#thinkingBlockTokens : undefined, grammar);
    // Ending on a turn web-llm takes last, as the CPU engines answer a conversation that ends on another.
    if (chat) {
      const ending = endingWebLLMTakes(chat.messages as WebLLMMessage[], assistantRole);
      chat.messages = ending as ChatCompletionRequestStreaming['messages'];
    }
    // What web-llm's cache holds of the prompt, compared as web-llm compares it (see HeldConversation).
    const cachedPromptTokens = chat ? this.#held.cachedFor(chat.messages as WebLLMMessage[]) : 0;
    // The parameter a grammar web-llm cannot compile came from.
    const constraintParam = !request.constraint
      ? undefined
      : request.constraint.type === 'tools'
        ? 'tools'
        : (request.constraint.param ?? 'response_format');
    // The recorder runs in web-llm only for a generation that reads it: each step it runs costs a copy of the logits.
    if (this.#processorSlot) this.#processorSlot.logitProcessor = words || reasoning ? this.#logprobs : undefined;
    // Log probabilities as Lantern reads them (LogprobRecorder), of this generation only: web-llm runs one at a time.
    this.#logprobs.begin(
      words && {
        top: request.logprobs!,
        temperature: request.topP === 0 ? 0 : request.temperature,
        logitBias: request.logitBias,
        presencePenalty: request.presencePenalty,
        frequencyPenalty: request.frequencyPenalty,
        words,
      },
    );
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = chat
        ? await this.#engine.chat.completions.create(chat)
        : asChatChunks(await this.#engine.completions.create(toWebLLMCompletionRequest(request, index, bos)));
    } catch (error) {
      // Refused by web-llm's request check: it holds its conversation still.
      throw runError(error, { constraintParam });
    }
    const iterator = stream[Symbol.asyncIterator]();
    const pipeline = new ChoicePipeline(index, {
      onEvent,
      stop: request.stop,
      calls: toolPrompt(request, TOOL_FORMAT).calls,
      constraint: request.constraint,
      logprobs: request.logprobs !== undefined,
      reasoning,
    });
    // The empty thinking block web-llm writes when thinking is off is its own doing, not the model's answer.
    const thinking = leadingStripper(thinkingOff ? EMPTY_THINKING_BLOCK : '');
    // The reply as web-llm writes it (its conversation's), before the thinking block and stop sequences come off.
    let raw = '';
    let deltas = 0;
    let finishReason: FinishReason = 'stop';
    let webLLMFinish: string | null = null;
    let usage: ChatCompletionChunk['usage'];
    let finished = false;
    let read = false;
    let reasoningTokens = 0;
    try {
      for (;;) {
        const next = await iterator.next();
        read = true;
        if (next.done) {
          finished = true;
          break;
        }
        // Checked between tokens: an abort stops the generation within one token.
        throwIfAborted(signal);
        const chunk = next.value;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        const content = choice.delta.content ?? '';
        if (pipeline.finishReason) {
          // Interrupted: only the final and usage chunks should follow. A token means it was not; close it then.
          if (content) break;
          continue;
        }
        // The tokens sampled since the last chunk (web-llm holds a chunk back while it ends inside a character).
        const logprobs = content && request.logprobs !== undefined ? this.#logprobs.take() : [];
        const tokens = content ? this.#logprobs.sampled() : 0;
        const thought = pipeline.reasoningTokens;
        if (content) {
          deltas += 1;
          raw += content;
        }
        // A stop sequence, or a reply that has made every call it may (one, without parallel calls), ends it.
        const ended = pipeline.pushText(thinking.push(content), logprobs);
        // The pipeline counts the pieces fed while the model thought: a piece is this many tokens.
        if (pipeline.reasoningTokens > thought) reasoningTokens += tokens;
        if (ended) {
          await this.#engine.interruptGenerate();
          continue;
        }
        if (choice.finish_reason) {
          webLLMFinish = choice.finish_reason;
          finishReason = choice.finish_reason === 'length' ? 'length' : 'stop';
        }
      }
    } catch (error) {
      // Refused before its prefill, web-llm holds its conversation still; after, it will start afresh.
      if (read || !failedBeforePrefill(error)) this.#held.forget();
      throw runError(error, { constraintParam });
    } finally {
      // Closing the stream early runs web-llm's own cleanup: the generation stops and its lock is released.
      if (!finished) await iterator.return?.().catch(() => {});
      // What was sampled after the reply's last text (its end token) is not reported.
      this.#logprobs.begin(undefined);
    }
    // Stopped by Lantern (a stop sequence, or every call made), it ended as `stop` already.
    const stopped = pipeline.finishReason !== null;
    if (!stopped) pipeline.pushText(thinking.flush());
    // The end, checked against the constraint: a constrained choice that ended on its own must hold a valid answer.
    pipeline.end(finishReason);
    // web-llm's usage counts only the tokens it prefilled: with its cache reused, the rest of the prompt was held.
    const promptTokens = cachedPromptTokens + (usage?.prompt_tokens ?? 0);
    if (finished && !stopped && webLLMFinish === 'stop' && usage && chat) {
      const reply = { text: pipeline.text, toolCalls: pipeline.toolCalls };
      const held = chat.messages as WebLLMMessage[];
      this.#held.hold(request.messages, reply, held, raw, promptTokens, usage.completion_tokens);
    } else {
      // Cut, closed early, or a raw prompt (web-llm's text completion resets its chat): web-llm starts afresh.
      this.#held.forget();
    }
    return {
      promptTokens,
      cachedPromptTokens,
      reasoningTokens,
      // Without a usage chunk, each content chunk was one token.
      completionTokens: usage?.completion_tokens ?? deltas,
    };
  }
}

/** The modulus of web-llm's random generator (tvmjs' `LinearCongruentialGenerator`, 2^31 - 1). */
const SEED_MODULUS = 2147483647;

/**
 * The seed web-llm is given for choice `index` of a request seeded `seed` (any safe integer): `seed + index` modulo
 * 2^31 - 1, as its non-negative residue. web-llm keeps a seed modulo 2^31 - 1 itself (`setSeed`, lib/index.js 3839),
 * so seeds of one residue already gave one answer; a negative one it refuses with a plain Error ("Random state is
 * unexpectedly not strictly positive."). So -1 (llama.cpp's "random") answers as 2^31 - 2 does, reproducibly.
 */
export function webLLMSeed(seed: number, index = 0): number {
  const residue = ((seed % SEED_MODULUS) + SEED_MODULUS) % SEED_MODULUS;
  return (residue + index) % SEED_MODULUS;
}

/**
 * How many tokens web-llm's tokenizer makes of `text` (4 for Qwen3's `<think>\n\n</think>\n\n`): the prompt tokens of
 * a text completion of it, one token long. Its tokenizer is not reachable otherwise; its text completion encodes a
 * prompt as `forwardPrefill` encodes the thinking block (`tokenizer.encode`, no special tokens added). Run once, at
 * load, before any conversation it could reset.
 */
async function promptTokensOf(engine: WebLLMEngine, text: string): Promise<number> {
  const stream = await engine.completions.create({
    prompt: text,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 1,
    temperature: 0,
  });
  let tokens: number | undefined;
  for await (const chunk of stream) tokens = chunk.usage?.prompt_tokens ?? tokens;
  if (tokens === undefined) throw new Error('web-llm reported no usage for a text completion.');
  return tokens;
}

/** web-llm's text completion chunks in the shape of its chat chunks: the text as the delta's content. */
async function* asChatChunks(stream: AsyncIterable<Completion>): AsyncGenerator<ChatCompletionChunk> {
  for await (const chunk of stream) {
    yield {
      id: chunk.id,
      object: 'chat.completion.chunk',
      created: chunk.created,
      model: chunk.model,
      choices: chunk.choices.map((c) => ({
        index: c.index,
        delta: { content: c.text },
        finish_reason: c.finish_reason,
        logprobs: c.logprobs ?? null,
      })),
      ...(chunk.usage && { usage: chunk.usage }),
    } as ChatCompletionChunk;
  }
}

/** Removes `prefix` from the start of a streamed text, however its pieces split it; other text passes unchanged. */
function leadingStripper(prefix: string) {
  let held = '';
  let done = prefix === '';
  return {
    push(piece: string): string {
      if (done) return piece;
      held += piece;
      if (held.length < prefix.length && prefix.startsWith(held)) return '';
      done = true;
      return held.startsWith(prefix) ? held.slice(prefix.length) : held;
    },
    /** What is still held: a reply that ended inside what looked like the prefix. */
    flush(): string {
      if (done) return '';
      done = true;
      return held;
    },
  };
}

/**
 * The engine request for one choice of a raw prompt, in web-llm's text completion terms (as `toWebLLMRequest`).
 * `bos` is the text of what the model's tokenizer puts before a text (see WebLLMTokenizer): web-llm's text completion
 * encodes the prompt alone (`getInputData` skips `system_prefix_token_ids` for it, and its tokenizer adds no special
 * token), so the prompt is sent after it, which web-llm's tokenizer reads as the special token it is.
 */
export function toWebLLMCompletionRequest(
  request: ChatRequest,
  index: number,
  bos = '',
): CompletionCreateParamsStreaming {
  const { messages: _messages, ...sampling } = toWebLLMRequest(request, index);
  return { ...sampling, prompt: bos + (request.prompt ?? ''), stream: true } as CompletionCreateParamsStreaming;
}

/**
 * The messages web-llm is sent for a request: its system messages in one, first, then the rest, in the generic tool
 * format. web-llm takes one system message, first (`postInitAndCheckFields` and
 * `getConversationFromChatCompletionRequest` throw SystemMessageOrderError otherwise): Responses `instructions` with
 * a system item, or a system message in mid-conversation, would be a 400 on the GPU candidate only. So every system
 * message's text goes into the first, in their order, a blank line apart (the tools' description after them): the
 * model reads all it was told, though a later instruction no longer stands where it was given.
 */
export function webLLMMessages(request: ChatRequest): ChatCompletionRequestStreaming['messages'] {
  const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
  const rest = request.messages.filter((m) => m.role !== 'system');
  const messages = system.length ? [{ role: 'system' as const, content: system.join('\n\n') }, ...rest] : rest;
  return toolPrompt({ ...request, messages }, TOOL_FORMAT).messages.map((m) => ({
    role: m.role,
    // A user turn with images as OpenAI's parts, the image by its URL alone: web-llm refuses `detail`
    // (`postInitAndCheckFields`: "Currently do not support field image_url.detail").
    content:
      typeof m.content === 'string'
        ? m.content
        : m.content.map((part) =>
            part.type === 'text' ? part : { type: 'image_url', image_url: { url: part.image.url } },
          ),
  })) as ChatCompletionRequestStreaming['messages'];
}

/**
 * The engine request for one choice, in web-llm's (OpenAI-shaped) terms. A seeded request gives choice `i` the seed
 * `seed + i` (as web-llm takes it: `webLLMSeed`), so choices differ from each other and the whole answer still repeats
 * for the same seed. `top_p: 0`
 * means the most likely token only (OpenAI's meaning), which web-llm refuses (it wants 0 < top_p): that is its
 * temperature 0. `thinkingOff` switches a thinking mode off: it is the tokens of the empty thinking block web-llm
 * then writes into its output (`forwardPrefill` pushes them into the output ids that `max_tokens` bounds), which
 * `max_tokens` is raised by, so that it bounds the reply alone. `grammar` is the constraint's grammar: EBNF text as
 * `response_format: {type: "grammar"}`, a structural tag (tool calls) as `{type: "structural_tag"}`. web-llm is never
 * asked for log probabilities: Lantern reads them itself (LogprobRecorder).
 */
export function toWebLLMRequest(
  request: ChatRequest,
  index: number,
  thinkingOff?: number,
  grammar?: GrammarSpec,
): ChatCompletionRequestStreaming {
  const out: ChatCompletionRequestStreaming = {
    messages: webLLMMessages(request),
    stream: true,
    stream_options: { include_usage: true },
    n: 1,
    temperature: request.topP === 0 ? 0 : request.temperature,
    top_p: request.topP === 0 ? 1 : request.topP,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    // Neutral: unset, web-llm applies the model config's own (Qwen2.5 ships 1.1, `sampleFromRawLogits`), on top of
    // the request's penalties. Only the request's apply, as on transformers.js.
    repetition_penalty: 1,
  };
  // web-llm refuses only a prompt over its window, and stops at the window's end by itself: a default bound is passed as is.
  const maxTokens = request.maxTokens ?? request.defaultMaxTokens;
  if (maxTokens !== undefined) out.max_tokens = maxTokens + (thinkingOff ?? 0);
  if (request.seed !== undefined) out.seed = webLLMSeed(request.seed, index);
  if (request.logitBias) out.logit_bias = { ...request.logitBias };
  if (thinkingOff !== undefined) out.extra_body = { enable_thinking: false };
  if (grammar !== undefined) {
    out.response_format =
      'ebnf' in grammar
        ? { type: 'grammar', grammar: grammar.ebnf }
        : { type: 'structural_tag', structural_tag: grammar.structuralTag };
  }
  return out;
}
