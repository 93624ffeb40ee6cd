import type {
  ChatCompletionChunk,
  ChatCompletionRequestStreaming,
  ChatOptions,
  Completion,
  CompletionCreateParamsStreaming,
  MLCEngineConfig,
} from '@mlc-ai/web-llm';
import {
  EngineError,
  throwIfAborted,
  type ChatRequest,
  type ChatResult,
  type LoadProgress,
  type RunsOn,
} from '../../engine-interface/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { TaskQueue } from '../task-queue.ts';
import {
  generateNativeChoices,
  type NativeRowPlan,
  type NativeRowPrompt,
  type NativeRowSink,
} from '../../generation/native-choices.ts';
import { tokensText, type Vocabulary } from '../../grammar/token-bytes.ts';
import type { WebLLMCandidate } from './web-llm-engine.ts';
import { toolFormatOf } from '../../tools/tool-call-syntax.ts';
import { toolPrompt } from '../../tools/tool-prompt.ts';
import { failedBeforePrefill, loadError, runError } from './web-llm-errors.ts';
import { HeldConversation, type WebLLMMessage } from './held-conversation.ts';
import { webLLMProgress } from './web-llm-progress.ts';
import { readWebLLMTokenizer, type WebLLMTokenizer } from './web-llm-tokenizer.ts';
import { LogprobRecorder } from './web-llm-logprobs.ts';
import { webLLMPipeline, type WebLLMPipeline } from './web-llm-pipeline.ts';
import { endingWebLLMTakes, readAssistantRole, withoutPastThoughts } from './web-llm-turns.ts';
import type { TokenText } from '../../generation/logprobs.ts';
import { chatTurn } from '../../generation/chat-front-end.ts';

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
 * A chat model on web-llm (WebGPU), behind the engine interface: an engine that samples itself, driven by the core
 * (`generateNativeChoices`), which compiles the request's plan, runs its choices as rows and reads each row's tokens
 * through the same choice pipeline as every engine's. Every row is one streamed web-llm request (web-llm refuses
 * `n > 1` when streaming) that web-llm samples on the GPU; the ids it samples are read from its pipeline after each
 * step (WebLLMPipeline), so the first token of each arrives as it is generated and no logits leave the GPU for them.
 * Stop sequences are matched by the core rather than by web-llm, so a stop sequence split across tokens never leaks
 * into the output. When one matches, the
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
 * (`extra_body.enable_thinking: false`): web-llm then writes an empty thinking block first into its output ids, which
 * are skipped, and the block is kept out of `max_tokens` (see `toWebLLMRequest`).
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
 * With `n > 1`, choice 0 runs last (the core runs rows from the last), so the conversation web-llm holds afterwards
 * is the one a client most likely continues. That reuse is one key's (ChatRequest.cacheScope): a request of another key than the last one's makes
 * web-llm start afresh. Lantern's requests take web-llm one at a time (`#turns`), each with all its choices, so that
 * what it holds is known when a request is sent, and a reset never lands in another's generation (web-llm's
 * `resetChat` takes no lock).
 */
export class WebLLMChatModel {
  /** web-llm runs on WebGPU or not at all: it has no CPU path to fall back to. */
  readonly runsOn: RunsOn = { device: 'webgpu' };
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
  /** The model's tokenizer.json as web-llm downloaded it, read at load: its replies are decoded from its ids by it. */
  readonly #tokenizer: WebLLMTokenizer;
  /** The model's logit processor in web-llm, which reads the log probabilities. */
  readonly #logprobs: LogprobRecorder;
  /**
   * The model's generation state in web-llm: where the sampled ids are read, and where the processor is attached only
   * for a generation that asks for log probabilities (see LogprobRecorder).
   */
  readonly #pipeline: WebLLMPipeline;
  /** The assistant role of the model's template, read from web-llm's cache when first needed (`endingWebLLMTakes`). */
  #assistantRole: Promise<string | undefined> | undefined;

  private constructor(
    engine: WebLLMEngine,
    model: string,
    tokenizer: WebLLMTokenizer,
    logprobs: LogprobRecorder,
    pipeline: WebLLMPipeline,
    thinkingBlockTokens: number | undefined,
  ) {
    this.#engine = engine;
    this.#model = model;
    this.#tokenizer = tokenizer;
    this.#logprobs = logprobs;
    this.#pipeline = pipeline;
    this.#thinkingBlockTokens = thinkingBlockTokens;
  }

