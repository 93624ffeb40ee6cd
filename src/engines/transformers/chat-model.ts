import {
  AutoModelForCausalLM,
  BaseStreamer,
  type DynamicCache,
  LogitsProcessor,
  type GenerationConfig,
  LogitsProcessorList,
  StoppingCriteria,
  StoppingCriteriaList,
  Tensor,
  type TextStreamer,
  type PreTrainedModel,
  type PreTrainedTokenizer,
} from '@huggingface/transformers';
import {
  ChatResultBuilder,
  EngineError,
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type FinishReason,
  type GeneratedTokenLogprob,
} from '../../engine/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { ChoicePipeline } from '../decoding/choice-pipeline.ts';
import { GrammarCompiler, type GrammarMask } from '../decoding/grammar-mask.ts';
import { tokenLogprob, type TokenText } from '../decoding/logprobs.ts';
import { invalidOutput } from '../decoding/output-constraint.ts';
import { adjustLogits, argmax, logitBiasOf, sampleToken, type SamplingParams } from '../decoding/sampling.ts';
import { seededRandom, type Random } from '../decoding/seeded-random.ts';
import { readVocabulary, type TokenizerLike } from '../decoding/token-bytes.ts';
import { toolFormatOf, type ToolFormat } from '../tools/tool-call-syntax.ts';
import { toolPrompt, type ToolPrompt } from '../tools/tool-prompt.ts';
import { loadPretrained, type TransformersLoadOptions } from './load-pretrained.ts';
import { PrefixReuse } from './prefix-reuse.ts';

export interface ChatModelOptions extends TransformersLoadOptions {
  /** Bytes of keys and values kept between requests for prefix reuse (default 256 MiB; 0 turns reuse off). */
  prefixCacheBytes?: number | undefined;
  /** The longest context (prompt plus reply) to accept, in tokens, where shorter than the model's own. */
  contextWindow?: number | undefined;
}

/**
 * A causal language model on transformers.js, generating chat replies token by token.
 *
 * transformers.js' own `generate()` runs the model and its KV cache; Lantern adds what it lacks, through its hooks:
 * sampling (temperature, top_p, penalties, logit_bias) with a seeded generator as a logits processor that leaves a
 * single candidate for the built-in greedy step; stop sequences and aborts as a stopping criterion; and a streamer that
 * decodes each token as it is generated. With temperature 0 the processor leaves the logits alone, so greedy output is
 * exactly transformers.js' own. `n` choices run as one batch of `n` identical prompts. A constraint (structured output)
 * is a grammar mask per choice, applied in the same processor after penalties and before the draw, so every other
 * parameter composes with it; each constrained choice is validated before its end is reported. A prompt that
 * shares a prefix with an earlier generation's tokens starts from that generation's KV cache (see PrefixReuse).
 */
export class TransformersChatModel {
  readonly #tokenizer: PreTrainedTokenizer;
  readonly #model: PreTrainedModel;
  readonly #eos: ReadonlySet<number>;
  /** How tools reach this model: through its own chat template when it renders them, else the generic format. */
  readonly #toolFormat: ToolFormat;
  /** Whether the model has a thinking mode: its template switches it (`enable_thinking`) or writes `<think>`. */
  readonly #thinks: boolean;
  readonly #prefixes: PrefixReuse;
  #grammars: Promise<GrammarCompiler> | undefined;
  #words: TokenText | undefined;
  /** The context window: prompt and completion together, in tokens. */
  readonly contextLength: number;

  private constructor(
    tokenizer: PreTrainedTokenizer,
    model: PreTrainedModel,
    prefixCacheBytes?: number,
    contextWindow = Infinity,
  ) {
    this.#tokenizer = tokenizer;
    this.#model = model;
    this.#prefixes = new PrefixReuse(prefixCacheBytes);
    const config = model.config as { max_position_embeddings?: number };
    this.contextLength = Math.min(config.max_position_embeddings ?? tokenizer.model_max_length, contextWindow);
    const generationEos = (model as { generation_config?: { eos_token_id?: number | number[] | null } })
      .generation_config?.eos_token_id;
    const eos = [generationEos ?? [], tokenizer.eos_token_id ?? []].flat();
    this.#eos = new Set(eos.map(Number));
    const template = templateFor(tokenizer);
    this.#toolFormat = toolFormatOf(template);
    this.#thinks = template !== undefined && THINKING_TEMPLATE.test(template);
  }

  /** Loads tokenizer and model (from a hub ID, a folder path or a URL) in parallel. */
  static async load(source: string, options: ChatModelOptions): Promise<TransformersChatModel> {
    const [tokenizer, model] = await loadPretrained(source, AutoModelForCausalLM, options);
    return new TransformersChatModel(tokenizer, model, options.prefixCacheBytes, options.contextWindow);
  }

