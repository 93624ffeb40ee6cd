import type {
  ChatCompletionChunk,
  ChatCompletionRequestStreaming,
  Completion,
  CompletionCreateParamsStreaming,
  MLCEngineConfig,
} from '@mlc-ai/web-llm';
import type { CreateWebLLMEngine, WebLLMEngine } from '../../src/engines/web-llm/web-llm-chat-model.ts';
import { seededRandom } from '../../src/engines/decoding/seeded-random.ts';
import { fillNextTokenBitmask, loadXGrammar, type XGrammarCompiler } from '../../src/engines/decoding/xgrammar.ts';

/**
 * The fake's vocabulary, as web-llm hands a tokenizer's table to XGrammar: the 256 bytes (GPT-2 byte characters),
 * some multi-character tokens, then the stop token.
 */
const BYTE_CHARS = Array.from({ length: 256 }, (_, b) => b).reduce<string[]>((chars, b) => {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  chars.push(String.fromCharCode(printable ? b : 256 + chars.filter((c) => c.charCodeAt(0) >= 256).length));
  return chars;
}, []);
const WORDS = ['{"', '":', '","', '"}', 'true', 'false', 'null', 'Ġthe', 'name', 'value', '12', '2024-', 'Ġ'];
const VOCAB = [...BYTE_CHARS, ...WORDS, '<|im_end|>'];
const STOP = VOCAB.length - 1;
const BYTES_OF = (id: number) => [...VOCAB[id]!].map((c) => BYTE_CHARS.indexOf(c));
let compiler: Promise<XGrammarCompiler> | undefined;
const compiledGrammars = new Map<string, ReturnType<XGrammarCompiler['compileGrammar']>>();

/** A grammar as web-llm's `response_format` carries one: EBNF text, or a structural tag (tool calls). */
type FakeGrammar = { ebnf: string } | { structuralTag: unknown };

/** An error with one of web-llm's error class names, as its engine throws them (its classes are not exported). */
export function webLLMError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** Tokens of a text, for the fake: its words. */
export const fakeTokens = (text: unknown) => String(text).split(/\s+/).filter(Boolean).length;

/** What web-llm prefilled for a request: whether it kept its cache (multi-round chat) and how many tokens it added. */
export interface FakePrefill {
  reused: boolean;
  tokens: number;
}

/** What web-llm 0.2.86 prepends to the reply when `extra_body.enable_thinking` is false (`forwardPrefill`). */
export const EMPTY_THINKING_BLOCK = '<think>\n\n</think>\n\n';

type GenerationConfig = Pick<
  ChatCompletionRequestStreaming,
  'frequency_penalty' | 'presence_penalty' | 'max_tokens' | 'top_p' | 'temperature' | 'logit_bias' | 'logprobs'
> & { repetition_penalty?: number | null; top_logprobs?: number | null };

/**
 * web-llm's check of a request's sampling values, as it throws them: `postInitAndCheckGenerationConfigValues` in
 * @mlc-ai/web-llm 0.2.86 lib/index.js, ported line for line because web-llm does not export it. Its errors are
 * subclasses of its ConfigValueError, with these names and messages.
 */
