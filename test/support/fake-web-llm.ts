import type { ChatCompletionChunk, ChatCompletionRequestStreaming, MLCEngineConfig } from '@mlc-ai/web-llm';
import type { CreateWebLLMEngine, WebLLMEngine } from '../../src/engines/web-llm/web-llm-chat-model.ts';
import { seededRandom } from '../../src/engines/generation/seeded-random.ts';
import { fillNextTokenBitmask, loadXGrammar, type XGrammarCompiler } from '../../src/engines/generation/xgrammar.ts';

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

/** An error with one of web-llm's error class names, as its engine throws them. */
export function webLLMError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/**
 * A stand-in for web-llm's MLCEngine, for unit tests of the adapter: the same `chat.completions.create` shape and the
 * behaviours that matter to it. Requests hold a per-model lock for as long as their stream is open (released when it
 * ends or is closed early), as web-llm's do; each token is one chunk; `finish_reason` comes with the last token, then a
 * usage chunk. `interruptGenerate` reproduces web-llm#447: the generation after an interrupt comes back empty.
 *
 * Constrained requests run as web-llm runs them: `response_format: {type: "grammar"}` is compiled with the real
 * XGrammar against the fake's vocabulary and masks every step, tokens drawn by a seeded generator among those allowed
 * (the stop token, once allowed, half the time), so the output follows the grammar and nothing else. Log probabilities
 * are recorded only when `top_logprobs > 0` (with 0, web-llm's chunks carry `content: []`), one entry per token chunk,
 * and the request checks of web-llm are kept (`top_logprobs` needs `logprobs`, at most 5; a grammar needs its text).
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
  #locked = false;
  #interrupted = false;

  constructor(config?: MLCEngineConfig) {
    this.config = config;
  }

  get locked(): boolean {
    return this.#locked;
  }

  interruptGenerate(): void {
    this.#interrupted = true;
  }

  async unload(): Promise<void> {}

  readonly chat = {
    completions: {
      create: async (request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>> => {
        this.requests.push(structuredClone(request));
        return this.#generate(request);
      },
    },
  };

  async *#generate(request: ChatCompletionRequestStreaming): AsyncGenerator<ChatCompletionChunk> {
    while (this.#locked) await new Promise((resolve) => setTimeout(resolve, 1));
    this.#locked = true;
    try {
      const failure = this.failNext;
      this.failNext = undefined;
      if (failure) throw failure;
      checkRequest(request);
      const promptTokens = request.messages.reduce((n, m) => n + String(m.content).split(/\s+/).length, 0);
      if (promptTokens > this.contextWindow) {
        throw webLLMError(
          'ContextWindowSizeExceededError',
          `Prompt tokens exceed context window size: number of prompt tokens: ${promptTokens}; context window size: ${this.contextWindow}`,
        );
      }
      // web-llm#447: a generation that follows an interrupt produces nothing.
      const grammar = request.response_format?.type === 'grammar' ? request.response_format.grammar : undefined;
      const limit = request.max_tokens ?? Infinity;
      let emitted: string[];
      let cut: boolean;
      if (this.#interrupted) [emitted, cut] = [[], false];
      else if (grammar !== undefined)
        ({ chunks: emitted, cut } = await constrainedReply(grammar, request.seed ?? 0, limit));
      else {
        const tokens = this.reply(request);
        [emitted, cut] = [tokens.slice(0, limit), tokens.length > limit];
      }
      this.#interrupted = false;
      for (let i = 0; i < emitted.length; i++) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        this.tokensGenerated += 1;
        const last = i === emitted.length - 1;
        yield this.#chunk([
          {
            index: 0,
            delta: { role: 'assistant', content: emitted[i]! },
            finish_reason: last ? (cut ? 'length' : 'stop') : null,
            logprobs: request.logprobs
              ? { content: (request.top_logprobs ?? 0) > 0 ? [fakeLogprob(emitted[i]!, request.top_logprobs!)] : [] }
              : null,
          },
        ]);
      }
      if (request.stream_options?.include_usage) {
        yield {
          ...this.#chunk([]),
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: emitted.length,
            total_tokens: promptTokens + emitted.length,
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

/** What web-llm's `postInitAndCheckFields` and `postInitAndCheckGenerationConfigValues` refuse, as it names them. */
function checkRequest(request: ChatCompletionRequestStreaming): void {
  if (request.top_logprobs != null) {
    if (!request.logprobs) throw webLLMError('DependencyError', 'top_logprobs requires logprobs to be true');
    if (request.top_logprobs < 0 || request.top_logprobs > 5)
      throw webLLMError('RangeError', 'top_logprobs must be in [0, 5]');
  }
  const format = request.response_format;
  if (format?.schema != null && format.type !== 'json_object') throw webLLMError('InvalidResponseFormatError');
  if (format?.type === 'grammar' && format.grammar == null) throw webLLMError('InvalidResponseFormatGrammarError');
}

/**
 * A seeded walk through the grammar over the fake vocabulary, at most `maxTokens` tokens: the text chunks it streams,
 * and whether the limit cut it.
 */
async function constrainedReply(grammar: string, seed: number, maxTokens: number) {
  const xg = await loadXGrammar();
  compiler ??= xg.TokenizerInfo.createTokenizerInfo(VOCAB, 'byte_level', false, VOCAB.length, [STOP]).then((info) =>
    xg.GrammarCompiler.createGrammarCompiler(info),
  );
  // web-llm keeps the compiled grammar while requests repeat the same `response_format`; the fake keeps them all.
  let compiled = compiledGrammars.get(grammar);
  if (!compiled) compiledGrammars.set(grammar, (compiled = (await compiler).compileGrammar(grammar)));
  const matcher = await xg.GrammarMatcher.createGrammarMatcher(await compiled);
  const random = seededRandom(seed);
  const mask = new Int32Array(Math.ceil(VOCAB.length / 32));
  const ids: number[] = [];
  let cut = true;
  while (ids.length < Math.min(maxTokens, 400)) {
    fillNextTokenBitmask(matcher, VOCAB.length, mask);
    const allowed = VOCAB.map((_, t) => t).filter((t) => (mask[t >>> 5]! & (1 << (t & 31))) !== 0);
    const token = allowed.includes(STOP) && random() < 0.5 ? STOP : allowed[Math.floor(random() * allowed.length)]!;
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