  /**
   * The prompt as the model sees it: the chat template applied (with the tools, when it renders them), then tokenized
   * (the template adds special tokens). `enable_thinking` is the template variable of models with a thinking mode
   * (Qwen3's templates); others ignore it.
   */
  encodePrompt(prompt: ToolPrompt, thinking = false): { input_ids: Tensor; attention_mask: Tensor } {
    // Tool calls and results carry fields beyond the role and content that transformers.js' Message type declares,
    // and extra options are the template's variables; its typing lists only its own.
    const messages = prompt.messages as { role: string; content: string }[];
    const options = { tokenize: false, add_generation_prompt: true, enable_thinking: thinking } as const;
    const text = this.#tokenizer.apply_chat_template(messages, {
      ...options,
      ...(prompt.tools && { tools: prompt.tools }),
    });
    return this.#tokenizer(text as string, { add_special_tokens: false }) as {
      input_ids: Tensor;
      attention_mask: Tensor;
    };
  }

  /**
   * A raw prompt as the model sees it: tokenized as it is, with the special tokens the tokenizer itself adds (the BOS
   * of Llama tokenizers), as a model continues text outside a chat.
   */
  encodeText(text: string): { input_ids: Tensor; attention_mask: Tensor } {
    return this.#tokenizer(text) as { input_ids: Tensor; attention_mask: Tensor };
  }

  async generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    const { signal } = options;
    throwIfAborted(signal);
    const raw = request.prompt !== undefined;
    const tools = toolPrompt(request, this.#toolFormat);
    // A raw prompt has no template to think in.
    const thinking = this.#thinks && request.thinking === true && !raw;
    const prompt = raw ? this.encodeText(request.prompt!) : this.encodePrompt(tools, thinking);
    const promptTokens = prompt.input_ids.dims.at(-1)!;
    // A prompt that is no token at all (blank text on a tokenizer that adds no BOS) gives the model nothing to continue.
    if (promptTokens === 0) throw new EngineError('invalid_request', 'The prompt is empty.', { param: 'prompt' });
    const room = this.contextLength - promptTokens;
    if (room < 1 || (request.maxTokens ?? 1) > room) {
      const asked = request.maxTokens ?? 1;
      const what = raw ? 'prompt' : 'messages';
      throw new EngineError(
        'context_length_exceeded',
        `This model's maximum context length is ${this.contextLength} tokens. However, you requested ` +
          `${promptTokens + asked} tokens (${promptTokens} in the ${what}, ${asked} in the completion). ` +
          `Please reduce the length of the ${what} or completion.`,
        { param: what },
      );
    }
    const maxNewTokens = request.maxTokens ?? Math.min(room, request.defaultMaxTokens ?? room);

    // Without `clean_up_tokenization_spaces`, which Llama-3 tokenizers turn on: it rewrites " ." as "." and " 'm" as "'m"
    // inside each decoded window, so text decoded a window at a time loses characters ("I 'm fine  he said").
    const decode = (ids: number[]) =>
      ids.length ? this.#tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : '';
    const { constraint } = request;
    const grammars = constraint
      ? await (await this.#grammarCompiler()).matchers(constraint, request.n, this.#toolFormat.syntax, thinking)
      : undefined;
    const logprobs = request.logprobs === undefined ? undefined : { top: request.logprobs, words: this.#tokenText() };
    const results = new ChatResultBuilder({ choices: request.n, logprobs: logprobs !== undefined });
    const onEvent = (event: ChatEvent) => {
      results.add(event);
      options.onEvent?.(event);
    };
    const choices = Array.from({ length: request.n }, (_, index) => ({
      pipeline: new ChoicePipeline(index, {
        onEvent,
        stop: request.stop,
        calls: tools.calls,
        constraint,
        logprobs: logprobs !== undefined,
        decode,
        endTokens: this.#eos,
        maxTokens: maxNewTokens,
        reasoning: thinking,
      }),
      counts: new Map<number, number>(),
      grammar: grammars?.[index],
      /** The log probability of the token the sampler just drew, until the streamer hands the token over. */
      logprob: undefined as GeneratedTokenLogprob | undefined,
    }));
    const accept = (index: number, token: number) => {
      const choice = choices[index]!;
      const { pipeline } = choice;
      if (pipeline.finishReason) return; // the batch runs until every choice is done; later tokens are ignored
      if (choice.grammar && !choice.grammar.accept(token)) {
        throw invalidOutput(index, `the grammar engine rejected token ${token} that its own mask allowed`);
      }
      choice.counts.set(token, (choice.counts.get(token) ?? 0) + 1);
      pipeline.pushToken(token, choice.logprob);
    };

    const logitsProcessor = new LogitsProcessorList();
    const sampling: SamplingParams = { ...request, logitBias: request.logitBias && logitBiasOf(request.logitBias) };
    logitsProcessor.push(new SamplingProcessor(sampling, seededRandom(request.seed), choices, logprobs));
    const stoppingCriteria = new StoppingCriteriaList();
    stoppingCriteria.push(
      new StopWhen(() => choices.map((c) => c.pipeline.finishReason !== null || signal?.aborted === true)),
    );
    // Only the tokens past the longest cached prefix of the prompt are prefilled; the final cache is kept for later.
    const promptIds = Array.from(prompt.input_ids.data as BigInt64Array, Number);
    const past_key_values = await this.#prefixes.prepare(promptIds, request.n);
    const cachedPromptTokens = past_key_values.get_seq_length();
    let output: { sequences: Tensor; past_key_values: DynamicCache };
    try {
      output = (await this.#model.generate({
        ...batchOf(prompt, request.n),
        past_key_values,
        return_dict_in_generate: true,
        // As arguments, they override the model's config; they are applied last, over both of its files.
        ...ONLY_THE_REQUEST,
        max_new_tokens: maxNewTokens,
        logits_processor: logitsProcessor,
        stopping_criteria: stoppingCriteria,
        // generate() calls only put() and end(), which BaseStreamer declares; its typing asks for a TextStreamer.
        streamer: new TokenStreamer(accept) as BaseStreamer as TextStreamer,
      })) as typeof output;
    } catch (error) {
      this.#prefixes.discard(past_key_values);
      throw EngineError.from(error);
    } finally {
      grammars?.forEach((g) => g.dispose());
    }
    // Kept even after an abort: generate() returned normally, so the cache matches the tokens it holds.
    this.#prefixes.keep(output.sequences, output.past_key_values);
    throwIfAborted(signal);
    // transformers.js also stops at the model's max_position_embeddings: that is a length limit too.
    choices.forEach((choice) => choice.pipeline.end('length'));

    return results.result({
      promptTokens,
      completionTokens: choices.reduce((sum, c) => sum + c.pipeline.tokens, 0),
      ...(thinking && { reasoningTokens: choices.reduce((sum, c) => sum + c.pipeline.reasoningTokens, 0) }),
      ...(cachedPromptTokens > 0 && { cachedPromptTokens }),
    });
  }

  /** This model's grammar compiler, made on the first constrained request. */
  #grammarCompiler(): Promise<GrammarCompiler> {
    if (!this.#grammars) {
      const vocabulary = readVocabulary(this.#tokenizer as unknown as TokenizerLike);
      this.#grammars = GrammarCompiler.create(vocabulary, this.#eos);
      this.#grammars.catch(() => (this.#grammars = undefined));
    }
    return this.#grammars;
  }

  /** How `logprobs` spells this model's tokens. */
  #tokenText(): TokenText {
    if (!this.#words) {
      const { bytes } = readVocabulary(this.#tokenizer as unknown as TokenizerLike);
      this.#words = {
        text: (token) =>
          this.#tokenizer.decode([token], { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
        bytes: (token) => bytes[token] ?? new Uint8Array(),
      };
    }
    return this.#words;
  }
}

