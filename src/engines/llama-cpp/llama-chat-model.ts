import {
  EngineError,
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
} from '../../engine-interface/index.ts';
import { DecodeLoop, rowSeed, type DecodeStats } from '../../generation/decode-loop.ts';
import { checkDraftVocabulary, DraftModel } from '../../generation/draft-model.ts';
import {
  generationTokenizer,
  type GenerationTokenizer,
  type TokenizerBasics,
} from '../../generation/generation-tokenizer.ts';
import { seed31 } from '../../generation/seeded-random.ts';
import {
  generateTokens,
  requestThinks,
  templateThinks,
  type GenerationOptions,
} from '../../generation/token-generation.ts';
import type { NativeSampling } from '../../generation/sampling-plan.ts';
import { toolFormatOf, type ToolFormat } from '../../tools/tool-call-syntax.ts';
import { toolPrompt } from '../../tools/tool-prompt.ts';
import type { RunOptions } from '../model-loaders.ts';
import { ControlSpellings } from '../control-text.ts';
import { ChatTemplate } from './gguf-chat-template.ts';
import { type GgufTokenizer } from './gguf-vocabulary.ts';
import { SequenceBatch, type LlamaSequence } from './sequence-batch.ts';

/** A GGUF's metadata, as far as a chat model reads it (node-llama-cpp's nesting of its dotted keys). */
export interface GgufMetadata {
  general: { architecture: string; name?: string };
  tokenizer: {
    ggml: GgufTokenizer & { eos_token_id?: number; bos_token_id?: number; eot_token_id?: number };
    chat_template?: unknown;
  };
  [architecture: string]: unknown;
}

/** What a llama.cpp runtime (node-llama-cpp, wllama) gives a chat model of one loaded GGUF. */
export interface LlamaRuntimeModel {
  metadata: GgufMetadata;
  /** The context's sequences, each holding up to `contextLength` tokens. */
  sequences: readonly LlamaSequence[];
  /** The ids of `text`; with `special`, special tokens written in it are read as such. */
  tokenize(text: string, special: boolean): Promise<number[]> | number[];
  /** The tokenizer as generation reads it (see TokenizerBasics; the end tokens are added from the metadata). */
  tokenizer: Omit<TokenizerBasics, 'eos'>;
  /** The BOS token a raw prompt starts with, where the tokenizer adds one. */
  bos: number | undefined;
  dispose(): Promise<void>;
}

export interface LlamaChatOptions {
  /** The longest context (prompt plus reply) each sequence holds. */
  contextLength: number;
  /** Bytes of keys and values one token holds (see {@link kvBytesPerToken}). */
  tokenBytes: number;
  /**
   * Append the tokens a constraint forces in one pass (default true; off to measure what it saves, and where the
   * runtime cannot tokenize synchronously, as jump-forward retokenizes within a step).
   */
  jumpForward?: boolean | undefined;
  /** Speculate from the prompt and the reply so far (prompt lookup), where the runtime checks proposals (default true). */
  promptLookup?: boolean | undefined;
  /**
   * A draft model for speculation (see DraftModel): a smaller GGUF with this one's tokenizer, loaded with one sequence.
   * It proposes where prompt lookup has nothing, for a request decoded alone, where the runtime checks proposals.
   */
  draft?: { model: LlamaRuntimeModel; tokenBytes: number; contextLength: number } | undefined;
  /**
   * A constraint as llama.cpp GBNF, for a runtime whose sampler constrains (see GenerationOptions.nativeGrammar):
   * without it, constrained requests take the logits path and Lantern's grammar mask.
   */
  nativeGrammar?: GenerationOptions['nativeGrammar'];
}

/**
 * A GGUF chat model on llama.cpp (node-llama-cpp in Node, wllama in browsers), generating replies token by token
 * through Lantern's generation core: llama.cpp runs the forward passes of its sequences and keeps their keys and values;
 * the core decides every token (penalties, `logit_bias`, the grammar mask, the draw, jump-forward, stops, calls,
 * logprobs), exactly as it does for transformers.js. The chat template is the GGUF's own (`tokenizer.chat_template`),
 * rendered with the same Jinja as transformers.js renders a tokenizer's.
 */
export class LlamaChatModel {
  readonly #model: LlamaRuntimeModel;
  readonly #tokens: GenerationTokenizer;
  readonly #template: ChatTemplate | undefined;
  readonly #toolFormat: ToolFormat;
  readonly #thinks: boolean;
  readonly #loop: DecodeLoop<unknown>;
  readonly #sequences: number;
  readonly #jumpForward: boolean;
  readonly #promptLookup: boolean;
  readonly #draft: DraftModel<unknown> | undefined;
  readonly #draftModel: LlamaRuntimeModel | undefined;
  /** What of a sampling plan the runtime's sampler draws itself. */
  readonly #executes: NativeSampling | undefined;
  readonly #nativeGrammar: LlamaChatOptions['nativeGrammar'];
  /** The vocabulary's control tokens by spelling, longest first (see controlTokens). */
  readonly #controls: ReadonlyMap<string, number>;
  readonly #spellings: ControlSpellings;
  readonly contextLength: number;