function checkGenerationConfig(config: GenerationConfig): void {
  const has = (value: unknown) => value !== undefined && value !== null;
  const range = (param: string, min: number, max: number, extra?: string) =>
    webLLMError('RangeError', `Make sure ${min} < ${param} <= ${max}.${extra ? ' ' + extra : ''}`);
  const { frequency_penalty, presence_penalty, repetition_penalty, max_tokens, top_p, temperature } = config;
  if (has(frequency_penalty) && !(frequency_penalty! >= -2 && frequency_penalty! <= 2))
    throw range('frequency_penalty', -2, 2);
  if (has(presence_penalty) && !(presence_penalty! >= -2 && presence_penalty! <= 2))
    throw range('presence_penalty', -2, 2);
  if (has(repetition_penalty) && !(repetition_penalty! > 0))
    throw webLLMError('MinValueError', 'Make sure `repetition_penalty` > 0.');
  if (has(max_tokens) && !(max_tokens! > 0)) throw webLLMError('MinValueError', 'Make sure `max_tokens` > 0.');
  if (has(top_p) && !(top_p! > 0 && top_p! <= 1)) throw range('top_p', 0, 1);
  if (has(temperature) && !(temperature! >= 0)) throw webLLMError('NonNegativeError', 'Make sure temperature >= 0.');
  for (const [tokenID, bias] of Object.entries(config.logit_bias ?? {})) {
    if (!(bias >= -100 && bias <= 100)) throw range('logit_bias', -100, 100, `Got ${bias} for tokenID ${tokenID}`);
    if (isNaN(parseInt(tokenID))) {
      throw webLLMError(
        'InvalidNumberStringError',
        `Make sure logit_bias's keys to be number represented in string. Got ${tokenID}`,
      );
    }
  }
  if (has(config.top_logprobs)) {
    if (!config.logprobs) throw webLLMError('DependencyError', 'top_logprobs requires logprobs to be true.');
    if (!(config.top_logprobs! >= 0 && config.top_logprobs! <= 5))
      throw range('top_logprobs', 0, 5, `Got ${config.top_logprobs}`);
  }
}

/**
 * A stand-in for web-llm's MLCEngine, for tests of the adapter: the same `chat.completions.create` shape and the
 * behaviours that matter to it, read from web-llm 0.2.86's `chatCompletion`, `asyncGenerate` and
 * `streamCurrentGeneration`. `create` checks the request's fields with web-llm's own exported check (rejecting, as
 * web-llm's async `chatCompletion` does); the stream takes the model's lock, then checks the sampling values (so a
 * bad value fails on the first read), prefills and yields the first token, and then one chunk per token until it
 * stops, `interruptGenerate` having been called, or the stream closed early (which releases the lock at once). Then
 * a chunk with an empty delta and the `finish_reason` (`stop`, `length`, or `abort` after an interrupt), and, with
 * `stream_options.include_usage`, a usage chunk. `extra_body.enable_thinking: false` puts the empty thinking block at
 * the start of the reply, as web-llm does. The interrupt flag is cleared when the next generation starts.
 *
 * Constrained requests run as web-llm runs them: `response_format: {type: "grammar"}` (EBNF) and `{type:
 * "structural_tag"}` (tool calls) are compiled with the real XGrammar against the fake's vocabulary and mask every
 * step, tokens drawn by a seeded generator among those allowed (the stop token, once allowed, half the time), so the
 * output follows the grammar and nothing else. Under a structural tag the walk follows `reply` wherever the grammar
 * allows its next characters, as a model follows its own preference within a mask, and draws at random elsewhere. Log probabilities
 * are recorded only when `top_logprobs > 0` (with 0, web-llm's chunks carry `content: []`), one entry per token chunk.
 *
 * The usage's `completion_tokens` counts the end-of-reply token too when the reply ended on its own, as web-llm
 * counts every sampled token. Its KV cache behaves as web-llm's (`preparePrefillInput`, `compareConversationObject`):
 * it holds one conversation, and a request whose messages before the last are exactly that conversation (system
 * message, roles, texts, its own last reply as it wrote it, thinking block included) reuses it, unless the last reply
 * did not end on its own (`length`, or `abort`: interrupted, or its stream closed early); a reused request prefills,
 * and counts in `usage.prompt_tokens`, only its last message.
 */