/** A template with a thinking mode: Qwen3's switch, or the `<think>` tag that DeepSeek-R1's and others write. */
const THINKING_TEMPLATE = /enable_thinking|<think>/;

/** The chat template used when tools are given (a tokenizer may name one `tool_use`), if it has one. */
function templateFor(tokenizer: PreTrainedTokenizer): string | undefined {
  try {
    const template: unknown = tokenizer.get_chat_template({ tools: [] });
    return typeof template === 'string' ? template : undefined;
  } catch {
    return undefined; // no template at all: apply_chat_template will say so
  }
}

/**
 * Every field of a generation config from which transformers.js' `generate()` builds a logits processor or picks a
 * search other than greedy, at its neutral value. `generate()` starts from the model's config.json and
 * generation_config.json and applies them whether or not it samples (Qwen2.5 ships `repetition_penalty: 1.1`), so
 * without this greedy would not be the argmax and the request's penalties would stack on hidden ones. Only the
 * request's parameters apply, through SamplingProcessor. EOS tokens stay the model's.
 */
const ONLY_THE_REQUEST = {
  do_sample: false,
  num_beams: 1,
  num_beam_groups: 1,
  num_return_sequences: 1,
  penalty_alpha: null,
  guidance_scale: null,
  temperature: 1,
  top_k: 0,
  top_p: 1,
  typical_p: 1,
  epsilon_cutoff: 0,
  eta_cutoff: 0,
  diversity_penalty: 0,
  repetition_penalty: 1,
  encoder_repetition_penalty: 1,
  no_repeat_ngram_size: 0,
  encoder_no_repeat_ngram_size: 0,
  bad_words_ids: null,
  force_words_ids: null,
  min_length: 0,
  min_new_tokens: null,
  forced_bos_token_id: null,
  forced_eos_token_id: null,
  forced_decoder_ids: null,
  suppress_tokens: null,
  begin_suppress_tokens: null,
  exponential_decay_length_penalty: null,
  renormalize_logits: false,
  remove_invalid_values: false,
  // Several defaults of transformers.js are null, which its typing does not allow; the keys are checked.
} satisfies Partial<Record<keyof GenerationConfig, unknown>> as unknown as Partial<GenerationConfig>;

