import {
  MLCEngine,
  ModelType,
  prebuiltAppConfig,
  type ChatCompletionRequestStreaming,
  type ChatCompletionTokenLogprob,
  type ChatOptions,
  type CompletionCreateParamsStreaming,
  type LogitProcessor,
  type MLCEngineConfig,
  type ModelRecord,
} from '@mlc-ai/web-llm';
import { WebLLMChatModel, type WebLLMEngine } from '../../src/engines/web-llm/web-llm-chat-model.ts';
import {
  fillNextTokenBitmask,
  loadXGrammar,
  type XGrammarCompiler,
  type XMatcher,
} from '../../src/grammar/xgrammar.ts';
import { installMemoryCaches, MemoryCacheStorage } from './memory-caches.ts';

/*
 * web-llm 0.2.86 in Node, without a GPU: web-llm's own engine (its exported `MLCEngine`: request checks, generation
 * config checks, the conversation it builds and compares for its KV cache, its stream chunks and usage) over a fake
 * of the one part that needs WebGPU, its `LLMChatPipeline`, ported from lib/index.js function by function (line
 * numbers below are lib/index.js's). The model behind the pipeline is a fake: it scores tokens so that it writes
 * `FakeWebLLM.reply`, wherever the grammar mask lets it.
 *
 * `fakeCreate()` stands for `CreateMLCEngine`: it looks the model up in web-llm's own `prebuiltAppConfig`, merges the
 * chat options over the model record's overrides over the model's chat config as `reloadInternal` does (so a
 * prebuilt model's window is 4,096 tokens unless chat options say otherwise), writes what web-llm writes into the
 * Cache API (`webllm/config`, `webllm/wasm`, `webllm/model`: tensor-cache.json, its shards, tokenizer.json; an
 * in-memory `caches`, installed globally), and reports progress with web-llm's own texts and phases.
 */

/** An error with one of web-llm's error class names, as its engine throws them (its classes are not exported). */
export function webLLMError(name: string, message = name): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

/** What web-llm 0.2.86 writes into the reply when `extra_body.enable_thinking` is false (`forwardPrefill`, 12363). */
export const EMPTY_THINKING_BLOCK = '<think>\n\n</think>\n\n';

// ---------------------------------------------------------------------------------------------------------------
// The fake model's tokenizer: byte-level, as Qwen's and Llama 3's are.

/** GPT-2's byte-to-character table, as byte-level BPE vocabularies spell bytes. */
const BYTE_CHARS = Array.from({ length: 256 }, (_, b) => b).reduce<string[]>((chars, b) => {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  chars.push(String.fromCharCode(printable ? b : 256 + chars.filter((c) => c.charCodeAt(0) >= 256).length));
  return chars;
}, []);
const BYTE_OF = new Map(BYTE_CHARS.map((c, b) => [c, b]));
const utf8 = new TextEncoder();
const spell = (text: string) => [...utf8.encode(text)].map((b) => BYTE_CHARS[b]!).join('');

/** The special tokens of the fake vocabulary (added tokens, matched in text before anything else). */
const SPECIALS = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<think>',
  '</think>',
  '<|begin_of_text|>',
  '<|end_of_text|>',
  '<|start_header_id|>',
  '<|end_header_id|>',
  '<|eot_id|>',
];

/** Multi-byte tokens every fake vocabulary has: JSON pieces, `\n\n` (one token in Qwen's), and the default reply's. */
const WORDS = [
  '\n\n',
  '{"',
  '":',
  '","',
  '"}',
  'true',
  'false',
  'null',
  ' the',
  'name',
  'value',
  '12',
  '2024-',
  ' ',
  ...Array.from({ length: 10 }, (_, i) =>
    ['', ...Array.from({ length: 100 }, (_, s) => s)].map((s) => `t${i}${s} `),
  ).flat(),
];

/**
 * A byte-level tokenizer with web-llm's tokenizer interface (`encode` without special tokens added, as tokenizers-cpp's
 * `Encode(text)` does; `decode`, `idToToken`, `getVocabSize`): the 256 bytes, words, then special tokens. It encodes
 * by longest match (not BPE merges), which is all the fake needs: one token per word it knows.
 */
export class FakeTokenizer {
  /** Token strings by id, as a vocabulary stores them (GPT-2 byte characters; special tokens as they read). */
  readonly strings: string[];
  readonly #ids = new Map<string, number>();
  readonly #specialIds = new Map<string, number>();
  readonly #longest: number;