export class FakeWebLLM implements WebLLMEngine {
  readonly requests: ChatCompletionRequestStreaming[] = [];
  /** What the model "says" for a request (default: ten tokens that depend on the seed). */
  reply: (request: ChatCompletionRequestStreaming) => string[] = (request) =>
    Array.from({ length: 10 }, (_, i) => `t${i}${request.seed ?? ''} `);
  /** Throw this from the first step of the next generation (like a prefill failure). */
  failNext: Error | undefined;
  /** How many context tokens a prompt has; over `contextWindow`, web-llm refuses it. */
  contextWindow = 4096;
  readonly config: MLCEngineConfig | undefined;
  tokensGenerated = 0;
  /** What each request prefilled, in order. */
  readonly prefills: FakePrefill[] = [];
  #locked = false;
  #interruptSignal = false;
  /** The conversation in the KV cache (every message, the last reply included), and how its last reply ended. */
  #conversation: { role: string; content: string }[] = [];
  #finish: 'stop' | 'length' | 'abort' | undefined;

  constructor(config?: MLCEngineConfig) {
    this.config = config;
  }

  get locked(): boolean {
    return this.#locked;
  }

  async interruptGenerate(): Promise<void> {
    this.#interruptSignal = true;
  }

  async unload(): Promise<void> {}

  readonly chat = {
    completions: {
      create: async (request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>> => {
        this.requests.push(structuredClone(request));
        const webllm = await import('@mlc-ai/web-llm');
        webllm.postInitAndCheckFieldsChatCompletion(request, 'fake-model', webllm.ModelType.LLM, undefined);
        return this.#generate(request);
      },
    },
  };

  /** The text completions asked for (a raw prompt), as `requests` holds the chat completions. */
  readonly completionRequests: CompletionCreateParamsStreaming[] = [];

  /**
   * web-llm's text completion: the same generation as a chat (the prompt standing as one message, for the token count
   * and `reply`), its chunks carrying `text` in place of a delta, as web-llm's `completion` streams them.
   */
  readonly completions = {
    create: async (request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>> => {
      this.completionRequests.push(structuredClone(request));
      const webllm = await import('@mlc-ai/web-llm');
      webllm.postInitAndCheckFieldsCompletion(request, 'fake-model');
      const { prompt, ...sampling } = request;
      return textCompletionChunks(this.#generate({ ...sampling, messages: [{ role: 'user', content: prompt }] }));
    },
  };

  async *#generate(request: ChatCompletionRequestStreaming): AsyncGenerator<ChatCompletionChunk> {
    while (this.#locked) await new Promise((resolve) => setTimeout(resolve, 1));
    this.#locked = true;
    try {
      checkGenerationConfig(request);
      this.#interruptSignal = false;
      const failure = this.failNext;
      this.failNext = undefined;
      if (failure) throw failure;
      checkRequest(request);
      const history = request.messages.slice(0, -1).map((m) => ({ role: m.role, content: String(m.content) }));
      const reused =
        this.#finish === 'stop' &&
        history.some((m) => m.role !== 'system') &&
        JSON.stringify(history) === JSON.stringify(this.#conversation);
      // Until this reply ends on its own, the next request starts afresh (after an error or an early close too).
      this.#finish = 'abort';
      this.#conversation = [];
      const allTokens = request.messages.reduce((n, m) => n + fakeTokens(m.content), 0);
      const promptTokens = reused ? fakeTokens(request.messages.at(-1)!.content) : allTokens;
      this.prefills.push({ reused, tokens: promptTokens });
      if (allTokens > this.contextWindow) {
        throw webLLMError(
          'ContextWindowSizeExceededError',
          `Prompt tokens exceed context window size: number of prompt tokens: ${allTokens}; context window size: ${this.contextWindow}`,
        );
      }
      const limit = request.max_tokens ?? Infinity;
      const format = request.response_format;
      const grammar: FakeGrammar | undefined =
        format?.type === 'grammar' && format.grammar != null
          ? { ebnf: format.grammar }
          : format?.type === 'structural_tag' && format.structural_tag != null
            ? { structuralTag: format.structural_tag }
            : undefined;
      let tokens: string[];
      let cutByGrammar = false;
      if (grammar !== undefined) {
        const preferred = 'structuralTag' in grammar ? this.reply(request).join('') : '';
        ({ chunks: tokens, cut: cutByGrammar } = await constrainedReply(grammar, request.seed ?? 0, limit, preferred));
      } else tokens = this.reply(request);
      const prefix = request.extra_body?.enable_thinking === false ? EMPTY_THINKING_BLOCK : '';
      let emitted = 0;
      let reply = '';
      let finishReason: 'stop' | 'length' | 'abort' = 'stop';
      for (;;) {
        // As web-llm's loop: a token that reached max_tokens or ended the reply stops it; then the interrupt flag.
        if (emitted === limit) {
          finishReason = 'length';
          break;
        }
        if (emitted === tokens.length) break;
        if (emitted > 0 && this.#interruptSignal) {
          finishReason = 'abort';
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 0)); // one forward pass
        this.tokensGenerated += 1;
        const content = (emitted === 0 ? prefix : '') + tokens[emitted]!;
        emitted += 1;
        reply += content;
        const logprobs = request.logprobs
          ? {
              content:
                (request.top_logprobs ?? 0) > 0 ? [fakeLogprob(tokens[emitted - 1]!, request.top_logprobs!)] : [],
            }
          : null;
        yield this.#chunk([{ index: 0, delta: { content, role: 'assistant' }, finish_reason: null, logprobs }]);
      }
      // A grammar walk that the limit cut came back shorter than the limit in chunks: it still ended on length.
      if (cutByGrammar && finishReason === 'stop') finishReason = 'length';
      // The reply is over (web-llm's finishReply): what the KV cache now holds, whoever reads on.
      this.#finish = finishReason;
      this.#conversation = [...history, request.messages.at(-1)!, { role: 'assistant', content: reply }].map((m) => ({
        role: m.role,
        content: String(m.content),
      }));
      const completionTokens = emitted + (finishReason === 'stop' ? 1 : 0);
      yield this.#chunk([{ index: 0, delta: {}, finish_reason: finishReason } as ChatCompletionChunk['choices'][0]]);
      if (request.stream_options?.include_usage) {
        yield {
          ...this.#chunk([]),
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
          },
        } as ChatCompletionChunk;
      }
    } finally {
      this.#locked = false;
    }
  }

  #chunk(choices: ChatCompletionChunk['choices']): ChatCompletionChunk {
    return {
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 0,
      model: 'fake',
      choices,
    } as ChatCompletionChunk;
  }
}