  constructor(model: LlamaRuntimeModel, options: LlamaChatOptions) {
    this.#model = model;
    const metadata = model.metadata;
    const ggml = metadata.tokenizer.ggml;
    this.contextLength = options.contextLength;
    const batch = new SequenceBatch(model.sequences, options.tokenBytes);
    this.#loop = new DecodeLoop(batch as never, { maxRows: batch.maxRows });
    this.#sequences = batch.maxRows;
    this.#executes = batch.executes;
    this.#nativeGrammar = options.nativeGrammar;
    this.#jumpForward = options.jumpForward ?? true;
    this.#promptLookup = options.promptLookup ?? true;
    const { draft } = options;
    this.#draftModel = draft?.model;
    if (draft) checkDraftVocabulary(ggml.tokens, draft.model.metadata.tokenizer.ggml.tokens, 'the draft model');
    this.#draft =
      draft && new DraftModel(new SequenceBatch(draft.model.sequences, draft.tokenBytes) as never, draft.contextLength);
    this.#tokens = generationTokenizer({ ...model.tokenizer, eos: endOfGenerationTokens(ggml) });
    this.#controls = controlTokens(ggml);
    this.#spellings = new ControlSpellings(this.#controls.keys());
    const source = metadata.tokenizer.chat_template;
    this.#template =
      typeof source === 'string'
        ? new ChatTemplate(source, {
            bos_token: tokenText(ggml, ggml.bos_token_id),
            eos_token: tokenText(ggml, ggml.eos_token_id),
          })
        : undefined;
    this.#toolFormat = toolFormatOf(this.#template?.source);
    this.#thinks = templateThinks(this.#template?.source);
  }

  /** What the decode loop has done since the model loaded: passes, row-steps, tokens jumped forward. */
  get stats(): Readonly<DecodeStats> {
    return this.#loop.stats;
  }