  constructor(words: readonly string[] = []) {
    const spelled = [...new Set([...WORDS, ...words].map(spell))].filter((s) => !BYTE_OF.has(s));
    this.strings = [...BYTE_CHARS, ...spelled, ...SPECIALS];
    this.strings.forEach((s, id) => this.#ids.set(s, id));
    SPECIALS.forEach((s) => this.#specialIds.set(s, this.#ids.get(s)!));
    this.#longest = Math.max(...spelled.map((s) => s.length));
  }

  id(token: string): number {
    const id = this.#specialIds.get(token) ?? this.#ids.get(spell(token));
    if (id === undefined) throw new Error(`The fake vocabulary has no token ${JSON.stringify(token)}.`);
    return id;
  }

  isSpecial(id: number): boolean {
    return id >= this.strings.length - SPECIALS.length;
  }

  getVocabSize(): number {
    return this.strings.length;
  }

  idToToken(id: number): string {
    return this.strings[id] ?? '';
  }

  /** The bytes a token stands for. */
  bytes(id: number): number[] {
    const token = this.strings[id] ?? '';
    return this.isSpecial(id) ? [...utf8.encode(token)] : [...token].map((c) => BYTE_OF.get(c)!);
  }

  encode(text: string): Int32Array {
    const out: number[] = [];
    const specials = new RegExp(SPECIALS.map((s) => s.replace(/[|[\]]/g, '\\$&')).join('|'), 'g');
    let at = 0;
    for (const match of [...text.matchAll(specials), undefined]) {
      const end = match?.index ?? text.length;
      const spelled = spell(text.slice(at, end));
      for (let i = 0; i < spelled.length;) {
        let length = Math.min(this.#longest, spelled.length - i);
        while (length > 1 && !this.#ids.has(spelled.slice(i, i + length))) length--;
        out.push(this.#ids.get(spelled.slice(i, i + length))!);
        i += length;
      }
      if (match) out.push(this.#specialIds.get(match[0])!);
      at = end + (match?.[0].length ?? 0);
    }
    return Int32Array.from(out);
  }

  /** The text of tokens, as a byte-level decoder gives it: invalid UTF-8 becomes U+FFFD. */
  decode(ids: Int32Array | number[]): string {
    return new TextDecoder().decode(Uint8Array.from([...ids].flatMap((id) => this.bytes(id))));
  }

  /** tokenizer.json as web-llm downloads it: a byte-level BPE, with the BOS its post-processor adds, if any. */
  json(bos?: string): object {
    const added = SPECIALS.map((content) => ({ id: this.#specialIds.get(content), content, special: true }));
    const vocab = Object.fromEntries(
      this.strings.flatMap((s, id): [string, number][] => (this.isSpecial(id) ? [] : [[s, id]])),
    );
    return {
      version: '1.0',
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: bos
        ? {
            type: 'Sequence',
            processors: [
              { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
              {
                type: 'TemplateProcessing',
                single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
                pair: [],
                special_tokens: { [bos]: { id: bos, ids: [this.#specialIds.get(bos)], tokens: [bos] } },
              },
            ],
          }
        : { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', vocab, merges: [] },
    };
  }
}

let defaultTokenizer: FakeTokenizer | undefined;

/** Tokens of a text in a fake vocabulary (the default one unless given). */
export const fakeTokens = (text: unknown, tokenizer = (defaultTokenizer ??= new FakeTokenizer())) =>
  tokenizer.encode(String(text)).length;

// ---------------------------------------------------------------------------------------------------------------
// The chat config of each fake model (mlc-chat-config.json), by family.

type ConvTemplate = {
  system_template: string;
  system_message: string;
  roles: Record<'user' | 'assistant' | 'tool', string>;
  role_templates?: Record<string, string>;
  seps: string[];
  role_content_sep?: string;
  role_empty_sep?: string;
  stop_str: string[];
  system_prefix_token_ids?: number[];
  stop_token_ids: number[];
  add_role_after_system_message?: boolean;
};

/** The parts of an mlc-chat-config.json that web-llm's engine and pipeline read. */
export interface FakeChatConfig {
  model_type: string;
  vocab_size: number;
  context_window_size: number;
  sliding_window_size: number;
  attention_sink_size: number;
  prefill_chunk_size: number;
  temperature: number;
  top_p: number;
  repetition_penalty: number;
  presence_penalty: number;
  frequency_penalty: number;
  bos_token_id?: number;
  tokenizer_files: string[];
  tokenizer_info: { token_postproc_method: string; prepend_space_in_encode: boolean; strip_space_in_decode: boolean };
  conv_template: ConvTemplate;
  conv_config: Record<string, unknown>;
}

/**
 * A model's chat config as web-llm downloads it (before the record's overrides and the chat options): Llama 3's
 * template (its BOS in `system_prefix_token_ids`) for Llama-3 models, ChatML (mlc-llm's `qwen2`) for the others. Qwen2.5
 * ships `repetition_penalty` 1.1 (its generation_config.json), the others 1.0.
 */
function fakeChatConfig(modelId: string, tokenizer: FakeTokenizer): FakeChatConfig {
  const llama = /^Llama-3/.test(modelId);
  const conv_template: ConvTemplate = llama
    ? {
        system_template: '<|start_header_id|>system<|end_header_id|>\n\n{system_message}<|eot_id|>',
        system_message: 'You are a helpful, respectful and honest assistant.',
        roles: {
          user: '<|start_header_id|>user',
          assistant: '<|start_header_id|>assistant',
          tool: '<|start_header_id|>ipython',
        },
        seps: ['<|eot_id|>'],
        role_content_sep: '<|end_header_id|>\n\n',
        role_empty_sep: '<|end_header_id|>\n\n',
        stop_str: [],
        system_prefix_token_ids: [tokenizer.id('<|begin_of_text|>')],
        stop_token_ids: [tokenizer.id('<|end_of_text|>'), tokenizer.id('<|eot_id|>')],
      }
    : {
        system_template: '<|im_start|>system\n{system_message}<|im_end|>\n',
        system_message: 'You are a helpful assistant.',
        roles: { user: '<|im_start|>user', assistant: '<|im_start|>assistant', tool: '<|im_start|>user' },
        seps: ['<|im_end|>\n'],
        role_content_sep: '\n',
        role_empty_sep: '\n',
        stop_str: ['<|endoftext|>', '<|im_end|>'],
        stop_token_ids: [tokenizer.id('<|im_end|>'), tokenizer.id('<|endoftext|>')],
      };
  return {
    model_type: llama ? 'llama' : 'qwen2',
    vocab_size: tokenizer.getVocabSize(),
    context_window_size: 32768,
    sliding_window_size: -1,
    attention_sink_size: -1,
    prefill_chunk_size: 2048,
    temperature: 0.7,
    top_p: 0.8,
    repetition_penalty: /^Qwen2\.5-/.test(modelId) ? 1.1 : 1.0,
    presence_penalty: 0,
    frequency_penalty: 0,
    ...(llama && { bos_token_id: tokenizer.id('<|begin_of_text|>') }),
    tokenizer_files: ['tokenizer.json'],
    tokenizer_info: {
      token_postproc_method: 'byte_level',
      prepend_space_in_encode: false,
      strip_space_in_decode: false,
    },
    conv_template,
    conv_config: {},
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Ported from web-llm: its random generator, lock, and the GPU pipeline's logic.

/** tvmjs' `LinearCongruentialGenerator` (3823), which `setSeed` seeds: a seed it cannot use throws a plain Error. */
class LinearCongruentialGenerator {
  readonly modulus = 2147483647;
  readonly multiplier = 48271;
  readonly increment = 0;
  rand_state = 1;

  constructor() {
    this.setSeed(Date.now());
  }

  setSeed(seed: number): void {
    if (!Number.isInteger(seed)) throw new Error('Seed should be an integer.');
    this.rand_state = seed % this.modulus;
    if (this.rand_state == 0) this.rand_state = 1;
    this.checkRandState();
  }

  nextInt(): number {
    const intermediate = this.multiplier * this.rand_state + this.increment;
    this.rand_state = intermediate % this.modulus;
    this.checkRandState();
    return this.rand_state;
  }

  randomFloat(): number {
    return this.nextInt() / this.modulus;
  }

  checkRandState(): void {
    if (this.rand_state <= 0) throw new Error('Random state is unexpectedly not strictly positive.');
    if (!Number.isInteger(this.rand_state)) throw new Error('Random state is unexpectedly not an integer.');
  }
}

/** web-llm's `CustomLock` (11509): the model's lock, which its streams hold while they generate. */
class CustomLock {
  acquired = false;
  readonly queue: (() => void)[] = [];

  async acquire(): Promise<void> {
    if (!this.acquired) {
      this.acquired = true;
      return;
    }
    return new Promise((resolve) => this.queue.push(resolve));
  }

  async release(): Promise<void> {
    if (!this.acquired) throw Error('InternalError: expect lock is acquired upon release()');
    if (this.queue.length === 0) {
      this.acquired = false;
      return;
    }
    this.queue.shift()!();
  }
}

/** The parts of web-llm's `Conversation` (10374) the pipeline uses; the real objects come from web-llm's engine. */
interface Conversation {
  messages: [string, string, unknown][];
  isTextCompletion: boolean;
  prompt?: string;
  config: { system_prefix_token_ids?: number[] | null };
  reset(): void;
  getStopStr(): string[];
  getStopTokens(): number[];
  getPromptArray(config?: unknown): (string | unknown[])[];
  getPromptArrayLastRound(config?: unknown): (string | unknown[])[];
  getPromptArrayTextCompletion(): string[];
  appendMessage(role: string, message: unknown, roleName?: string): void;
  appendReplyHeader(role: string): void;
  appendEmptyThinkingReplyHeader(role: string, block: string): void;
  finishReply(message: string): void;
}

/** A Conversation as `getConversation` (10757) makes one, before the engine replaces it with one of its own. */
function freshConversation(config: FakeChatConfig): Conversation {
  return {
    messages: [],
    isTextCompletion: false,
    config: config.conv_template,
    function_string: '',
    use_function_calling: false,
    override_system_message: undefined,
    reset(this: Conversation) {
      this.messages = [];
    },
    getStopStr: () => config.conv_template.stop_str,
    getStopTokens: () => config.conv_template.stop_token_ids,
  } as unknown as Conversation;
}

type GenConfig = {
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  repetition_penalty?: number | null;
  max_tokens?: number | null;
  stop?: string | string[] | null;
  top_p?: number | null;
  temperature?: number | null;
  logit_bias?: Record<string, number> | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  response_format?: { type?: string; grammar?: string; schema?: string; structural_tag?: unknown } | null;
  ignore_eos?: boolean;
  enable_thinking?: boolean | null;
};

/** float32's lowest value: what web-llm's `apply_bitmask_inplace` writes over a masked token's logit. */
const MASKED = -3.4028234663852886e38;

/** web-llm's `getTopProbs` (11226), line for line: the `num` most likely [token, probability] pairs. */
function getTopProbs(num: number, probs: Float32Array): [number, number][] {
  if (num == 0) return [];
  const top: [number, number][] = Array.from({ length: num }, () => [-1, -1]);
  let sum = 0.0;
  for (let p = 0; p < probs.length; p++) {
    let i = num - 1;
    for (; i >= 0; --i) {
      if (probs[p]! > top[i]![1]) {
        if (i !== num - 1) top[i + 1] = top[i]!;
      } else break;
    }
    if (i !== num - 1) top[i + 1] = [p, probs[p]!];
    sum += probs[p]!;
    if (1 - sum <= top[num - 1]![1]) break;
  }
  return top;
}

/** XGrammar compilers, one per fake vocabulary (web-llm keeps one per pipeline; the fakes of a test share). */
const compilers = new Map<string, Promise<XGrammarCompiler>>();

/**
 * web-llm's `LLMChatPipeline` (11636) without WebGPU: its states and steps ported line for line (prefill, decode,
 * sampling with the grammar mask, the logit processor, `logit_bias` and penalties in web-llm's order, its stop
 * conditions and log probabilities), with the fake model's scores for the logits a forward pass would give.
 */
class FakePipeline {
  conversation: Conversation;
  stopStr: string[];
  stopTokens: number[];
  contextWindowSize: number;
  readonly slidingWindowSize = -1;
  filledKVCacheLength = 0;
  outputMessage = '';
  outputIds: number[] = [];
  stopTriggered = false;
  finishReason: 'stop' | 'length' | 'abort' | undefined;
  appearedTokensFreq = new Map<number, number>();
  tokenLogprobArray: ChatCompletionTokenLogprob[] = [];
  curRoundDecodingTotalTokens = 0;
  curRoundCompletionTotalTokens = 0;
  curRoundPrefillTotalTokens = 0;
  grammarMatcher: XMatcher | undefined;
  responseFormatCacheKey: string | undefined;
  readonly rng = new LinearCongruentialGenerator();
  /** Where the assistant's reply starts in `outputIds` (after web-llm's empty thinking block). */
  #replyStart = 0;
  /** What the fake model means to write this generation (`FakeWebLLM.reply`, asked once per generation). */
  #preferred = '';

  constructor(
    readonly engine: FakeWebLLM,
    readonly config: FakeChatConfig,
    readonly tokenizer: FakeTokenizer,
    /** The registry's processor for the model, given at load; web-llm's pipeline keeps it in a field of its own. */
    public logitProcessor: LogitProcessor | undefined,
  ) {
    this.conversation = freshConversation(config);
    this.stopStr = this.conversation.getStopStr();
    this.stopTokens = this.conversation.getStopTokens();
    this.contextWindowSize = config.context_window_size;
  }

  // Getters and setters the engine calls.
  getMessage = () => this.outputMessage;
  stopped = () => this.stopTriggered;
  getFinishReason = () => this.finishReason;
  getTokenLogprobArray = () => this.tokenLogprobArray;
  getCurRoundDecodingTotalTokens = () => this.curRoundDecodingTotalTokens;
  getCurRoundCompletionTotalTokens = () => this.curRoundCompletionTotalTokens;
  getCurRoundPrefillTotalTokens = () => this.curRoundPrefillTotalTokens;
  getCurRoundPrefillTotalTime = () => 0.001;
  getCurRoundDecodingTotalTime = () => 0.001;
  getCurRoundPrefillTokensPerSec = () => this.curRoundPrefillTotalTokens / 0.001;
  getCurRoundDecodingTokensPerSec = () => this.curRoundDecodingTotalTokens / 0.001;
  getCurRoundGrammarInitTotalTime = () => 0;
  getCurRoundGrammarPerTokenTotalTime = () => 0;
  getCurRoundLatencyBreakdown = () => ({});
  getConversationObject = () => this.conversation;
  getSupportedInputKinds = () => undefined;
  setSeed = (seed: number) => this.rng.setSeed(seed);
  sync = async () => {};
  /** `dispose` (its GPU buffers), which web-llm's `unload` calls on each loaded pipeline. */
  dispose = () => {};

  setConversation(conversation: Conversation): void {
    this.conversation = conversation;
    this.stopStr = conversation.getStopStr();
    this.stopTokens = conversation.getStopTokens();
  }

  /** `resetChat` (12008): a new conversation, an empty KV cache. */
  resetChat(): void {
    this.conversation.reset();
    this.finishReason = undefined;
    this.filledKVCacheLength = 0;
    this.logitProcessor?.resetState();
  }

  resetGenerationRoundState(): void {
    this.outputIds = [];
    this.appearedTokensFreq.clear();
    this.outputMessage = '';
    this.tokenLogprobArray = [];
    this.curRoundDecodingTotalTokens = 0;
    this.curRoundCompletionTotalTokens = 0;
    this.curRoundPrefillTotalTokens = 0;
  }

  /** `prefillStep` and `samplePrefillStep` (12289, 12299). */
  async prefillStep(inp: string, msgRole: string, inpRoleStr: string | undefined, genConfig: GenConfig) {
    if (msgRole !== 'user' && msgRole !== 'tool') {
      throw webLLMError('MessageOrderError', 'The last message should be from `user` or `tool`.');
    }
    this.resetGenerationRoundState();
    this.stopTriggered = false;
    this.#preferred = this.engine.reply(this.engine.requestOf(genConfig)).join('');
    const grammarMatcherInitPromise = this.prepareGrammarMatcherForSampling(genConfig);
    const { logits, promptLen } = await this.forwardPrefill(inp, msgRole, inpRoleStr, genConfig);
    await grammarMatcherInitPromise;
    const nextToken = await this.sampleFromRawLogits(logits, genConfig);
    this.curRoundPrefillTotalTokens += promptLen;
    this.commitSampledStep(nextToken, genConfig);
  }

  /** `forwardPrefill` (12347): the empty thinking block goes into the output ids and the prompt. */
  async forwardPrefill(inp: string, msgRole: string, inpRoleStr: string | undefined, genConfig: GenConfig) {
    const conversation = this.conversation;
    if (conversation.isTextCompletion) {
      conversation.prompt = inp;
    } else {
      conversation.appendMessage(msgRole, inp, inpRoleStr);
      if (genConfig?.enable_thinking === false) {
        const encoded = Array.from(this.tokenizer.encode(EMPTY_THINKING_BLOCK));
        this.outputIds.push(...encoded);
        conversation.appendEmptyThinkingReplyHeader('assistant', EMPTY_THINKING_BLOCK);
      } else {
        conversation.appendReplyHeader('assistant');
      }
    }
    this.#replyStart = this.outputIds.length;
    const [tokens, promptLen] = this.getInputData();
    const reused = this.filledKVCacheLength > 0;
    // The forward pass: where a GPU fails, after the conversation took the new round.
    const failure = this.engine.failNext;
    this.engine.failNext = undefined;
    if (failure) throw failure;
    this.filledKVCacheLength += tokens.length;
    this.engine.prefills.push({ reused, tokens: promptLen, ids: tokens, filled: this.filledKVCacheLength });
    return { logits: this.#forward(), promptLen };
  }

  /** `getInputData` (13849), for text: the BOS of `system_prefix_token_ids` only on a new chat; the window check. */
  getInputData(): [number[], number] {
    let curTokens: number[] = [];
    let prompts: (string | unknown[])[];
    if (this.conversation.isTextCompletion) {
      if (this.filledKVCacheLength !== 0) {
        throw webLLMError(
          'TextCompletionExpectsKVEmptyError',
          'Non-chat text completion API expects KVCache to be empty.',
        );
      }
      prompts = this.conversation.getPromptArrayTextCompletion();
    } else if (this.filledKVCacheLength === 0) {
      const prefix = this.conversation.config.system_prefix_token_ids;
      if (prefix !== undefined && prefix !== null) curTokens = [...prefix];
      prompts = this.conversation.getPromptArray(this.config);
    } else {
      prompts = this.conversation.getPromptArrayLastRound(this.config);
    }
    let numPromptTokens = 0;
    for (const prompt of prompts) {
      if (typeof prompt !== 'string') throw new Error('The fake web-llm takes text only.');
      const encoded = this.tokenizer.encode(prompt);
      numPromptTokens += encoded.length;
      curTokens.push(...encoded);
    }
    if (this.slidingWindowSize == -1 && numPromptTokens + this.filledKVCacheLength > this.contextWindowSize) {
      throw webLLMError(
        'ContextWindowSizeExceededError',
        `Prompt tokens exceed context window size: number of prompt tokens: ${numPromptTokens}; ` +
          `context window size: ${this.contextWindowSize}\nConsider shortening the prompt, or increase ` +
          '`context_window_size`, or using sliding window via `sliding_window_size`.',
      );
    }
    return [curTokens, numPromptTokens];
  }

  /** `decodeStep` and `sampleDecodeStep` (12453). */
  async decodeStep(genConfig: GenConfig): Promise<void> {
    if (this.stopTriggered) throw Error('Cannot run decode when stopped');
    this.filledKVCacheLength += 1; // the last token, forwarded
    const logits = this.#forward();
    const nextToken = await this.sampleFromRawLogits(logits, genConfig);
    this.curRoundDecodingTotalTokens += 1;
    this.commitSampledStep(nextToken, genConfig);
  }

  /** `triggerStop` (12500). */
  triggerStop(): void {
    if (this.stopTriggered) return;
    this.stopTriggered = true;
    this.finishReason = 'abort';
    if (!this.conversation.isTextCompletion) this.conversation.finishReply(this.outputMessage);
  }

  /** `commitSampledStep`, `commitSampledToken`, `commitSamplerState` (12604, 12867). */
  commitSampledStep(token: number, genConfig: GenConfig): void {
    this.logitProcessor?.processSampledToken(token);
    if (this.#constrained(genConfig)) {
      if (!this.grammarMatcher!.handle.AcceptToken(token, false)) {
        throw Error('Grammar matcher rejected the newly sampled token.');
      }
    }
    this.processNextToken(token, genConfig);
    this.curRoundCompletionTotalTokens += 1;
    this.engine.tokensGenerated += 1;
  }

  /** `processNextToken` (12516): stop token, stop strings, `max_tokens` over all output ids, the window. */
  processNextToken(nextToken: number, genConfig: GenConfig, processedSeqLen = this.filledKVCacheLength): void {
    if (this.stopTriggered) throw Error('Cannot call process when it is stoppped');
    const max_tokens = genConfig?.max_tokens ?? Infinity;
    if (!(max_tokens > 0)) throw webLLMError('MinValueError', 'Make sure `max_tokens` > 0.');
    const ignore_eos = genConfig?.ignore_eos ?? false;
    let stopStrs = this.stopStr;
    if (genConfig?.stop) stopStrs = stopStrs.concat(genConfig.stop);
    let stopTokens = this.stopTokens;
    if (ignore_eos) {
      stopTokens = [];
      stopStrs = [];
    }
    if (stopTokens.includes(nextToken)) {
      this.stopTriggered = true;
      this.finishReason = 'stop';
    }
    if (!this.stopTriggered) {
      this.outputIds.push(nextToken);
      this.appearedTokensFreq.set(nextToken, (this.appearedTokensFreq.get(nextToken) ?? 0) + 1);
    }
    let outputMessage = this.tokenizer.decode(this.outputIds);
    for (const stopStr of stopStrs) {
      const stopPos = outputMessage.lastIndexOf(stopStr);
      if (stopPos != -1) {
        outputMessage = outputMessage.substring(0, stopPos);
        this.stopTriggered = true;
        this.finishReason = 'stop';
        break;
      }
    }
    this.outputMessage = outputMessage;
    if (this.outputIds.length >= max_tokens) {
      this.stopTriggered = true;
      this.finishReason = 'length';
    }
    if (this.slidingWindowSize == -1 && processedSeqLen == this.contextWindowSize) {
      this.stopTriggered = true;
      this.finishReason = 'length';
    }
    if (this.stopTriggered && !this.conversation.isTextCompletion) this.conversation.finishReply(this.outputMessage);
  }

  #constrained(genConfig: GenConfig): boolean {
    const type = genConfig?.response_format?.type;
    return type === 'json_object' || type === 'grammar' || type === 'structural_tag';
  }

  /** `prepareGrammarMatcherForSampling` (12184): a matcher per response format, reused while it repeats. */
  prepareGrammarMatcherForSampling(genConfig: GenConfig): Promise<void> | undefined {
    const format = genConfig?.response_format;
    if (!format || !this.#constrained(genConfig)) return undefined;
    const key =
      format.type === 'json_object'
        ? format.schema
        : format.type === 'grammar'
          ? format.grammar
          : typeof format.structural_tag === 'string'
            ? format.structural_tag
            : JSON.stringify(format.structural_tag);
    if (key === this.responseFormatCacheKey && this.grammarMatcher) {
      this.grammarMatcher.handle.Reset();
      return undefined;
    }
    const initialization = (async () => {
      try {
        this.grammarMatcher?.dispose();
        this.grammarMatcher = undefined;
        const xg = await loadXGrammar();
        const vocab = this.tokenizer.strings;
        const compilerKey = vocab.join('\u0000');
        let compiler = compilers.get(compilerKey);
        if (!compiler) {
          const info = xg.TokenizerInfo.createTokenizerInfo(vocab, 'byte_level', false, vocab.length, this.stopTokens);
          compiler = info.then((i) => xg.GrammarCompiler.createGrammarCompiler(i));
          compilers.set(compilerKey, compiler);
        }
        const c = await compiler;
        const grammar =
          format.type === 'json_object'
            ? await c.compileJSONSchema(format.schema!)
            : format.type === 'grammar'
              ? await c.compileGrammar(format.grammar!)
              : await c.compileStructuralTag(format.structural_tag);
        this.grammarMatcher = await xg.GrammarMatcher.createGrammarMatcher(grammar);
        this.responseFormatCacheKey = key;
      } catch (err) {
        const cause = err instanceof Error ? err.message : String(err);
        const error = webLLMError(
          'GrammarMatcherInitError',
          `Failed to initialize the grammar matcher for response format \`${format.type ?? 'json_object'}\`: ${cause}`,
        );
        error.cause = err;
        throw error;
      }
    })();
    void initialization.catch(() => undefined);
    return initialization;
  }

  /**
   * `sampleFromRawLogits` (13561): the chat config's sampling values where the request sets none, the grammar mask,
   * the logit processor, `logit_bias`, the penalties, then a draw at the temperature (at least 1e-6) within `top_p`,
   * and the log probabilities of the distribution it drew from.
   */
  async sampleFromRawLogits(rawLogits: Float32Array, genConfig?: GenConfig): Promise<number> {
    const has = (value: unknown) => value !== undefined && value !== null;
    let temperature = this.config.temperature;
    let top_p = this.config.top_p;
    let repetition_penalty = this.config.repetition_penalty;
    let frequency_penalty: number | undefined = this.config.frequency_penalty;
    let presence_penalty: number | undefined = this.config.presence_penalty;
    let logit_bias: Record<string, number> | undefined;
    let logprobs: boolean | undefined;
    let top_logprobs: number | undefined;
    if (genConfig !== undefined) {
      if (has(genConfig.temperature)) temperature = genConfig.temperature!;
      if (has(genConfig.top_p)) top_p = genConfig.top_p!;
      if (!has(top_p)) top_p = 1.0;
      if (has(genConfig.repetition_penalty)) repetition_penalty = genConfig.repetition_penalty!;
      if (has(genConfig.frequency_penalty)) frequency_penalty = genConfig.frequency_penalty!;
      if (has(genConfig.presence_penalty)) presence_penalty = genConfig.presence_penalty!;
      if (has(frequency_penalty) && !has(presence_penalty)) presence_penalty = 0.0;
      if (has(presence_penalty) && !has(frequency_penalty)) frequency_penalty = 0.0;
      if (!has(frequency_penalty)) frequency_penalty = 0.0;
      if (!has(presence_penalty)) presence_penalty = 0.0;
      if (has(genConfig.logit_bias)) logit_bias = genConfig.logit_bias!;
      if (has(genConfig.logprobs)) logprobs = genConfig.logprobs!;
      if (has(genConfig.top_logprobs)) top_logprobs = genConfig.top_logprobs!;
    }
    if (!(top_p > 0 && top_p <= 1)) throw webLLMError('RangeError', 'Make sure 0 < top_p <= 1.');
    if (!(temperature >= 0)) throw webLLMError('MinValueError', 'Make sure `temperature` > 0.');
    if (!(repetition_penalty > 0)) throw webLLMError('MinValueError', 'Make sure `repetition_penalty` > 0.');
    let logits = Float32Array.from(rawLogits);
    // 0. The grammar's mask.
    if (this.#constrained(genConfig!)) {
      const mask = new Int32Array(Math.ceil(logits.length / 32));
      fillNextTokenBitmask(this.grammarMatcher!, this.tokenizer.getVocabSize(), mask);
      for (let t = 0; t < logits.length; t++) if (((mask[t >>> 5]! >>> (t & 31)) & 1) !== 1) logits[t] = MASKED;
    }
    // 1. The logit processor, on the CPU: web-llm copies the logits there and back for it, each step it is set.
    if (this.logitProcessor !== undefined) {
      this.engine.logitCopies += 1;
      logits = Float32Array.from(this.logitProcessor.processLogits(logits));
    }
    // 2. logit_bias.
    for (const [token, bias] of Object.entries(logit_bias ?? {}))
      logits[parseInt(token)] = logits[parseInt(token)]! + bias;
    // 3. The penalties, as mlc-llm's apply_penalty_inplace applies them.
    if (frequency_penalty != 0.0 || presence_penalty != 0.0 || repetition_penalty != 1.0) {
      for (const [token, count] of this.appearedTokensFreq) {
        logits[token] = logits[token]! - (presence_penalty! + count * frequency_penalty!);
        logits[token] = logits[token]! < 0 ? logits[token]! * repetition_penalty : logits[token]! / repetition_penalty;
      }
    }
    // 4. Softmax at the temperature, then a draw within top_p.
    temperature = Math.max(1e-6, temperature);
    const probs = softmax(logits, temperature);
    const sampledToken = sampleWithTopP(probs, Math.max(top_p, 1e-5), Math.fround(this.rng.randomFloat()));
    if (logprobs && top_logprobs! > 0)
      this.tokenLogprobArray.push(this.getTokenLogprob(probs, sampledToken, top_logprobs!));
    return sampledToken;
  }

  /** `getTokenLogprob` (14138): probabilities at the sampling temperature, tokens as their text decoded alone. */
  getTokenLogprob(probs: Float32Array, sampledToken: number, top_logprobs: number): ChatCompletionTokenLogprob {
    const topLogprobs = getTopProbs(top_logprobs, probs);
    const tokenStr = this.tokenizer.decode([sampledToken]);
    const top_logprobs_array = [];
    for (let i = 0; i < top_logprobs; i++) {
      const [id, prob] = topLogprobs[i]!;
      const text = this.tokenizer.decode([id]);
      top_logprobs_array.push({ token: text, bytes: [...utf8.encode(text)], logprob: Math.log(prob) });
    }
    return {
      token: tokenStr,
      bytes: [...utf8.encode(tokenStr)],
      logprob: Math.log(probs[sampledToken]!),
      top_logprobs: top_logprobs_array,
    };
  }

  /** The fake model's forward pass: scores for the token after those it was given. */
  #forward(): Float32Array {
    const ids = this.outputIds.slice(this.#replyStart);
    const spelled = ids.map((id) => this.tokenizer.idToToken(id)).join('');
    return this.engine.modelLogits(
      this.#preferred,
      this.tokenizer.decode(ids),
      spelled,
      this.outputIds.length,
      this.stopTokens[0]!,
    );
  }
}

function softmax(logits: Float32Array, temperature: number): Float32Array {
  let max = -Infinity;
  for (const l of logits) if (l > max) max = l;
  let sum = 0;
  const out = new Float32Array(logits.length);
  for (let i = 0; i < logits.length; i++) sum += out[i] = Math.exp((logits[i]! - max) / temperature);
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / sum;
  return out;
}

/** mlc-llm's `sample_with_top_p` (argsort, then the first token whose cumulative probability passes the draw). */
function sampleWithTopP(probs: Float32Array, topP: number, uniform: number): number {
  const order = [...probs.keys()].sort((a, b) => probs[b]! - probs[a]! || a - b);
  const kept: number[] = [];
  let cumulative = 0;
  for (const id of order) {
    if (cumulative >= topP && kept.length > 0) break;
    kept.push(id);
    cumulative += probs[id]!;
  }
  let acc = 0;
  for (const id of kept) {
    acc += probs[id]!;
    if (acc >= uniform * cumulative) return id;
  }
  return kept.at(-1)!;
}

// ---------------------------------------------------------------------------------------------------------------
// The engine: web-llm's own MLCEngine, with the fake pipeline as its loaded model.

/**
 * What web-llm prefilled for a request: whether it kept its KV cache, how many prompt tokens it counts (its
 * `usage.prompt_tokens`), which ids it fed, and how many tokens its KV cache held after (the whole prompt).
 */
export interface FakePrefill {
  reused: boolean;
  tokens: number;
  ids: number[];
  filled: number;
}

/** MLCEngine's private members the fake sets (lib/engine.d.ts declares them private). */
interface EngineInternals {
  loadedModelIdToPipeline: Map<string, FakePipeline>;
  loadedModelIdToChatConfig: Map<string, unknown>;
  loadedModelIdToModelType: Map<string, ModelType>;
  loadedModelIdToLock: Map<string, CustomLock>;
  getLLMStates: (requestName: string, modelId?: string | null) => [string, FakePipeline, FakeChatConfig];
  asyncGenerate: (
    request: object,
    model: string,
    pipeline: FakePipeline,
    config: unknown,
    genConfig: object,
    ...rest: unknown[]
  ) => unknown;
}

/** The fake model's scores: what it prefers leads by far, stopping where the reply ends. */
const PREFERRED = 40;

/**
 * web-llm's `MLCEngine`, itself, with a model loaded on the fake pipeline: `chat.completions.create`,
 * `completions.create`, `interruptGenerate` and `unload` are web-llm's own. Records what it was asked and what it
 * prefilled.
 */
export class FakeWebLLM extends MLCEngine implements WebLLMEngine {
  /** The chat completion requests, as sent (before web-llm's checks change them). */
  readonly requests: ChatCompletionRequestStreaming[] = [];
  /** The text completion requests (a raw prompt), as sent. */
  readonly completionRequests: CompletionCreateParamsStreaming[] = [];
  /** What each generation prefilled, in order. */
  readonly prefills: FakePrefill[] = [];
  /** What the model writes for a request (default: ten tokens that depend on the seed). */
  reply: (request: ChatCompletionRequestStreaming) => string[] = (request) =>
    Array.from({ length: 10 }, (_, i) => `t${i}${request.seed ?? ''} `);
  /** Scores of the model's own, in place of the reply's: the logit of each token id, given what it wrote. */
  scores: ((written: string, tokenizer: FakeTokenizer) => Float32Array | undefined) | undefined;
  /** Thrown from the forward pass of the next prefill (a failure of the GPU, after the conversation took the round). */
  failNext: Error | undefined;
  tokensGenerated = 0;
  /** Steps whose logits web-llm copied to the CPU and back for the model's logit processor. */
  logitCopies = 0;
  readonly pipeline: FakePipeline;
  readonly #lock = new CustomLock();
  readonly #requests = new WeakMap<object, ChatCompletionRequestStreaming>();

  constructor(
    readonly modelId: string,
    readonly chatConfig: FakeChatConfig,
    readonly tokenizer: FakeTokenizer,
    readonly config?: MLCEngineConfig,
  ) {
    super(config);
    this.pipeline = new FakePipeline(this, chatConfig, tokenizer, config?.logitProcessorRegistry?.get(modelId));
    const engine = this as unknown as EngineInternals;
    engine.loadedModelIdToPipeline.set(modelId, this.pipeline);
    engine.loadedModelIdToChatConfig.set(modelId, chatConfig);
    engine.loadedModelIdToModelType.set(modelId, ModelType.LLM);
    engine.loadedModelIdToLock.set(modelId, this.#lock);
    // getModelStates (18973) with its one loaded model; its `instanceof LLMChatPipeline` is the only check left out.
    engine.getLLMStates = (_requestName, model) => {
      if (model && model !== modelId) {
        throw webLLMError('SpecifiedModelNotFoundError', `Specified model ${model} is not found in loaded models.`);
      }
      return [modelId, this.pipeline, chatConfig];
    };
    // The request each generation serves, for the fake model (the pipeline sees only its generation config).
    const asyncGenerate = engine.asyncGenerate;
    engine.asyncGenerate = (request, model, pipeline, config, genConfig, ...rest) => {
      this.#requests.set(genConfig, request as ChatCompletionRequestStreaming);
      return asyncGenerate.call(this, request, model, pipeline, config, genConfig, ...rest);
    };
    const chat = this.chat.completions;
    const createChat = chat.create.bind(chat);
    (chat as { create: unknown }).create = (request: ChatCompletionRequestStreaming) => {
      this.requests.push(structuredClone(request));
      return createChat(request);
    };
    const text = this.completions;
    const createText = text.create.bind(text);
    (text as { create: unknown }).create = (request: CompletionCreateParamsStreaming) => {
      this.completionRequests.push(structuredClone(request));
      return createText(request);
    };
  }

  /** Whether a stream holds the model's lock. */
  get locked(): boolean {
    return this.#lock.acquired;
  }

  /** The window web-llm was given (`context_window_size`), which a test may narrow. */
  get contextWindow(): number {
    return this.pipeline.contextWindowSize;
  }

  set contextWindow(tokens: number) {
    this.pipeline.contextWindowSize = tokens;
  }

  /** The request a generation config belongs to; a text completion's reads as a chat of its prompt. */
  requestOf(genConfig: object): ChatCompletionRequestStreaming {
    const request = this.#requests.get(genConfig) as (ChatCompletionRequestStreaming & { prompt?: string }) | undefined;
    if (!request) throw new Error('The fake web-llm lost the request of a generation.');
    if (request.messages) return request;
    const { prompt, ...sampling } = request;
    return { ...sampling, messages: [{ role: 'user', content: String(prompt) }] } as ChatCompletionRequestStreaming;
  }

  /**
   * The fake model's logits after it wrote `written` (the reply so far, `spelled` as its tokens spell its bytes;
   * `step` output ids in): the tokens that
   * continue `preferred` (what `reply` said) the furthest lead by far (the stop token once the reply is written); a reply forced off its
   * course (a grammar masked it) has no preference left, and the stop token leads the rest by a little. Every other
   * token has a small score of its own, the same for the same step.
   */
  modelLogits(preferred: string, written: string, spelled: string, step: number, stop: number): Float32Array {
    const own = this.scores?.(written, this.tokenizer);
    if (own) return own;
    const vocab = this.tokenizer.getVocabSize();
    const logits = new Float32Array(vocab);
    for (let t = 0; t < vocab; t++) logits[t] = noise(step, t);
    // Compared byte by byte (as the vocabulary spells them): a token may end inside a character.
    const wanted = spell(preferred);
    if (!wanted.startsWith(spelled)) {
      logits[stop] = 4;
      return logits;
    }
    const rest = wanted.slice(spelled.length);
    if (rest === '') {
      logits[stop] = PREFERRED;
      return logits;
    }
    for (let t = 0; t < vocab; t++) {
      const token = this.tokenizer.strings[t]!;
      if (rest.startsWith(token)) logits[t] = PREFERRED + 10 * token.length;
    }
    return logits;
  }
}

/** A small score in [-2, 2) that depends on the step and the token only. */
function noise(step: number, token: number): number {
  let h = Math.imul(step + 1, 0x9e3779b1) ^ Math.imul(token + 1, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  h ^= h >>> 13;
  return ((h >>> 0) / 0x1_0000_0000) * 4 - 2;
}

// ---------------------------------------------------------------------------------------------------------------
// CreateMLCEngine: loading, as `reloadInternal` (18212) does it, with tvmjs' progress reports.

export interface FakeCreateOptions {
  /** Fail the load this way, while fetching the weights (a network failure, an unfit device). */
  fail?: Error;
  /** Words of the fake vocabulary beyond the default ones (each one token). */
  words?: string[];
  /** The device's WebGPU features (default: `shader-f16`). */
  features?: string[];
  /** The origin's caches (default: a fresh, empty one: a first visit). */
  caches?: MemoryCacheStorage;
  /** The weights' shards, and how many shader modules there are to compile. */
  shards?: number;
  shaderModules?: number;
}

/** `fakeCreate`'s `create`: `CreateMLCEngine`'s arguments, the engines it made, the origin's caches it wrote. */
export type FakeCreate = ((
  modelId: string,
  engineConfig: MLCEngineConfig,
  chatOpts?: ChatOptions,
) => Promise<FakeWebLLM>) & {
  engines: FakeWebLLM[];
  caches: MemoryCacheStorage;
};

/** web-llm's `cleanModelUrl` (11280). */
function cleanModelUrl(modelUrl: string): string {
  modelUrl += modelUrl.endsWith('/') ? '' : '/';
  if (!modelUrl.match(/.+\/resolve\/.+\//)) modelUrl += 'resolve/main/';
  return new URL(modelUrl).href;
}

const put = async (storage: CacheStorage, scope: string, url: string, body: BodyInit) =>
  (await storage.open(scope)).put(url, new Response(body));

/**
 * A `create` for WebLLMChatModel.load that loads a FakeWebLLM as `CreateMLCEngine` loads a model: the model looked up
 * in the app config (web-llm's `prebuiltAppConfig` by default; a model it lacks fails as web-llm fails), its chat
 * config merged with the record's overrides and the chat options, the device's features checked, its files written
 * into the origin's caches as web-llm writes them, and progress reported as web-llm reports it.
 */
export function fakeCreate(options: FakeCreateOptions = {}): FakeCreate {
  const engines: FakeWebLLM[] = [];
  const storage = installMemoryCaches(options.caches ?? new MemoryCacheStorage());
  const create = async (modelId: string, engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions) => {
    const report = engineConfig?.initProgressCallback ?? (() => {});
    const appConfig = engineConfig?.appConfig ?? prebuiltAppConfig;
    const record = appConfig.model_list.find((r: ModelRecord) => r.model_id == modelId);
    if (!record) {
      throw webLLMError(
        'ModelNotFoundError',
        `Cannot find model record in appConfig for ${modelId}. Please check if the model ID is correct and included in the model_list configuration.`,
      );
    }
    const modelUrl = cleanModelUrl(record.model);
    const tokenizer = new FakeTokenizer(options.words);
    const chatConfig = fakeChatConfig(modelId, tokenizer);
    await put(storage, 'webllm/config', `${modelUrl}mlc-chat-config.json`, JSON.stringify(chatConfig));
    const curModelConfig = { ...chatConfig, ...record.overrides, ...chatOpts } as FakeChatConfig;
    await put(storage, 'webllm/wasm', record.model_lib, new Uint8Array(8));
    const features = options.features ?? ['shader-f16'];
    for (const feature of record.required_features ?? []) {
      if (features.includes(feature)) continue;
      if (feature === 'shader-f16') {
        throw webLLMError(
          'ShaderF16SupportError',
          'This model requires WebGPU extension shader-f16, which is not enabled in this browser. ' +
            'You can try to launch Chrome Canary in command line with flag "--enable-dawn-features=allow_unsafe_apis".',
        );
      }
      throw webLLMError(
        'FeatureSupportError',
        `This model requires feature ${feature}, which is not yet supported by this browser.`,
      );
    }
    const bos = curModelConfig.conv_template.system_prefix_token_ids?.length ? '<|begin_of_text|>' : undefined;
    await put(storage, 'webllm/model', `${modelUrl}tokenizer.json`, JSON.stringify(tokenizer.json(bos)));
    await fetchTensorCache(storage, modelUrl, report, options);
    const modules = options.shaderModules ?? 40;
    // asyncLoadWebGPUPipelines (8708): a report a second at most, and the last one; a slow compile, here.
    for (const done of [Math.floor(modules / 2), modules]) {
      const progress = done / modules;
      report({
        progress,
        timeElapsed: done === modules ? 2 : 1,
        text: `Loading GPU shader modules[${done}/${modules}]: ${Math.floor(progress * 100)}% completed, ${done === modules ? 2 : 1} secs elapsed.`,
      });
    }
    report({ progress: 1, timeElapsed: 3, text: 'Finish loading on WebGPU - fake adapter' });
    const engine = new FakeWebLLM(modelId, curModelConfig, tokenizer, engineConfig);
    engines.push(engine);
    return engine;
  };
  return Object.assign(create, { engines, caches: storage });
}

/** A FakeWebLLM with `model` loaded (through `fakeCreate`), for tests of the fake itself. */
export async function fakeEngine(
  model = 'SmolLM2-360M-Instruct-q4f32_1-MLC',
  options: FakeCreateOptions = {},
  engineConfig?: MLCEngineConfig,
  chatOpts?: ChatOptions,
): Promise<FakeWebLLM> {
  const create = fakeCreate(options);
  await create(model, engineConfig ?? {}, chatOpts);
  return create.engines[0]!;
}

/** Lantern's web-llm adapter with `model` loaded on a fake engine (its `fake`), for tests of the adapter. */
export async function loadedWebLLM(
  model = 'SmolLM2-360M-Instruct-q4f32_1-MLC',
): Promise<{ model: WebLLMChatModel; fake: FakeWebLLM }> {
  const create = fakeCreate();
  const chat = await WebLLMChatModel.load({ engine: 'web-llm', model }, { id: 'm', create });
  return { model: chat, fake: create.engines[0]! };
}

/**
 * tvmjs' `fetchTensorCache` and `fetchTensorCacheInternal` (8107, 8183): tensor-cache.json, then every shard fetched
 * into the `webllm/model` cache unless all are there (`Fetching param cache[i/n]` reports), then every shard loaded
 * from it (`Loading model from cache[i/n]`): two passes from 0 to 1, or one for a cached model.
 */
async function fetchTensorCache(
  storage: CacheStorage,
  modelUrl: string,
  report: (r: { progress: number; timeElapsed: number; text: string }) => void,
  options: FakeCreateOptions,
) {
  const shards = options.shards ?? 4;
  const nbytes = 32 * 1024 * 1024;
  const list = {
    metadata: { ParamSize: shards, ParamBytes: shards * nbytes, BitsPerParam: 4 },
    records: Array.from({ length: shards }, (_, i) => ({
      dataPath: `params_shard_${i}.bin`,
      format: 'raw-shard',
      nbytes,
      records: [],
    })),
  };
  const cache = await storage.open('webllm/model');
  const jsonUrl = new URL('tensor-cache.json', modelUrl).href;
  if (!(await cache.match(jsonUrl))) await cache.put(jsonUrl, new Response(JSON.stringify(list)));
  const urls = list.records.map((r) => new URL(r.dataPath, modelUrl).href);
  const keys = new Set((await cache.keys()).map((r) => r.url));
  const cacheOnly = urls.every((url) => keys.has(url));
  const totalBytes = shards * nbytes;
  const mb = (bytes: number) => Math.ceil(bytes / (1024 * 1024)).toString();
  const percent = (bytes: number) => Math.floor((bytes * 100) / totalBytes).toString();
  report({ progress: 0, timeElapsed: 0, text: 'Start to fetch params' });
  if (!cacheOnly) {
    for (const [i, url] of urls.entries()) {
      if (options.fail) throw options.fail;
      await cache.put(url, new Response(new Uint8Array(16)));
      const fetched = (i + 1) * nbytes;
      report({
        progress: fetched / totalBytes,
        timeElapsed: i + 1,
        text:
          `Fetching param cache[${i + 1}/${shards}]: ${mb(fetched)}MB fetched. ${percent(fetched)}% completed, ${i + 1} secs elapsed.` +
          ' It can take a while when we first visit this page to populate the cache. Later refreshes will become faster.',
      });
    }
  } else if (options.fail) throw options.fail;
  for (let i = 0; i < shards; i++) {
    const loaded = (i + 1) * nbytes;
    report({
      progress: loaded / totalBytes,
      timeElapsed: shards + i + 1,
      text: `Loading model from cache[${i + 1}/${shards}]: ${mb(loaded)}MB loaded. ${percent(loaded)}% completed, ${shards + i + 1} secs elapsed.`,
    });
  }
}
