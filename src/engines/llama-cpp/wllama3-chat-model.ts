import {
  EngineError,
  throwIfAborted,
  type ChatRequest,
  type ChatResult,
  type OutputConstraint,
} from '../../engine-interface/index.ts';
import {
  generateNativeChoices,
  type NativeRowPlan,
  type NativeRowPrompt,
  type NativeRowSink,
} from '../../generation/native-choices.ts';
import { chatTurn, refuseImages, type ChatTurn } from '../../generation/chat-front-end.ts';
import { templateThinks, type GenerationOptions } from '../../generation/token-generation.ts';
import { tokensText } from '../../grammar/token-bytes.ts';
import { toolFormatOf, type ToolFormat } from '../../tools/tool-call-syntax.ts';
import { ControlSpellings } from '../control-text.ts';
import type { RunOptions } from '../model-loaders.ts';
import { ChatTemplate } from './gguf-chat-template.ts';
import { ggufVocabulary } from './gguf-vocabulary.ts';
import { controlTokens } from './llama-chat-model.ts';
import type { Wllama3Model } from './wllama3-runtime.ts';
import { wllama3Gap, type Wllama3Counts, type Wllama3Plan } from './wllama3-request.ts';

/**
 * A GGUF chat model on wllama 3, behind the engine interface: an engine that samples itself and streams text, driven
 * by the core's whole-row path (`generateNativeChoices`), as web-llm is. The core compiles the request's plan and runs
 * its choices as rows; each row goes to wllama 3 as one completion (wllama3-request.ts: sampling, seed, bias, the
 * constraint as GBNF) and its streamed text goes through the same choice pipeline as every engine's (stops, calls,
 * reasoning, the final constraint check). Usage is llama.cpp's own count, which every chunk carries.
 *
 * wllama 3 has no logits path: a plan it cannot run as Lantern defines it (wllama3Gap), or a constraint that has no
 * GBNF, is refused with a 400 naming its parameter before anything runs. It reads prompts as text and parses the
 * control tokens written in it, so a message that spells one of them is refused too, where the logits path reads it as
 * plain text (ControlSpellings).
 */
export class Wllama3ChatModel {
  readonly #model: Wllama3Model;
  readonly #template: ChatTemplate | undefined;
  /** How tools reach the template, and whether it has a thinking mode (ChatTemplateTraits, for chatTurn). */
  readonly toolFormat: ToolFormat;
  readonly thinks: boolean;
  readonly #spellings: ControlSpellings;
  readonly #nativeGrammar: NonNullable<GenerationOptions['nativeGrammar']>;
  readonly #decode: (ids: number[]) => string;
  readonly #vocabularySize: number;
  readonly contextLength: number;

