import {
  AutoImageProcessor,
  AutoModelForCausalLM,
  AutoModelForImageTextToText,
  Tensor,
  type PreTrainedModel,
  type PreTrainedTokenizer,
} from '@huggingface/transformers';
import { type MessagePart, type ChatRequest, type ChatResult } from '../../engine-interface/index.ts';
import type { RunOptions } from '../model-loaders.ts';
import { TaskQueue } from '../task-queue.ts';
import { generationTokenizer, type GenerationTokenizer } from '../../generation/generation-tokenizer.ts';
import { templateThinks } from '../../generation/token-generation.ts';
import { generateChat, type TokenChatModel } from '../../generation/chat-front-end.ts';
import { readVocabulary, type TokenizerLike } from '../../grammar/token-bytes.ts';
import { toolFormatOf, type ToolFormat } from '../../tools/tool-call-syntax.ts';
import type { ToolPrompt } from '../../tools/tool-prompt.ts';
import { imagePrompt, type ImagePrompt, type VisionParts } from './image-prompt.ts';
import { loadPretrained, progressCallback, type TransformersLoadOptions } from './load-pretrained.ts';
import { DecodeLoop, type BatchLimits, type DecodeStats } from '../../generation/decode-loop.ts';
import { checkDraftVocabulary, DraftModel } from '../../generation/draft-model.ts';
import { DEFAULT_PREFIX_CACHE_BYTES, PrefixReuse } from './prefix-reuse.ts';
import { TransformersBatch, type TransformersPrefill } from './transformers-batch.ts';
import { ControlSpellings } from '../control-text.ts';
import { encodeRevealed } from './plain-text-encoding.ts';

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
  /** Speculate from the prompt and the reply so far (prompt lookup; default true; off to measure what it saves). */
  promptLookup?: boolean | undefined;
  /** A vision-language model (transformers.js' image-text-to-text layout, LLaVA's): it reads images with the text. */
  images?: boolean | undefined;
  /**
   * A draft model for speculation (see DraftModel): a smaller causal LM with this model's tokenizer, named as the model
   * is (a hub ID, folder or URL), loaded with the same device and dtype. It proposes where prompt lookup has nothing,
   * for a request the model decodes alone.
   */
  draft?: string | undefined;
}

/**
 * A causal language model on transformers.js, generating chat replies token by token.
 *
 * transformers.js runs the model's forward pass and its key/value cache; Lantern's own decode loop (DecodeLoop) drives
 * it step by step, batching every request the model serves. Each choice is a row whose tokens the engine-agnostic
 * generation core decides (`generateTokens`: penalties, `logit_bias`, grammar mask, the draw, jump-forward, each
 * choice's pipeline). A prompt that shares a prefix with an earlier row's tokens starts from that row's cache
 * (PrefixReuse).
 */
export class TransformersChatModel {
  readonly #tokenizer: PreTrainedTokenizer;
  /** The tokenizer as the generation core uses it (its vocabulary, grammars and `logprobs` spelling made once). */
  readonly #tokens: GenerationTokenizer;
  /** The special tokens' spellings, read as text where a request supplies them. */
  readonly #controls: ControlSpellings;
  /** The chat template's source, whose characters no stand-in for a spelling may take (see ControlSpellings.hide). */
  readonly #templateSource: string;
  /** How tools reach this model: through its own chat template when it renders them, else the generic format. */
  readonly #toolFormat: ToolFormat;
  /** Whether the model has a thinking mode: its template switches it (`enable_thinking`) or writes `<think>`. */
  readonly #thinks: boolean;
  /** Whether its template renders a turn's image parts (a vision model's own template), or only text. */
  readonly #templatePlacesImages: boolean;
  readonly #loop: DecodeLoop<TransformersPrefill>;
  readonly #queue: TaskQueue;
  readonly #model: PreTrainedModel;
  /** How a vision model reads images; absent for a model of text alone. */
  readonly #vision: VisionParts | undefined;
  /** The model as the chat front end drives it (`generateChat`): its hooks. */
  readonly #chat: TokenChatModel<Prompt, RunOptions>;
  /** The context window: prompt and completion together, in tokens. */
  readonly contextLength: number;

