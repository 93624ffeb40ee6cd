import type {
  ChatEvent,
  ChatOptions,
  ChatRequest,
  ChatResult,
  EmbedOptions,
  EmbedRequest,
  EmbedResult,
  FinishReason,
  FunctionCall,
  GeneratedTokenLogprob,
  WireObject,
} from '../../engine/index.ts';
import type { RemoteCandidate } from '../model-profile.ts';
import { cutShort, fromStreamError, notAnAnswer } from './upstream-errors.ts';
import { callParts, finishReason, functionCalls, isObject, logprobsOf, textOf, typedChatBody } from './typed-wire.ts';
import { postUpstream, UpstreamTarget } from './upstream-request.ts';

/**
 * A model on an OpenAI-compatible server, behind the engine interface.
 *
 * Pass-through: when the caller hands over the client's request body (`options.wire`, as the /v1 routes do), that body
 * is what the server receives, with only `model` replaced by the server's name; and what the server answers is what
 * the caller gets (`onWire` for each streamed chunk, `result.wire` for a JSON answer). Every field either side knows
 * (tools, response formats, log probabilities, usage details, fields of the server's own) therefore crosses
 * unchanged, whatever the engine interface models. Without a wire body (a caller of the typed interface) the request
 * is translated from the typed one and the answer into typed events.
 *
 * Streamed events are handed on one by one as they arrive; the caller's abort aborts the fetch, which closes the
 * connection to the server.
 */
export class RemoteModel {
  readonly #target: UpstreamTarget;

  constructor(candidate: RemoteCandidate) {
    this.#target = new UpstreamTarget(candidate);
  }

  /** Its `candidateKey`: what the `x-lantern-backend` header and messages call it. */
  get backend(): string {
    return this.#target.context.backend;
  }