/** The prompt repeated `n` times, one row per choice. */
function batchOf(prompt: { input_ids: Tensor; attention_mask: Tensor }, n: number) {
  if (n === 1) return prompt;
  const repeat = (t: Tensor) => {
    const row = t.data as BigInt64Array;
    const data = new BigInt64Array(row.length * n);
    for (let i = 0; i < n; i++) data.set(row, i * row.length);
    return new Tensor('int64', data, [n, row.length]);
  };
  return { input_ids: repeat(prompt.input_ids), attention_mask: repeat(prompt.attention_mask) };
}

/** What the sampling processor reads and writes of each choice. */
interface SampledChoice {
  counts: ReadonlyMap<number, number>;
  pipeline: { finishReason: FinishReason | null };
  grammar: GrammarMask | undefined;
  logprob: GeneratedTokenLogprob | undefined;
}

/**
 * Lantern's sampling as a transformers.js logits processor: penalties and `logit_bias`, then the choice's grammar
 * mask (after the penalties, so that none can lift a masked token), then the draw. Greedy (temperature 0) leaves the
 * logits to the built-in argmax. Otherwise it draws the token itself and masks every other one, so the built-in greedy
 * step can only pick the drawn token. With `logprobs`, each choice's token is reported from the distribution it was
 * drawn from.
 */
class SamplingProcessor extends LogitsProcessor {
  readonly #params: SamplingParams;
  readonly #random: Random;
  readonly #choices: SampledChoice[];
  readonly #logprobs: { top: number; words: TokenText } | undefined;
  #scratch: Float32Array | undefined;

  constructor(
    params: SamplingParams,
    random: Random,
    choices: SampledChoice[],
    logprobs?: { top: number; words: TokenText },
  ) {
    super();
    this.#params = params;
    this.#random = random;
    this.#choices = choices;
    this.#logprobs = logprobs;
  }

  override _call(_inputIds: bigint[][], logits: Tensor): Tensor {
    const vocab = logits.dims.at(-1)!;
    const data = logits.data as Float32Array;
    this.#scratch ??= new Float32Array(vocab);
    for (let row = 0; row < this.#choices.length; row++) {
      const choice = this.#choices[row]!;
      const rowLogits = data.subarray(row * vocab, (row + 1) * vocab);
      adjustLogits(rowLogits, this.#params, choice.counts);
      // A finished choice's row still runs with the batch; its tokens are ignored and its grammar is done.
      if (choice.pipeline.finishReason) continue;
      if (choice.grammar && !choice.grammar.apply(rowLogits)) {
        throw new EngineError('invalid_output', 'The grammar allows no next token: the constrained output is stuck.');
      }
      const greedy = this.#params.temperature === 0;
      const token = greedy ? argmax(rowLogits) : sampleToken(rowLogits, this.#params, this.#random, this.#scratch);
      if (this.#logprobs) {
        const { top, words } = this.#logprobs;
        choice.logprob = tokenLogprob(rowLogits, token, this.#params.temperature, top, words);
      }
      if (greedy) continue;
      rowLogits.fill(-Infinity);
      rowLogits[token] = 0;
    }
    return logits;
  }
}

/** A stopping criterion from a function giving, per batch row, whether that row is done. */
class StopWhen extends StoppingCriteria {
  readonly #done: () => boolean[];

  constructor(done: () => boolean[]) {
    super();
    this.#done = done;
  }

  override _call(): boolean[] {
    return this.#done();
  }
}

/** Receives each step's new token of every row; the first call carries the prompt, which is skipped. */
class TokenStreamer extends BaseStreamer {
  readonly #accept: (row: number, token: number) => void;
  #promptSeen = false;

  constructor(accept: (row: number, token: number) => void) {
    super();
    this.#accept = accept;
  }

  override put(value: bigint[][]): void {
    if (!this.#promptSeen) {
      this.#promptSeen = true;
      return;
    }
    value.forEach((row, index) => this.#accept(index, Number(row[0])));
  }

  override end(): void {}
}
