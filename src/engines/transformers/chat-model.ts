import {
  AutoImageProcessor,
  AutoModelForCausalLM,
  AutoModelForImageTextToText,
  type Tensor,
  type PreTrainedModel,
  type PreTrainedTokenizer,
} from '@huggingface/transformers';
import {
  ChatResultBuilder,
  EngineError,
  throwIfAborted,
  type MessagePart,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
  type GeneratedTokenLogprob,
} from '../../engine-interface/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { TaskQueue } from '../task-queue.ts';
import { ChoicePipeline } from '../../generation/choice-pipeline.ts';
import { GrammarCompiler } from '../../grammar/grammar-mask.ts';
import { tokenLogprob, type TokenText } from '../../generation/logprobs.ts';
import { invalidOutput } from '../../grammar/output-constraint.ts';
import { adjustLogits, argmax, logitBiasOf, sampleToken, type SamplingParams } from '../../generation/sampling.ts';
import { seededRandom } from '../../generation/seeded-random.ts';
import { readVocabulary, type TokenizerLike, type Vocabulary } from '../../grammar/token-bytes.ts';
import { toolFormatOf, type ToolFormat } from '../../tools/tool-call-syntax.ts';
import { toolPrompt, type ToolPrompt } from '../../tools/tool-prompt.ts';
import type { ImageAccess } from '../../inputs/image-input.ts';
import { imagePrompt, type ImagePrompt, type VisionParts } from './image-prompt.ts';
import { loadPretrained, progressCallback, type TransformersLoadOptions } from './load-pretrained.ts';
import { DecodeLoop, type BatchLimits, type DecodeJob, type DecodeStats } from './decode-loop.ts';
import { PrefixReuse } from './prefix-reuse.ts';

export interface ChatModelOptions extends TransformersLoadOptions {
  /** Bytes of keys and values kept between requests for prefix reuse (default 256 MiB; 0 turns reuse off). */
  prefixCacheBytes?: number | undefined;
  /** The longest context (prompt plus reply) to accept, in tokens, where shorter than the model's own. */
  contextWindow?: number | undefined;
  /** How concurrent requests share forward passes (see DecodeLoop). */
  batch?: BatchLimits | undefined;
  /** The queue every model run of this realm goes through (default: one of the model's own). */
  queue?: TaskQueue | undefined;
  /** Append the tokens a constraint forces in one pass (default true; off to measure what it saves). */
  jumpForward?: boolean | undefined;
  /** A vision-language model (transformers.js' image-text-to-text layout, LLaVA's): it reads images with the text. */
  images?: boolean | undefined;
}

/**
 * A causal language model on transformers.js, generating chat replies token by token.
 *
 * transformers.js runs the model's forward pass and its key/value cache; Lantern's own decode loop (DecodeLoop) drives
 * it step by step, batching every request the model serves. Each choice is a row: its logits get the request's
 * penalties and `logit_bias`, then its grammar mask (after the penalties, so that none can lift a masked token), then
 * the draw (greedy is the argmax; otherwise a seeded draw under temperature and top_p); each token goes through the
 * choice's pipeline (stop sequences, calls, logprobs, the end checked against the constraint). Where a constraint
 * allows exactly one continuation, its tokens are appended at once and fed in one pass (jump-forward, see
 * `#forcedTokens`). A prompt that shares a prefix with an earlier row's tokens starts from that row's cache
 * (PrefixReuse).
 */
export class TransformersChatModel {
  readonly #tokenizer: PreTrainedTokenizer;
  readonly #eos: ReadonlySet<number>;
  /** How tools reach this model: through its own chat template when it renders them, else the generic format. */
  readonly #toolFormat: ToolFormat;
  /** Whether the model has a thinking mode: its template switches it (`enable_thinking`) or writes `<think>`. */
  readonly #thinks: boolean;
  /** Whether its template renders a turn's image parts (a vision model's own template), or only text. */
  readonly #templatePlacesImages: boolean;
  readonly #loop: DecodeLoop;
  readonly #queue: TaskQueue;
  readonly #model: PreTrainedModel;
  /** How a vision model reads images; absent for a model of text alone. */
  readonly #vision: VisionParts | undefined;
  readonly #jumpForward: boolean;
  #grammars: Promise<GrammarCompiler> | undefined;
  #words: TokenText | undefined;
  #vocabulary: Vocabulary | undefined;
  /** The context window: prompt and completion together, in tokens. */
  readonly contextLength: number;