  /** The assistant role of the model's conversation template (see `readAssistantRole`). */
  #assistantRoleOf(): Promise<string | undefined> {
    this.#assistantRole ??= readAssistantRole(this.#model).catch(() => undefined);
    return this.#assistantRole;
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
      const pipeline = webLLMPipeline(engine, candidate.model);
      if (!pipeline) {
        throw new Error(
          `This web-llm does not show its model's pipeline as 0.2.86 does: Lantern cannot read its tokens.`,
        );
      }
      // web-llm attaches the registry's processor at load; it runs only where log probabilities are asked for.
      pipeline.logitProcessor = undefined;
      const tokenizer = await readWebLLMTokenizer(candidate.model);
      if (!tokenizer) throw new Error(`web-llm's cache holds no tokenizer.json for ${candidate.model}.`);
      const thinks = THINKING_MODELS.test(candidate.model);
      const blockTokens = thinks ? await promptTokensOf(engine, EMPTY_THINKING_BLOCK) : undefined;
      return new WebLLMChatModel(engine, candidate.model, tokenizer, logprobs, pipeline, blockTokens);
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
    const { tools, thinking } = chatTurn(request, {
      toolFormat: TOOL_FORMAT,
      thinks: this.#thinkingBlockTokens !== undefined,
    });
    const thinks = this.#thinkingBlockTokens !== undefined && request.prompt === undefined;
    const { vocabulary, bosText } = this.#tokenizer;
    // A raw prompt gets the BOS its tokenizer adds (transformers.js' too), which web-llm's text completion does not.
    const bos = request.prompt === undefined ? '' : bosText;
    const words = request.logprobs === undefined ? undefined : tokenText(vocabulary);
    const assistantRole = request.prompt === undefined ? await this.#assistantRoleOf() : undefined;
    const how = { bos, words, thinkingOff: thinks && !thinking, assistantRole, signal: options.signal };
    return this.#turns.run(async () => {
      // Another key's conversation is dropped before this one's request meets it.
      await this.#held.claim(request.cacheScope, () => this.#engine.resetChat());
      // A continued conversation is sent as web-llm holds it (its replies as it wrote them), so that it keeps its
      // cache, but for the thoughts of a thinking model's past replies (`withoutPastThoughts`); a raw prompt continues
      // none. Read once for every choice: the first row's reply replaces what web-llm holds, and every choice answers
      // the same conversation.
      const held = request.prompt !== undefined ? [] : this.#held.asHeld(request.messages);
      const messages = this.#thinkingBlockTokens === undefined ? held : withoutPastThoughts(held);
      return generateNativeChoices(
        request,
        {
          thinking,
          calls: tools.calls,
          syntax: TOOL_FORMAT.syntax,
          // The text web-llm writes for them: their bytes, special tokens' included, as UTF-8.
          decode: (ids) => tokensText(vocabulary, ids),
          // web-llm indexes its GPU logits by each id as given: one past the vocabulary is refused before it is sent.
          vocabularySize: vocabulary.strings.length,
          signal: options.signal,
          onEvent: options.onEvent,
        },
        (row, plan, sink) => this.#runRow(request, plan, sink, { ...how, messages }),
      );
    }, options.signal);
  }

  /**
   * One row of a request, as one streamed web-llm request: web-llm samples it on the GPU under the row's plan, and the
   * ids it sampled are read from its pipeline (WebLLMPipeline) after each step and handed to the core. Its text is
   * kept only as the reply web-llm's conversation holds (HeldConversation).
   */
  async #runRow(
    request: ChatRequest,
    plan: NativeRowPlan,
    sink: NativeRowSink,
    how: {
      bos: string;
      words: TokenText | undefined;
      thinkingOff: boolean;
      assistantRole: string | undefined;
      signal: AbortSignal | undefined;
      /** The request's messages as web-llm is sent them (see `generate`). */
      messages: ChatRequest['messages'];
    },
  ): Promise<NativeRowPrompt> {
    const { bos, words, thinkingOff, assistantRole, signal, messages } = how;
    throwIfAborted(signal);
    const rawPrompt = request.prompt !== undefined;
    const sent = rawPrompt ? request : { ...request, messages };
    const blockTokens = thinkingOff ? this.#thinkingBlockTokens : undefined;
    const chat = rawPrompt ? undefined : toWebLLMRequest(sent, plan, blockTokens);
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
    // The recorder runs in web-llm only for a generation that asks for log probabilities: each step it runs costs a
    // copy of the logits to the CPU and back.
    this.#pipeline.logitProcessor = words ? this.#logprobs : undefined;
    this.#logprobs.begin(
      words && {
        top: plan.logprobs!,
        temperature: plan.topP === 0 ? 0 : plan.temperature,
        logitBias: plan.logitBias,
        presencePenalty: plan.presencePenalty,
        frequencyPenalty: plan.frequencyPenalty,
        words,
      },
    );
    let stream: AsyncIterable<ChatCompletionChunk>;
    try {
      stream = chat
        ? await this.#engine.chat.completions.create(chat)
        : asChatChunks(await this.#engine.completions.create(toWebLLMCompletionRequest(request, plan, bos)));
    } catch (error) {
      // Refused by web-llm's request check: it holds its conversation still.
      throw runError(error, { constraintParam });
    }
    const iterator = stream[Symbol.asyncIterator]();
    // The output ids read so far: web-llm writes a switched-off thinking block's first, which the model did not sample.
    let seen = blockTokens ?? 0;
    // The reply as web-llm writes it (its conversation's), its empty thinking block included.
    let raw = '';
    let webLLMFinish: string | null = null;
    let usage: ChatCompletionChunk['usage'];
    let finished = false;
    let read = false;
    // Set when the core ended the choice (a stop sequence, or every call made) and web-llm was interrupted.
    let ended = false;
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
        if (ended) {
          // Interrupted: only the final and usage chunks should follow. A token means it was not; close it then.
          if (content) break;
          continue;
        }
        raw += content;
        // The tokens sampled since the last chunk (web-llm holds a chunk back while it ends inside a character).
        const tokens = this.#pipeline.outputIds.slice(seen);
        seen += tokens.length;
        const logprobs = words ? this.#logprobs.take().slice(0, tokens.length) : undefined;
        if (tokens.length > 0 && sink.push(tokens, logprobs)) {
          ended = true;
          await this.#engine.interruptGenerate();
          continue;
        }
        if (choice.finish_reason) webLLMFinish = choice.finish_reason;
      }
    } catch (error) {
      // Refused before its prefill, web-llm holds its conversation still; after, it will start afresh.
      if (read || !failedBeforePrefill(error)) this.#held.forget();
      throw runError(error, { constraintParam });
    } finally {
      // Closing the stream early runs web-llm's own cleanup: the generation stops and its lock is released.
      if (!finished) await iterator.return?.().catch(() => {});
      this.#logprobs.begin(undefined);
    }
    // web-llm's usage counts only the tokens it prefilled: with its cache reused, the rest of the prompt was held.
    const promptTokens = cachedPromptTokens + (usage?.prompt_tokens ?? 0);
    if (ended) {
      // Stopped by the core (a stop sequence, or every call made): web-llm's conversation holds more than the reply.
      this.#held.forget();
      return { promptTokens, cachedPromptTokens };
    }
    // Its completion tokens count every token it sampled: one more than the ids it wrote is the end token it drew.
    const sampled = seen - (blockTokens ?? 0);
    const endToken = webLLMFinish === 'stop' && (usage?.completion_tokens ?? 0) > sampled;
    // The end, checked against the constraint: a constrained choice that ended on its own must hold a valid answer.
    const reply = sink.end(webLLMFinish === 'length' ? 'length' : 'stop', endToken);
    if (finished && webLLMFinish === 'stop' && usage && chat) {
      const sentMessages = chat.messages as WebLLMMessage[];
      this.#held.hold(request.messages, reply, sentMessages, raw, promptTokens, usage.completion_tokens);
    } else {
      // Cut, or a raw prompt (web-llm's text completion resets its chat): web-llm starts afresh.
      this.#held.forget();
    }
    return { promptTokens, cachedPromptTokens };
  }
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