  private constructor(
    tokenizer: PreTrainedTokenizer,
    model: PreTrainedModel,
    options: ChatModelOptions,
    vision?: VisionParts,
    draft?: PreTrainedModel,
  ) {
    this.#tokenizer = tokenizer;
    this.#controls = new ControlSpellings(tokenizer.all_special_tokens);
    this.#templateSource = JSON.stringify(tokenizer.chat_template) ?? '';
    this.#model = model;
    this.#vision = vision;
    const prefixes = new PrefixReuse(options.prefixCacheBytes);
    this.#queue = options.queue ?? new TaskQueue();
    this.#loop = new DecodeLoop(new TransformersBatch(model, this.#queue, prefixes), options.batch);
    // The draft's keys and values: its own prefix reuse, an eighth of the target's budget (its rows are smaller).
    const draftBatch =
      draft &&
      new TransformersBatch(
        draft,
        this.#queue,
        new PrefixReuse((options.prefixCacheBytes ?? DEFAULT_PREFIX_CACHE_BYTES) / 8),
      );
    // A draft follows the target by taking back what the target refused: a recurrent state cannot be taken back.
    if (draftBatch && !draftBatch.retract)
      throw new Error(`the draft model ${options.draft} keeps a recurrent state, which cannot take tokens back`);
    const drafter =
      draft &&
      draftBatch &&
      new DraftModel(
        draftBatch,
        (draft.config as { max_position_embeddings?: number }).max_position_embeddings ?? Infinity,
      );
    const contextWindow = options.contextWindow ?? Infinity;
    const config = model.config as { max_position_embeddings?: number };
    this.contextLength = Math.min(config.max_position_embeddings ?? tokenizer.model_max_length, contextWindow);
    const generationEos = (model as { generation_config?: { eos_token_id?: number | number[] | null } })
      .generation_config?.eos_token_id;
    const eos = [generationEos ?? [], tokenizer.eos_token_id ?? []].flat();
    this.#tokens = generationTokenizer({
      // Text the request supplies (a prediction, what a grammar forces), its control tokens' spellings as plain text.
      encode: (text) => this.#encodePlain(text),
      // Without `clean_up_tokenization_spaces`, which Llama-3 tokenizers turn on: it rewrites " ." as "." and " 'm" as
      // "'m" inside each decoded window, so text decoded a window at a time loses characters ("I 'm fine  he said").
      decode: (ids) =>
        ids.length ? tokenizer.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }) : '',
      tokenString: (token) =>
        tokenizer.decode([token], { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
      readVocabulary: () => readVocabulary(tokenizer as unknown as TokenizerLike),
      eos: new Set(eos.map(Number)),
    });
    const template = templateFor(tokenizer);
    this.#toolFormat = toolFormatOf(template);
    this.#thinks = templateThinks(template);
    this.#templatePlacesImages = template !== undefined && IMAGE_PARTS_TEMPLATE.test(template);
    this.#chat = {
      tokens: this.#tokens,
      toolFormat: this.#toolFormat,
      thinks: this.#thinks,
      contextLength: this.contextLength,
      // Its batch takes a request of any n (one request alone where it has more rows than BatchLimits.maxRows).
      rows: Infinity,
      generation: {
        jumpForward: options.jumpForward ?? true,
        promptLookup: options.promptLookup ?? true,
        draft: drafter,
      },
      encodeText: (text) => idsOf(this.encodeText(text)),
      encodeChat: (prompt, thinking) => idsOf(this.encodePrompt(prompt, thinking)),
      ...(vision && {
        withImages: (request: ChatRequest, ids: number[], runOptions: RunOptions) =>
          this.#withImages(vision, request, ids, runOptions),
      }),
      run: (steps, prompt, request, signal) =>
        this.#loop.run({
          ...steps,
          prompt: prompt.ids,
          ...(prompt.embed && { embed: prompt.embed }),
          scope: request.cacheScope,
          signal,
        }),
    };
  }

  /**
   * Loads tokenizer and model (from a hub ID, a folder path or a URL) in parallel; a vision model with its image
   * processor.
   */
  static async load(source: string, options: ChatModelOptions): Promise<TransformersChatModel> {
    if (!options.images) {
      const [[tokenizer, model], draft] = await Promise.all([
        loadPretrained(source, AutoModelForCausalLM, options),
        options.draft !== undefined ? loadPretrained(options.draft, AutoModelForCausalLM, options) : undefined,
      ]);
      if (draft)
        checkDraftVocabulary(tokenStrings(tokenizer), tokenStrings(draft[0]), `the draft model ${options.draft}`);
      return new TransformersChatModel(tokenizer, model, options, undefined, draft?.[1]);
    }
    if (options.draft !== undefined) throw new Error('a draft model speculates for a model of text alone');
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
   * (the template adds special tokens; the spellings of special tokens in the messages and tools are read as plain
   * text, see ControlSpellings). `enable_thinking` is the template variable of models with a thinking mode (Qwen3's
   * templates); others ignore it.
   */
  encodePrompt(prompt: ToolPrompt, thinking = false): { input_ids: Tensor; attention_mask: Tensor } {
    // Tool calls and results carry fields beyond the role and content that transformers.js' Message type declares,
    // and extra options are the template's variables; its typing lists only its own. A turn with images goes as
    // parts to a template that places them, and as text with the image token before each to one that does not (a
    // LLaVA model whose template is its language model's: `<image>\n` where the image was).
    // The request's text hidden before the image token is written in: that one is the model's, read as a token.
    const hidden = this.#controls.hide({ messages: prompt.messages, tools: prompt.tools }, this.#templateSource);
    const messages = hidden.value.messages.map((m) =>
      typeof m.content === 'string' || this.#templatePlacesImages ? m : { ...m, content: this.#flatten(m.content) },
    ) as { role: string; content: string }[];
    const options = { tokenize: false, add_generation_prompt: true, enable_thinking: thinking } as const;
    const text = this.#tokenizer.apply_chat_template(messages, {
      ...options,
      ...(hidden.value.tools && { tools: hidden.value.tools }),
    }) as string;
    if (!hidden.reveal) {
      return this.#tokenizer(text, { add_special_tokens: false }) as { input_ids: Tensor; attention_mask: Tensor };
    }
    const ids = encodeRevealed(this.#tokenizer, text, hidden.reveal);
    const shape = [1, ids.length];
    return {
      input_ids: new Tensor('int64', BigInt64Array.from(ids, BigInt), shape),
      attention_mask: new Tensor('int64', new BigInt64Array(ids.length).fill(1n), shape),
    };
  }

  /** The ids of text a request supplies, without special tokens, any special token's spelling in it read as text. */
  #encodePlain(text: string): number[] {
    const hidden = this.#controls.hide(text);
    return hidden.reveal
      ? encodeRevealed(this.#tokenizer, hidden.value, hidden.reveal)
      : this.#tokenizer.encode(text, { add_special_tokens: false });
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

  generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    return generateChat(this.#chat, request, options);
  }

  /**
   * A vision model's prompt ids with the request's images in it, as the decode loop takes them (see imagePrompt); the
   * ids alone for a request without images.
   */
  async #withImages(vision: VisionParts, request: ChatRequest, ids: number[], options: RunOptions): Promise<Prompt> {
    const images = request.messages.flatMap((m) => m.images ?? []);
    if (images.length === 0) return { ids };
    const { signal } = options;
    return imagePrompt(this.#model, vision, ids, images, {
      limits: request.imageLimits,
      access: options.imageAccess,
      signal,
      run: (task) => this.#queue.run(task, signal),
    });
  }
}

/** A prompt as the decode loop takes it: its ids, and a vision model's image inputs where it has images. */
type Prompt = Pick<ImagePrompt, 'ids'> & Partial<ImagePrompt>;

/** A tokenized prompt's ids. */
const idsOf = (encoded: { input_ids: Tensor }) => Array.from(encoded.input_ids.data as BigInt64Array, Number);

/** A tokenizer's token strings by id (its added tokens among them), to compare a draft's with the model's. */
function tokenStrings(tokenizer: PreTrainedTokenizer): string[] {
  const strings: string[] = [];
  for (const [token, id] of tokenizer.get_vocab() as unknown as Map<string, number>) strings[id] = token;
  return strings;
}

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