  constructor(model: Wllama3Model, nativeGrammar: NonNullable<GenerationOptions['nativeGrammar']>) {
    this.#model = model;
    this.#nativeGrammar = nativeGrammar;
    this.contextLength = model.contextLength;
    const ggml = model.metadata.tokenizer.ggml;
    const vocabulary = ggufVocabulary(ggml);
    this.#decode = (ids) => tokensText(vocabulary, ids);
    this.#vocabularySize = vocabulary.strings.length;
    this.#spellings = new ControlSpellings(controlTokens(ggml).keys());
    const source = model.metadata.tokenizer.chat_template;
    const eos = ggml.eos_token_id === undefined ? '' : (ggml.tokens[ggml.eos_token_id] ?? '');
    // No BOS text: llama.cpp's server adds the BOS itself to every prompt its vocabulary asks one for, and the
    // template's would be a second.
    this.#template =
      typeof source === 'string' ? new ChatTemplate(source, { bos_token: '', eos_token: eos }) : undefined;
    this.toolFormat = toolFormatOf(this.#template?.source);
    this.thinks = templateThinks(this.#template?.source);
  }

  async generate(request: ChatRequest, options: RunOptions = {}): Promise<ChatResult> {
    const { signal } = options;
    throwIfAborted(signal);
    refuseImages(request);
    const gap = wllama3Gap({ ...request, maxTokens: -1 });
    if (gap) {
      throw new EngineError(
        'invalid_request',
        `llama.cpp on wllama 3 cannot run ${gap.reason}: leave out ${gap.param}.`,
        {
          param: gap.param,
        },
      );
    }
    const { tools, thinking } = chatTurn(request, this);
    const prompt = request.prompt ?? this.#chatPrompt(tools, thinking);
    const grammar = request.constraint && (await this.#grammar(request.constraint, thinking));
    return generateNativeChoices(
      request,
      {
        thinking,
        calls: tools.calls,
        syntax: this.toolFormat.syntax,
        decode: this.#decode,
        vocabularySize: this.#vocabularySize,
        signal,
        onEvent: options.onEvent,
      },
      (_row, plan, sink) => this.#runRow(prompt, { ...plan, grammar }, request.cacheScope, sink, signal),
    );
  }

  /** The chat as the GGUF's template renders it, its control tokens written as text, which llama.cpp reads as such. */
  #chatPrompt(tools: ChatTurn['tools'], thinking: boolean): string {
    if (!this.#template) {
      throw new EngineError('invalid_request', 'This model has no chat template: use the completions API.', {
        param: 'messages',
      });
    }
    const hidden = this.#spellings.hide({ messages: tools.messages, tools: tools.tools }, this.#template.source);
    if (hidden.reveal) {
      throw new EngineError(
        'invalid_request',
        "llama.cpp on wllama 3 reads the prompt as text and would read a control token's spelling in a message as that " +
          'token: write it otherwise.',
        { param: 'messages' },
      );
    }
    return this.#template.render({ ...tools, ...hidden.value }, thinking);
  }

  /** The constraint as GBNF, or a 400 naming its parameter where it has none (llama.cpp's parser's bounds). */
  async #grammar(constraint: OutputConstraint, thinking: boolean): Promise<string> {
    const grammar = await this.#nativeGrammar(constraint, this.toolFormat.syntax, thinking);
    if (grammar !== undefined) return grammar;
    const param = constraint.type === 'tools' ? 'tools' : (constraint.param ?? 'response_format');
    throw new EngineError(
      'invalid_request',
      `llama.cpp on wllama 3 cannot enforce this ${param}: its grammar parser refuses a repetition this large.`,
      { param },
    );
  }

  /** One row: one wllama 3 completion, its text handed to the core's pipeline as it streams. */
  async #runRow(
    prompt: string,
    plan: Omit<NativeRowPlan, 'grammar'> & { grammar: string | undefined },
    scope: string | undefined,
    sink: NativeRowSink,
    signal: AbortSignal | undefined,
  ): Promise<NativeRowPrompt> {
    const row: Wllama3Plan = {
      temperature: plan.temperature,
      topP: plan.topP,
      seed: plan.seed,
      maxTokens: plan.maxTokens ?? -1,
      presencePenalty: plan.presencePenalty,
      frequencyPenalty: plan.frequencyPenalty,
      logitBias: plan.logitBias,
      grammar: plan.grammar,
    };
    let counts: Wllama3Counts | undefined;
    let pieces = 0;
    for await (const piece of this.#model.generate(prompt, row, scope, signal)) {
      counts = piece.end ?? piece.counts ?? counts;
      // Leaving the loop cancels the row (a stop sequence matched, or every call was made).
      if (piece.text && (pieces++, sink.pushText(piece.text))) break;
      if (piece.end) sink.end(piece.end.reason, false);
    }
    return {
      promptTokens: counts?.promptTokens ?? 0,
      cachedPromptTokens: counts?.cachedTokens ?? 0,
      // llama.cpp streams a token a chunk (a character's bytes held until whole): the pieces, where it counted none.
      completionTokens: counts?.completionTokens ?? pieces,
    };
  }

  async dispose(): Promise<void> {
    await this.#model.dispose();
  }
}
