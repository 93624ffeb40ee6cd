import {
  EngineError,
  throwIfAborted,
  type ChatEvent,
  type ChatRequest,
  type ChatResult,
} from '../engine-interface/index.ts';
import type { ToolFormat } from '../tools/tool-call-syntax.ts';
import { toolPrompt, type ToolPrompt } from '../tools/tool-prompt.ts';
import { choicesInTurns } from './choices-in-turns.ts';
import { sharedPrefix } from './prefix-cache.ts';
import type { GenerationTokenizer } from './generation-tokenizer.ts';
import { generateTokens, requestThinks, type GenerationOptions, type GenerationSteps } from './token-generation.ts';

/** What a chat model's template makes of requests: how tools reach it, and whether it has a thinking mode. */
export interface ChatTemplateTraits {
  readonly toolFormat: ToolFormat;
  /** The model has a thinking mode (see `templateThinks`). */
  readonly thinks: boolean;
}

/** A request as a chat model's template takes it: its messages with the tools written in, and whether it thinks. */
export interface ChatTurn {
  /** The messages and tools as the template renders them, and how calls are read out of the reply. */
  readonly tools: ToolPrompt;
  /** The model thinks first (see `requestThinks`): its thought is reported apart and counted. */
  readonly thinking: boolean;
}

/** The same for every chat model: the request's tools in the model's format, and whether it thinks. */
export function chatTurn(request: ChatRequest, model: ChatTemplateTraits): ChatTurn {
  return { tools: toolPrompt(request, model.toolFormat), thinking: requestThinks(model.thinks, request) };
}

/** What every call of a chat model takes. */
export interface ChatCallOptions {
  signal?: AbortSignal | undefined;
  onEvent?: ((event: ChatEvent) => void) | undefined;
}

/** A prompt as an engine's decode loop takes it: its ids (an image's positions among them, where it has images). */
export interface PromptIds {
  readonly ids: readonly number[];
}

/**
 * What a chat engine whose tokens the core decides (`generateTokens`) writes: its tokenizer, template traits, context
 * and capacity, how it tokenizes a prompt, and how it runs a request's rows. The front end (`generateChat`) does the
 * rest the same for every such engine.
 */
export interface TokenChatModel<
  Prompt extends PromptIds = PromptIds,
  Options extends ChatCallOptions = ChatCallOptions,
> extends ChatTemplateTraits {
  readonly tokens: GenerationTokenizer;
  /** The context window: prompt and completion together, in tokens. */
  readonly contextLength: number;
  /**
   * The most choices it decodes at once (Infinity where its batch takes any number). A request of more runs its choices
   * in turns where it decodes one, and is refused (400 on `n`) where it decodes several.
   */
  readonly rows: number;
  /** How it generates, as GenerationOptions names it: speculation, jump-forward, what it draws natively. */
  readonly generation: Pick<GenerationOptions, 'jumpForward' | 'promptLookup' | 'draft' | 'executes' | 'nativeGrammar'>;
  /** A raw prompt's ids: as a model continues text outside a chat (the BOS its tokenizer adds included). */
  encodeText(text: string): Promise<number[]> | number[];
  /** The messages' ids: the chat template applied (the tools in it, where it renders them), the thinking mode set. */
  encodeChat(prompt: ToolPrompt, thinking: boolean): Promise<number[]> | number[];
  /**
   * The prompt with the request's images in it (checked within their limits); absent for a model of text alone, which
   * the front end refuses a request with images for, naming the image's parameter.
   */
  withImages?(request: ChatRequest, ids: number[], options: Options): Promise<Prompt>;
  /** Runs the rows of a request (its decode loop): resolves with how many prompt tokens came from a cache. */
  run(
    steps: GenerationSteps,
    prompt: Prompt,
    request: ChatRequest,
    signal: AbortSignal | undefined,
  ): Promise<{
    cachedPromptTokens: number;
  }>;
}

/**
 * Generates a chat request on an engine whose tokens the core decides: the one front end every such chat model goes
 * through. It refuses images a model cannot see, runs the choices in turns where the engine decodes fewer rows than
 * the request has (`choicesInTurns`), writes the tools into the prompt and sets the thinking mode (`chatTurn`),
 * tokenizes a raw prompt or the rendered messages (the engine's hooks), and hands the rest to `generateTokens`.
 */
export async function generateChat<Prompt extends PromptIds, Options extends ChatCallOptions>(
  model: TokenChatModel<Prompt, Options>,
  request: ChatRequest,
  options: Options,
): Promise<ChatResult> {
  const { signal } = options;
  throwIfAborted(signal);
  if (!model.withImages) refuseImages(request);
  if (request.n > model.rows) {
    if (model.rows > 1) {
      throw new EngineError(
        'invalid_request',
        `This model decodes at most ${model.rows} choices at once: ask for fewer (n).`,
        { param: 'n' },
      );
    }
    return choicesInTurns(request, options, (turn, _choice, turnOptions) =>
      generateChat(model, turn, { ...options, ...turnOptions }),
    );
  }
  const { tools, thinking } = chatTurn(request, model);
  const ids =
    request.prompt !== undefined ? await model.encodeText(request.prompt) : await model.encodeChat(tools, thinking);
  const prompt = model.withImages ? await model.withImages(request, ids, options) : ({ ids } as PromptIds as Prompt);
  const generation: GenerationOptions = {
    ...model.generation,
    promptTokens: prompt.ids.length,
    contextLength: model.contextLength,
    thinking,
    calls: tools.calls,
    syntax: model.toolFormat.syntax,
    signal,
    onEvent: options.onEvent,
  };
  const checkpoints = request.prompt === undefined ? newestTurnStart(model, tools, thinking, prompt.ids) : undefined;
  return generateTokens(model.tokens, request, generation, (steps) =>
    model.run(checkpoints ? { ...steps, checkpoints } : steps, prompt, request, signal),
  );
}

/**
 * Where the prompt's newest message starts, as a checkpoint position for an engine that keeps checkpoints (asked only
 * by such an engine: DecodeJob.checkpoints): the longest prefix the prompt shares with the same conversation
 * without its newest message. A later prompt that edits that message, or another conversation with the same
 * system prompt, starts there. None for a conversation of one message.
 */
function newestTurnStart(
  model: Pick<TokenChatModel, 'encodeChat'>,
  tools: ToolPrompt,
  thinking: boolean,
  ids: readonly number[],
): (() => Promise<number[]>) | undefined {
  if (tools.messages.length < 2) return undefined;
  return async () => {
    const earlier = await model.encodeChat({ ...tools, messages: tools.messages.slice(0, -1) }, thinking);
    return [sharedPrefix(earlier, ids)];
  };
}

/** Refuses a request with images, for a model of text alone, naming the first image's parameter. */
export function refuseImages(request: ChatRequest): void {
  const image = request.messages.flatMap((m) => m.images ?? [])[0];
  if (image) {
    throw new EngineError('invalid_request', 'This model reads text only: it cannot see images.', {
      param: image.param,
    });
  }
}