  private constructor(
    tokenizer: PreTrainedTokenizer,
    model: PreTrainedModel,
    options: ChatModelOptions,
    vision?: VisionParts,
  ) {
    this.#tokenizer = tokenizer;
    this.#model = model;
    this.#vision = vision;
    const prefixes = new PrefixReuse(options.prefixCacheBytes);
    this.#queue = options.queue ?? new TaskQueue();
    this.#loop = new DecodeLoop(model, this.#queue, prefixes, options.batch);
    this.#jumpForward = options.jumpForward ?? true;
    const contextWindow = options.contextWindow ?? Infinity;
    const config = model.config as { max_position_embeddings?: number };
    this.contextLength = Math.min(config.max_position_embeddings ?? tokenizer.model_max_length, contextWindow);
    const generationEos = (model as { generation_config?: { eos_token_id?: number | number[] | null } })
      .generation_config?.eos_token_id;
    const eos = [generationEos ?? [], tokenizer.eos_token_id ?? []].flat();
    this.#eos = new Set(eos.map(Number));
    const template = templateFor(tokenizer);
    this.#toolFormat = toolFormatOf(template);
    this.#thinks = template !== undefined && THINKING_TEMPLATE.test(template);
    this.#templatePlacesImages = template !== undefined && IMAGE_PARTS_TEMPLATE.test(template);
  }

  /**
   * Loads tokenizer and model (from a hub ID, a folder path or a URL) in parallel; a vision model with its image
   * processor.
   */
  static async load(source: string, options: ChatModelOptions): Promise<TransformersChatModel> {
    if (!options.images) {
      const [tokenizer, model] = await loadPretrained(source, AutoModelForCausalLM, options);
      return new TransformersChatModel(tokenizer, model, options);
    }
    const [[tokenizer, model], processor] = await Promise.all([
      loadPretrained(source, AutoModelForImageTextToText, options),
      AutoImageProcessor.from_pretrained(source, { progress_callback: progressCallback(options) }),
    ]);
    const config = model.config as { image_token_index?: number; image_token_id?: number };
    const imageToken = config.image_token_index ?? config.image_token_id;
    if (imageToken === undefined) throw new Error('its config.json names no image token (image_token_index)');
    const vision: VisionParts = {
      processor: (images) => processor(images) as Promise<{ pixel_values: Tensor }>,
      imageToken,
    };
    return new TransformersChatModel(tokenizer, model, options, vision);
  }

  /** What the decode loop has done since the model loaded: passes, row-steps, tokens jumped forward. */
  get stats(): Readonly<DecodeStats> {
    return this.#loop.stats;
  }

  /**
   * The prompt as the model sees it: the chat template applied (with the tools, when it renders them), then tokenized
   * (the template adds special tokens). `enable_thinking` is the template variable of models with a thinking mode
   * (Qwen3's templates); others ignore it.
   */
  encodePrompt(prompt: ToolPrompt, thinking = false): { input_ids: Tensor; attention_mask: Tensor } {
    // Tool calls and results carry fields beyond the role and content that transformers.js' Message type declares,
    // and extra options are the template's variables; its typing lists only its own. A turn with images goes as
    // parts to a template that places them, and as text with the image token before each to one that does not (a
    // LLaVA model whose template is its language model's: `<image>\n` where the image was).
    const messages = prompt.messages.map((m) =>
      typeof m.content === 'string' || this.#templatePlacesImages ? m : { ...m, content: this.#flatten(m.content) },
    ) as { role: string; content: string }[];
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

  /** A turn's parts as text: the model's image token and a line break where each image was. */
  #flatten(parts: readonly MessagePart[]): string {
    const image = this.#tokenizer.decode([this.#vision?.imageToken ?? 0], { skip_special_tokens: false });
    return parts.map((part) => (part.type === 'text' ? part.text : `${image}\n`)).join('');
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
    const withImages = await this.#withImages(
      request,
      Array.from(prompt.input_ids.data as BigInt64Array, Number),
      signal,
      options.imageAccess,
    );
    const promptTokens = withImages.ids.length;
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
      /** The tokens generated so far (jump-forward retokenizes the last of them). */
      tokens: [] as number[],
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

