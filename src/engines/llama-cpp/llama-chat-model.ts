import { EngineError, type ChatRequest, type ChatResult } from '../../engine-interface/index.ts';
import { generateChat, type TokenChatModel } from '../../generation/chat-front-end.ts';
import { DecodeLoop, type DecodeStats } from '../../generation/decode-loop.ts';
import { checkDraftVocabulary, DraftModel } from '../../generation/draft-model.ts';
import { generationTokenizer, type TokenizerBasics } from '../../generation/generation-tokenizer.ts';
import { templateThinks, type GenerationOptions } from '../../generation/token-generation.ts';
import { toolFormatOf } from '../../tools/tool-call-syntax.ts';
import type { ToolPrompt } from '../../tools/tool-prompt.ts';
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
  /** Whether a prompt starts from what a sequence holds (default true; off to compute every prompt from nothing). */
  prefixReuse?: boolean | undefined;
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
  readonly #template: ChatTemplate | undefined;
  readonly #loop: DecodeLoop<unknown>;
  readonly #draftModel: LlamaRuntimeModel | undefined;
  /** The model as the chat front end drives it (`generateChat`): its hooks. */
  readonly #chat: TokenChatModel;
  /** The vocabulary's control tokens by spelling, longest first (see controlTokens). */
  readonly #controls: ReadonlyMap<string, number>;
  readonly #spellings: ControlSpellings;
  readonly contextLength: number;

  constructor(model: LlamaRuntimeModel, options: LlamaChatOptions) {
    this.#model = model;
    const metadata = model.metadata;
    const ggml = metadata.tokenizer.ggml;
    this.contextLength = options.contextLength;
    const batch = new SequenceBatch(model.sequences, options.tokenBytes, options.prefixReuse ?? true);
    this.#loop = new DecodeLoop(batch as never, { maxRows: batch.maxRows });
    const { draft } = options;
    this.#draftModel = draft?.model;
    if (draft) checkDraftVocabulary(ggml.tokens, draft.model.metadata.tokenizer.ggml.tokens, 'the draft model');
    const tokens = generationTokenizer({ ...model.tokenizer, eos: endOfGenerationTokens(ggml) });
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
    this.#chat = {
      tokens,
      toolFormat: toolFormatOf(this.#template?.source),
      thinks: templateThinks(this.#template?.source),
      contextLength: this.contextLength,
      // One row a sequence: a runtime of one (wllama) runs a request's choices in turns.
      rows: batch.maxRows,
      generation: {
        jumpForward: options.jumpForward ?? true,
        promptLookup: options.promptLookup ?? true,
        draft:
          draft &&
          new DraftModel(new SequenceBatch(draft.model.sequences, draft.tokenBytes) as never, draft.contextLength),
        executes: batch.executes,
        nativeGrammar: options.nativeGrammar,
      },
      encodeText: (text) => this.#encodeText(text),
      encodeChat: (prompt, thinking) => this.#encodeChat(prompt, thinking),
      run: (steps, prompt, request, signal) =>
        this.#loop.run({ ...steps, prompt: prompt.ids, scope: request.cacheScope, signal }),
    };
  }

  /** What the decode loop has done since the model loaded: passes, row-steps, tokens jumped forward. */
  get stats(): Readonly<DecodeStats> {
    return this.#loop.stats;
  }

  generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    return generateChat(this.#chat, request, options);
  }

  /**
   * A raw prompt's ids: tokenized as it is, with the BOS the tokenizer adds, as a model continues text outside a chat;
   * special tokens written in it are read as such (a chat template written out), as Hugging Face tokenizers do.
   */
  async #encodeText(text: string): Promise<number[]> {
    const ids = await this.#model.tokenize(text, true);
    const bos = this.#model.bos;
    return bos === undefined ? ids : [bos, ...ids];
  }

  /**
   * The messages' ids, rendered by the GGUF's template: it writes the control tokens itself, as text, and they are
   * read as such; their spellings in the messages and tools are read as plain text (see ControlSpellings).
   */
  async #encodeChat(prompt: ToolPrompt, thinking: boolean): Promise<number[]> {
    if (!this.#template) {
      throw new EngineError('invalid_request', 'This model has no chat template: use the completions API.', {
        param: 'messages',
      });
    }
    const hidden = this.#spellings.hide({ messages: prompt.messages, tools: prompt.tools }, this.#template.source);
    const text = this.#template.render({ ...prompt, ...hidden.value }, thinking);
    return hidden.reveal
      ? await tokenizeRevealed(this.#model, this.#controls, text, hidden.reveal)
      : await this.#model.tokenize(text, true);
  }

  async dispose(): Promise<void> {
    await this.#draftModel?.dispose();
    await this.#model.dispose();
  }
}

/**
 * Bytes of keys and values one token holds (16-bit, llama.cpp's default cache type), from the GGUF's hyperparameters.
 * A hybrid's layers without attention (LFM2's convolutions, Granite 4.0-H's Mamba blocks) list 0 key/value heads in a
 * per-layer array: they hold a fixed state, not a token's keys and values.
 */
export function kvBytesPerToken(metadata: GgufMetadata): number {
  type PerLayer = number | number[] | undefined;
  const arch = metadata[metadata.general.architecture] as
    | {
        block_count?: number;
        embedding_length?: number;
        attention?: { head_count?: PerLayer; head_count_kv?: PerLayer; key_length?: number; value_length?: number };
      }
    | undefined;
  const layers = arch?.block_count;
  const width = arch?.embedding_length;
  if (!layers || !width) return 0;
  const each = (value: PerLayer) => (Array.isArray(value) ? value : Array<number | undefined>(layers).fill(value));
  const heads = each(arch.attention?.head_count);
  const kvHeads = each(arch.attention?.head_count_kv ?? arch.attention?.head_count);
  const head = Math.max(0, ...heads.map((h) => h ?? 0));
  if (!head) return 0;
  const keyLength = arch.attention?.key_length ?? width / head;
  const valueLength = arch.attention?.value_length ?? width / head;
  return kvHeads.reduce<number>((sum, h, layer) => sum + (h ?? heads[layer] ?? 0), 0) * (keyLength + valueLength) * 2;
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