  async generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    const { signal } = options;
    throwIfAborted(signal);
    const images = request.messages.flatMap((m) => m.images ?? []);
    if (images.length > 0) {
      throw new EngineError('invalid_request', 'This model reads text only: it cannot see images.', {
        param: images[0]!.param,
      });
    }
    if (request.n > this.#sequences) {
      if (this.#sequences > 1) {
        throw new EngineError(
          'invalid_request',
          `This model decodes at most ${this.#sequences} choices at once: ask for fewer (n).`,
          { param: 'n' },
        );
      }
      return this.#inTurn(request, options);
    }
    const raw = request.prompt !== undefined;
    const tools = toolPrompt(request, this.#toolFormat);
    const thinking = requestThinks(this.#thinks, request);
    let prompt: number[];
    if (raw) {
      // A raw prompt is tokenized as it is, with the BOS the tokenizer adds, as a model continues text outside a chat;
      // special tokens written in it are read as such (a chat template written out), as Hugging Face tokenizers do.
      const ids = await this.#model.tokenize(request.prompt!, true);
      const bos = this.#model.bos;
      prompt = bos === undefined ? ids : [bos, ...ids];
    } else {
      if (!this.#template) {
        throw new EngineError('invalid_request', 'This model has no chat template: use the completions API.', {
          param: 'messages',
        });
      }
      // The template writes the control tokens itself, as text, and they are read as such; their spellings in the
      // messages and tools are read as plain text (see ControlSpellings).
      const hidden = this.#spellings.hide({ messages: tools.messages, tools: tools.tools }, this.#template.source);
      const text = this.#template.render({ ...tools, ...hidden.value }, thinking);
      prompt = hidden.reveal
        ? await tokenizeRevealed(this.#model, this.#controls, text, hidden.reveal)
        : await this.#model.tokenize(text, true);
    }
    const generation = {
      promptTokens: prompt.length,
      contextLength: this.contextLength,
      thinking,
      calls: tools.calls,
      syntax: this.#toolFormat.syntax,
      jumpForward: this.#jumpForward,
      promptLookup: this.#promptLookup,
      draft: this.#draft,
      executes: this.#executes,
      nativeGrammar: this.#nativeGrammar,
      signal,
      onEvent: options.onEvent,
    };
    return generateTokens(this.#tokens, request, generation, (steps) =>
      this.#loop.run({ ...steps, prompt, scope: request.cacheScope, signal }),
    );
  }

  /**
   * A request's choices one after another, on a runtime of one sequence (wllama): each choice a request of one, its
   * seed derived from the request's and the choice's index (so that seeded choices differ, and repeat), from the
   * prompt the first left in the sequence (prefix reuse). Usage counts the prompt once, and what came from the cache
   * as the first choice found it.
   */
  async #inTurn(request: ChatRequest, options: RunOptions): Promise<ChatResult> {
    const results: ChatResult[] = [];
    // A 31-bit seed from all of the request's (a safe integer), as its native draws take theirs, then one per choice.
    const base = request.seed === undefined ? undefined : seed31(request.seed);
    for (let choice = 0; choice < request.n; choice++) {
      const seed = base === undefined ? undefined : rowSeed(base, choice);
      const onEvent = options.onEvent && ((event: ChatEvent) => options.onEvent!({ ...event, choice }));
      results.push(
        await this.generate({ ...request, n: 1, ...(seed !== undefined && { seed }) }, { ...options, onEvent }),
      );
    }
    const [first] = results;
    const sum = (count: (usage: ChatResult['usage']) => number | undefined) =>
      results.reduce((total, result) => total + (count(result.usage) ?? 0), 0);
    return {
      choices: results.map((result) => result.choices[0]!),
      usage: {
        promptTokens: first!.usage.promptTokens,
        completionTokens: sum((usage) => usage.completionTokens),
        ...(first!.usage.reasoningTokens !== undefined && { reasoningTokens: sum((usage) => usage.reasoningTokens) }),
        ...(first!.usage.cachedPromptTokens !== undefined && { cachedPromptTokens: first!.usage.cachedPromptTokens }),
      },
    };
  }

  async dispose(): Promise<void> {
    await this.#draftModel?.dispose();
    await this.#model.dispose();
  }
}

/** Bytes of keys and values one token holds (16-bit, llama.cpp's default cache type), from the GGUF's hyperparameters. */
export function kvBytesPerToken(metadata: GgufMetadata): number {
  const arch = metadata[metadata.general.architecture] as
    | {
        block_count?: number;
        embedding_length?: number;
        attention?: { head_count?: number; head_count_kv?: number; key_length?: number; value_length?: number };
      }
    | undefined;
  const layers = arch?.block_count;
  const heads = arch?.attention?.head_count;
  const kvHeads = arch?.attention?.head_count_kv ?? heads;
  const width = arch?.embedding_length;
  if (!layers || !heads || !kvHeads || !width) return 0;
  const keyLength = arch.attention?.key_length ?? width / heads;
  const valueLength = arch.attention?.value_length ?? width / heads;
  return layers * kvHeads * (keyLength + valueLength) * 2;
}

/**
 * The vocabulary's control tokens (and its unknown token) by spelling, longest first: the tokens llama.cpp reads in a
 * text only when told to parse special tokens (its user-defined ones, Qwen's `<tool_call>`, it reads in any text).
 */
export function controlTokens(ggml: GgufTokenizer): Map<string, number> {
  const types = ggml.token_type ?? [];
  const controls: [string, number][] = [];
  ggml.tokens.forEach((text, id) => {
    if ((types[id] === UNKNOWN || types[id] === CONTROL) && text.length > 0) controls.push([text, id]);
  });
  return new Map(controls.sort(([a], [b]) => b.length - a.length));
}
/** GGUF token types (llama.cpp's `llama_token_type`). */
const UNKNOWN = 2;
const CONTROL = 3;

/**
 * The ids of a rendered prompt whose supplied strings had their control tokens' spellings hidden (see
 * ControlSpellings): split where it spells a control token, as llama.cpp splits a text with special tokens parsed
 * (longest spelling first, each text between read on its own), each text between tokenized without special tokens once
 * its stand-ins are spellings again. A supplied `<|im_end|>` is so read as the plain text it is.
 */
export async function tokenizeRevealed(
  model: Pick<LlamaRuntimeModel, 'tokenize'>,
  controls: ReadonlyMap<string, number>,
  text: string,
  reveal: (text: string) => string,
): Promise<number[]> {
  let pieces: (string | number)[] = [text];
  for (const [spelling, id] of controls) {
    pieces = pieces.flatMap((piece) =>
      typeof piece === 'number' ? [piece] : piece.split(spelling).flatMap((part, i) => (i === 0 ? [part] : [id, part])),
    );
  }
  const ids: number[] = [];
  for (const piece of pieces) {
    if (typeof piece === 'number') ids.push(piece);
    else if (piece !== '') ids.push(...(await model.tokenize(reveal(piece), false)));
  }
  return ids;
}

/** A special token's text, for a template's `bos_token` and `eos_token`. */
function tokenText(ggml: GgufTokenizer, id: number | undefined): string {
  return id === undefined ? '' : (ggml.tokens[id] ?? '');
}

/**
 * The tokens that end a reply: the EOS, the EOT, and the control tokens that end a turn (`<|im_end|>`, `<|eot_id|>`,
 * `<end_of_turn>`), as llama.cpp's vocabulary loader gathers its end-of-generation set, by their text.
 */
export function endOfGenerationTokens(ggml: GgufMetadata['tokenizer']['ggml']): Set<number> {
  const ends = new Set<number>();
  for (const id of [ggml.eos_token_id, ggml.eot_token_id]) if (id !== undefined) ends.add(id);
  const types = ggml.token_type ?? [];
  ggml.tokens.forEach((text, id) => {
    if (types[id] === 3 && END_OF_TURN.has(text)) ends.add(id);
  });
  return ends;
}
/** The end-of-turn tokens llama.cpp's vocabulary loader adds to its end-of-generation set, by their text. */
const END_OF_TURN = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '<EOT>',
  '_<EOT>',
  '<｜end▁of▁sentence｜>',
  '<|return|>',
  '<|call|>',
]);