  async chat(request: ChatRequest, options: ChatOptions = {}): Promise<ChatResult> {
    const { wire, signal } = options;
    const stream = wire ? wire.stream === true : options.onEvent !== undefined;
    const body = wire
      ? { ...wire, model: this.#target.candidate.model }
      : typedChatBody(this.#target.candidate.model, request, stream);
    // A raw prompt (the legacy completions API) is the server's /completions: no chat template on either side.
    const path = !wire && request.prompt !== undefined ? '/completions' : '/chat/completions';
    const answer = await postUpstream(this.#target, path, body, { signal, stream });
    options.onBackend?.(this.backend);
    if (!stream) {
      const completion = await answer.json();
      if (!isObject(completion) || !Array.isArray(completion.choices)) {
        throw notAnAnswer('an object without `choices`', this.#target.context);
      }
      return { ...resultOf(completion), ...(wire && { wire: completion }) };
    }

    const tally = new ChunkTally();
    const emit = options.onWire ?? ((chunk: WireObject) => tally.events(chunk, options.onEvent));
    await answer.events((data) => {
      if (tally.done) return;
      if (data === '[DONE]') {
        tally.done = true;
        return;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw notAnAnswer('an event that is not JSON', this.#target.context);
      }
      if (!isObject(chunk)) throw notAnAnswer('an event that is not an object', this.#target.context);
      if (chunk.error !== undefined) throw fromStreamError(chunk.error, this.#target.context);
      tally.add(chunk);
      emit(chunk);
    });
    // Servers end every stream with [DONE]; one that ended without it and with a choice unfinished was cut off.
    if (!tally.done && !tally.finished) throw cutShort(this.#target.context);
    return tally.result();
  }

  async embed(request: EmbedRequest, options: EmbedOptions = {}): Promise<EmbedResult> {
    const { wire, signal } = options;
    const model = this.#target.candidate.model;
    const body = wire ? { ...wire, model } : { model, input: request.input, encoding_format: 'float' };
    const answer = await postUpstream(this.#target, '/embeddings', body, { signal, stream: false });
    options.onBackend?.(this.backend);
    const list = await answer.json();
    if (!isObject(list) || !Array.isArray(list.data))
      throw notAnAnswer('an object without `data`', this.#target.context);
    const embeddings: Float32Array[] = [];
    for (const [position, item] of list.data.entries()) {
      const vector = isObject(item) ? toFloat32(item.embedding) : undefined;
      if (!vector) throw notAnAnswer('an embedding that is neither numbers nor base64', this.#target.context);
      embeddings[isObject(item) && typeof item.index === 'number' ? item.index : position] = vector;
    }
    const usage = isObject(list.usage) ? list.usage : {};
    return {
      embeddings,
      usage: { promptTokens: typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0 },
      ...(wire && { wire: list }),
    };
  }
}

function usageOf(value: unknown): ChatResult['usage'] {
  const usage = isObject(value) ? value : {};
  const count = (n: unknown) => (typeof n === 'number' ? n : 0);
  return { promptTokens: count(usage.prompt_tokens), completionTokens: count(usage.completion_tokens) };
}

/** A JSON completion as a typed result (text, finish reason and usage; the rest stays in `wire`). */
function resultOf(completion: WireObject): ChatResult {
  const choices = (completion.choices as unknown[]).filter(isObject).map((choice) => {
    const logprobs = logprobsOf(choice.logprobs);
    const toolCalls = functionCalls(choice.message);
    return {
      text: textOf(choice, 'message'),
      finishReason: finishReason(choice.finish_reason),
      ...(logprobs && { logprobs }),
      ...(toolCalls.length && { toolCalls }),
    };
  });
  return { choices, usage: usageOf(completion.usage) };
}

/** What a stream has said so far: each choice's text and end, and the usage; and the typed events of each chunk. */
class ChunkTally {
  done = false;
  readonly #texts: string[] = [];
  readonly #logprobs: (GeneratedTokenLogprob[] | undefined)[] = [];
  readonly #reasons: (FinishReason | undefined)[] = [];
  /** Each choice's calls so far. */
  readonly #calls: FunctionCall[][] = [];
  #usage: ChatResult['usage'] = { promptTokens: 0, completionTokens: 0 };

  /** Whether every choice seen has ended (a server that closes without [DONE] has then still finished). */
  get finished(): boolean {
    return this.#reasons.length > 0 && this.#texts.every((_, i) => this.#reasons[i] !== undefined);
  }

  add(chunk: WireObject): void {
    if (isObject(chunk.usage)) this.#usage = usageOf(chunk.usage);
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices.filter(isObject) : []) {
      const index = typeof choice.index === 'number' ? choice.index : 0;
      this.#texts[index] = (this.#texts[index] ?? '') + textOf(choice, 'delta');
      const logprobs = logprobsOf(choice.logprobs);
      if (logprobs) this.#logprobs[index] = [...(this.#logprobs[index] ?? []), ...logprobs];
      for (const part of callParts(choice.delta)) {
        const calls = (this.#calls[index] ??= []);
        // A call's first part names it; the rest add to its arguments.
        if (part.name !== undefined) calls[part.index] = { name: part.name, arguments: '' };
        const call = calls[part.index];
        if (call) call.arguments += part.arguments;
      }
      if (choice.finish_reason != null) this.#reasons[index] = finishReason(choice.finish_reason);
    }
  }

  /** The typed events of a chunk: a delta for its text (and its log probabilities), a finish for its finish reason. */
  events(chunk: WireObject, onEvent: ((event: ChatEvent) => void) | undefined): void {
    if (!onEvent) return;
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices.filter(isObject) : []) {
      const index = typeof choice.index === 'number' ? choice.index : 0;
      const text = textOf(choice, 'delta');
      const logprobs = logprobsOf(choice.logprobs);
      if (text || logprobs?.length) onEvent({ type: 'delta', choice: index, text, ...(logprobs && { logprobs }) });
      for (const part of callParts(choice.delta)) {
        if (part.name !== undefined) onEvent({ type: 'tool_call', choice: index, index: part.index, name: part.name });
        if (part.arguments) onEvent({ type: 'tool_arguments', choice: index, index: part.index, text: part.arguments });
      }
      if (choice.finish_reason != null) {
        onEvent({ type: 'finish', choice: index, reason: finishReason(choice.finish_reason) });
      }
    }
  }

  result(): ChatResult {
    const choices = Array.from(this.#texts, (text, i) => {
      const logprobs = this.#logprobs[i];
      const toolCalls = (this.#calls[i] ?? []).filter(Boolean);
      return {
        text: text ?? '',
        finishReason: this.#reasons[i] ?? 'stop',
        ...(logprobs && { logprobs }),
        ...(toolCalls.length && { toolCalls }),
      };
    });
    return { choices, usage: this.#usage };
  }
}

/** An embedding as the server sent it: numbers, or little-endian float32 in base64. */
function toFloat32(value: unknown): Float32Array | undefined {
  if (Array.isArray(value)) return value.every((x) => typeof x === 'number') ? Float32Array.from(value) : undefined;
  if (typeof value !== 'string') return undefined;
  try {
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    if (bytes.byteLength % 4 !== 0) return undefined;
    const view = new DataView(bytes.buffer);
    return Float32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getFloat32(i * 4, true));
  } catch {
    return undefined;
  }
}