    const sampling: SamplingParams = { ...request, logitBias: request.logitBias && logitBiasOf(request.logitBias) };
    const greedy = sampling.temperature === 0;
    const random = seededRandom(request.seed);
    let scratch: Float32Array | undefined;
    const job: DecodeJob = {
      prompt: withImages.ids,
      ...(withImages.embed && { embed: withImages.embed }),
      rows: request.n,
      scope: request.cacheScope,
      maxNewTokens,
      signal,
      next: (row, logits, mayJump) => {
        const choice = choices[row]!;
        adjustLogits(logits, sampling, choice.counts);
        if (choice.grammar && !choice.grammar.apply(logits)) {
          throw new EngineError('invalid_output', 'The grammar allows no next token: the constrained output is stuck.');
        }
        scratch ??= new Float32Array(logits.length);
        const token = greedy ? argmax(logits) : sampleToken(logits, sampling, random, scratch);
        accept(row, token, logprobs && tokenLogprob(logits, token, sampling.temperature, logprobs.top, logprobs.words));
        const tokens = [token];
        if (!mayJump || !this.#jumpForward || !choice.grammar) return tokens;
        for (const forced of this.#forcedTokens(choice.grammar, choice.tokens)) {
          if (choice.pipeline.finishReason) break;
          accept(row, forced, logprobs && forcedLogprob(forced, logprobs.top, logprobs.words));
          tokens.push(forced);
        }
        return tokens;
      },
      done: (row) => choices[row]!.pipeline.finishReason !== null,
    };
    let cachedPromptTokens: number;
    try {
      ({ cachedPromptTokens } = await this.#loop.run(job));
    } catch (error) {
      throw EngineError.from(error);
    } finally {
      grammars?.forEach((g) => g.dispose());
    }
    throwIfAborted(signal);
    choices.forEach((choice) => choice.pipeline.end('length'));

    return results.result({
      promptTokens,
      completionTokens: choices.reduce((sum, c) => sum + c.pipeline.tokens, 0),
      ...(thinking && { reasoningTokens: choices.reduce((sum, c) => sum + c.pipeline.reasoningTokens, 0) }),
      ...(cachedPromptTokens > 0 && { cachedPromptTokens }),
    });
  }

  /**
   * The prompt's ids with the request's images in it, as the decode loop takes them (see imagePrompt); the ids alone
   * for a request without images.
   */
  async #withImages(
    request: ChatRequest,
    ids: number[],
    signal: AbortSignal | undefined,
    access: ImageAccess | undefined,
  ): Promise<Pick<ImagePrompt, 'ids'> & Partial<ImagePrompt>> {
    const images = request.messages.flatMap((m) => m.images ?? []);
    if (images.length === 0) return { ids };
    if (!this.#vision) {
      throw new EngineError('invalid_request', 'This model reads text only: it cannot see images.', {
        param: images[0]!.param,
      });
    }
    return imagePrompt(this.#model, this.#vision, ids, images, {
      limits: request.imageLimits,
      access,
      signal,
      run: (task) => this.#queue.run(task, signal),
    });
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
  #forcedTokens(grammar: { forcedText(): string }, generated: readonly number[]): number[] {
    const text = grammar.forcedText();
    if (!text) return [];
    const vocabulary = this.#readVocabulary();
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
    const ids = this.#tokenizer.encode(whole, { add_special_tokens: false });
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
      const extended = this.#tokenizer.encode(whole + next, { add_special_tokens: false });
      let same = first;
      while (same < stable && extended[same] === ids[same]) same++;
      stable = same;
      if (stable === first) return [];
    }
    const forced = ids.slice(first, stable);
    const special = forced.findIndex((t) => vocabulary.special.has(t));
    return special >= 0 ? forced.slice(0, special) : forced;
  }

  #readVocabulary(): Vocabulary {
    this.#vocabulary ??= readVocabulary(this.#tokenizer as unknown as TokenizerLike);
    return this.#vocabulary;
  }

  /** This model's grammar compiler, made on the first constrained request. */
  #grammarCompiler(): Promise<GrammarCompiler> {
    if (!this.#grammars) {
      this.#grammars = GrammarCompiler.create(this.#readVocabulary(), this.#eos);
      this.#grammars.catch(() => (this.#grammars = undefined));
    }
    return this.#grammars;
  }

  /** How `logprobs` spells this model's tokens. */
  #tokenText(): TokenText {
    if (!this.#words) {
      const { bytes } = this.#readVocabulary();
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

/** A template that renders image parts: it compares a part's type with `image` (SmolVLM's, Qwen2-VL's, tiny-vision's). */
const IMAGE_PARTS_TEMPLATE = /['"]image['"]/;

/** The chat template used when tools are given (a tokenizer may name one `tool_use`), if it has one. */
function templateFor(tokenizer: PreTrainedTokenizer): string | undefined {
  try {
    const template: unknown = tokenizer.get_chat_template({ tools: [] });
    return typeof template === 'string' ? template : undefined;
  } catch {
    return undefined; // no template at all: apply_chat_template will say so
  }
}

/** Generated tokens whose text is retokenized with the forced text (see `#forcedTokens`). */
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
function forcedLogprob(token: number, top: number, words: TokenText): GeneratedTokenLogprob {
  const entry = { token: words.text(token), logprob: 0, bytes: [...words.bytes(token)] };
  return { ...entry, topLogprobs: top > 0 ? [entry] : [] };
}