/**
 * The engine request for one choice of a raw prompt, in web-llm's text completion terms (as `toWebLLMRequest`).
 * `bos` is the text of what the model's tokenizer puts before a text (see WebLLMTokenizer): web-llm's text completion
 * encodes the prompt alone (`getInputData` skips `system_prefix_token_ids` for it, and its tokenizer adds no special
 * token), so the prompt is sent after it, which web-llm's tokenizer reads as the special token it is.
 */
export function toWebLLMCompletionRequest(
  request: ChatRequest,
  plan: NativeRowPlan,
  bos = '',
): CompletionCreateParamsStreaming {
  const { messages: _messages, ...sampling } = toWebLLMRequest(request, plan);
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
 * The engine request for one row of a request, in web-llm's (OpenAI-shaped) terms: the messages from the request, the
 * rest from the row's plan, which web-llm executes on the GPU (its sampler draws under the plan's temperature, top_p,
 * seed, penalties and `logit_bias`; its XGrammar masks with the plan's grammar; `max_tokens` is its own limit). The seed
 * is the row's, as web-llm's generator takes it (`webLLMSeed`). `top_p: 0` means the most likely token
 * only (OpenAI's meaning), which web-llm refuses (it wants 0 < top_p): that is its temperature 0. `thinkingOff`
 * switches a thinking mode off: it is the tokens of the empty thinking block web-llm then writes into its output
 * (`forwardPrefill` pushes them into the output ids that `max_tokens` bounds), which `max_tokens` is raised by, so that
 * it bounds the reply alone. The grammar is EBNF text as `response_format: {type: "grammar"}`, a structural tag (tool
 * calls) as `{type: "structural_tag"}`. web-llm is never asked for log probabilities: Lantern reads them itself
 * (LogprobRecorder).
 */
export function toWebLLMRequest(
  request: ChatRequest,
  plan: NativeRowPlan,
  thinkingOff?: number,
): ChatCompletionRequestStreaming {
  const out: ChatCompletionRequestStreaming = {
    messages: webLLMMessages(request),
    stream: true,
    stream_options: { include_usage: true },
    n: 1,
    temperature: plan.topP === 0 ? 0 : plan.temperature,
    top_p: plan.topP === 0 ? 1 : plan.topP,
    presence_penalty: plan.presencePenalty,
    frequency_penalty: plan.frequencyPenalty,
    // Neutral: unset, web-llm applies the model config's own (Qwen2.5 ships 1.1, `sampleFromRawLogits`), on top of
    // the request's penalties. Only the request's apply, as on transformers.js.
    repetition_penalty: 1,
  };
  if (plan.seed !== undefined) out.seed = webLLMSeed(plan.seed);
  // web-llm refuses only a prompt over its window, and stops at the window's end by itself: a default bound is passed as is.
  if (plan.maxTokens !== undefined) out.max_tokens = plan.maxTokens + (thinkingOff ?? 0);
  if (plan.logitBias) out.logit_bias = { ...plan.logitBias };
  if (thinkingOff !== undefined) out.extra_body = { enable_thinking: false };
  const { grammar } = plan;
  if (grammar !== undefined) {
    out.response_format =
      'ebnf' in grammar
        ? { type: 'grammar', grammar: grammar.ebnf }
        : { type: 'structural_tag', structural_tag: grammar.structuralTag };
  }
  return out;
}

/** The modulus of web-llm's random generator (tvmjs' `LinearCongruentialGenerator`, 2^31 - 1). */
const SEED_MODULUS = 2147483647;

/**
 * A row's seed (any safe integer) as web-llm takes it: modulo 2^31 - 1, as its non-negative residue. web-llm keeps a
 * seed modulo 2^31 - 1 itself (`setSeed`, lib/index.js 3839), so seeds of one residue already gave one answer; a
 * negative one it refuses with a plain Error ("Random state is unexpectedly not strictly positive."). So -1 (llama.cpp's
 * "random") answers as 2^31 - 2 does, reproducibly.
 */
export function webLLMSeed(seed: number): number {
  return ((seed % SEED_MODULUS) + SEED_MODULUS) % SEED_MODULUS;
}

/** How `logprobs` spells a model's tokens: their text alone and their exact bytes. */
function tokenText(vocabulary: Vocabulary): TokenText {
  const decoder = new TextDecoder();
  const { bytes } = vocabulary;
  return { text: (token) => decoder.decode(bytes[token] ?? NO_BYTES), bytes: (token) => bytes[token] ?? NO_BYTES };
}

const NO_BYTES = new Uint8Array();