async function* textCompletionChunks(chunks: AsyncIterable<ChatCompletionChunk>): AsyncGenerator<Completion> {
  for await (const chunk of chunks) {
    yield {
      id: 'cmpl-fake',
      object: 'text_completion',
      created: 0,
      model: 'fake',
      choices: chunk.choices.map((c) => ({
        index: c.index,
        text: c.delta.content ?? '',
        finish_reason: c.finish_reason,
        logprobs: c.logprobs ?? null,
      })),
      ...(chunk.usage && { usage: chunk.usage }),
    };
  }
}

/** A `create` for WebLLMChatModel.load that builds a FakeWebLLM, or fails as web-llm does on an unfit device. */
export function fakeCreate(options: { fail?: Error } = {}): CreateWebLLMEngine & { engines: FakeWebLLM[] } {
  const engines: FakeWebLLM[] = [];
  const create = async (_modelId: string, config: MLCEngineConfig) => {
    config.initProgressCallback?.({ progress: 0.5, timeElapsed: 0, text: 'Fetching param cache[1/2]' });
    if (options.fail) throw options.fail;
    config.initProgressCallback?.({ progress: 1, timeElapsed: 0, text: 'Finish loading on WebGPU' });
    const engine = new FakeWebLLM(config);
    engines.push(engine);
    return engine;
  };
  return Object.assign(create, { engines });
}

/** What web-llm's `postInitAndCheckFields` refuses of a `response_format`, as it names it. */
function checkRequest(request: ChatCompletionRequestStreaming): void {
  const format = request.response_format;
  if (format?.schema != null && format.type !== 'json_object') throw webLLMError('InvalidResponseFormatError');
  if (format?.type === 'grammar' && format.grammar == null) throw webLLMError('InvalidResponseFormatGrammarError');
  if ((format?.type === 'structural_tag') !== (format?.structural_tag != null)) {
    throw webLLMError('InvalidResponseFormatStructuralTagError');
  }
}

/**
 * A seeded walk through the grammar over the fake vocabulary, at most `maxTokens` tokens: the text chunks it streams,
 * and whether the limit cut it. Where the grammar allows the next token of `preferred`, the walk takes it.
 */
async function constrainedReply(grammar: FakeGrammar, seed: number, maxTokens: number, preferred = '') {
  const xg = await loadXGrammar();
  compiler ??= xg.TokenizerInfo.createTokenizerInfo(VOCAB, 'byte_level', false, VOCAB.length, [STOP]).then((info) =>
    xg.GrammarCompiler.createGrammarCompiler(info),
  );
  // web-llm keeps the compiled grammar while requests repeat the same `response_format`; the fake keeps them all.
  const key = JSON.stringify(grammar);
  let compiled = compiledGrammars.get(key);
  if (!compiled) {
    const c = await compiler;
    compiled = 'ebnf' in grammar ? c.compileGrammar(grammar.ebnf) : c.compileStructuralTag(grammar.structuralTag);
    compiledGrammars.set(key, compiled);
  }
  const matcher = await xg.GrammarMatcher.createGrammarMatcher(await compiled);
  const random = seededRandom(seed);
  const mask = new Int32Array(Math.ceil(VOCAB.length / 32));
  const ids: number[] = [];
  let cut = true;
  while (ids.length < Math.min(maxTokens, 400)) {
    fillNextTokenBitmask(matcher, VOCAB.length, mask);
    const allowed = VOCAB.map((_, t) => t).filter((t) => (mask[t >>> 5]! & (1 << (t & 31))) !== 0);
    const sofar = new TextDecoder().decode(Uint8Array.from(ids.flatMap(BYTES_OF)));
    const rest = preferred.startsWith(sofar) ? preferred.slice(sofar.length) : '';
    const wanted = rest
      ? allowed.find((t) => t < 256 && rest.startsWith(String.fromCharCode(...BYTES_OF(t))))
      : undefined;
    const token =
      wanted ??
      (allowed.includes(STOP) && (random() < 0.5 || (preferred && !rest))
        ? STOP
        : allowed[Math.floor(random() * allowed.length)]!);
    // As web-llm does (llm_chat.ts, commitSamplerState).
    if (!matcher.handle.AcceptToken(token, false)) throw new Error('Grammar matcher rejected the newly sampled token.');
    if (token === STOP) {
      cut = false;
      break;
    }
    ids.push(token);
  }
  matcher.dispose();
  // web-llm decodes byte by byte as the fake does: a chunk that completes no character waits for the one that does.
  const out: string[] = [];
  let bytes: number[] = [];
  for (const id of ids) {
    bytes.push(...BYTES_OF(id));
    const text = new TextDecoder('utf-8', { fatal: false }).decode(Uint8Array.from(bytes));
    if (text.endsWith('\uFFFD')) continue;
    out.push(text);
    bytes = [];
  }
  return { chunks: out, cut };
}

/** A log probability entry as web-llm writes it: the token, `Math.log` of its probability, UTF-8 bytes, alternatives. */
function fakeLogprob(token: string, top: number) {
  const entry = (t: string, p: number) => ({ token: t, logprob: Math.log(p), bytes: [...new TextEncoder().encode(t)] });
  return {
    ...entry(token, 0.5),
    top_logprobs: [entry(token, 0.5), ...Array.from({ length: top - 1 }, (_, i) => entry(`alt${i}`, 0.4 / 2 ** i))],
  };
}
