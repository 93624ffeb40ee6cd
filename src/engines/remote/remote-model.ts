import {
  ChatResultBuilder,
  type ChatEvent,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type SpeakOptions,
  type SpeakRequest,
  type SpeakResult,
  type TranscribeOptions,
  type TranscribeRequest,
  type TranscribeResult,
  type ModelTask,
  type TaskOptions,
  type TaskRequest,
  type TaskResult,
  type WireObject,
} from '../../engine-interface/index.ts';
import { measureAudio } from '../../audio/index.ts';
import { concatBytes } from '../../bytes/byte-chunks.ts';
import type { RemoteCandidate } from './remote-engine.ts';
import { cutShort, fromStreamError, notAnAnswer } from './upstream-errors.ts';
import { postUpstream, UpstreamTarget } from './upstream-request.ts';
import {
  callParts,
  finishReason,
  functionCalls,
  isObject,
  logprobsOf,
  reasoningOf,
  textOf,
  typedChatBody,
} from './wire-translation.ts';

/** What a call of a remote model takes: the engine interface's options, and who to tell that the server answered. */
type RemoteCallOptions<O> = Omit<O, 'onServe'> & { onBackend?: ((backend: string) => void) | undefined };

/**
 * A model on an OpenAI-compatible server, behind the engine interface.
 *
 * Pass-through: when the caller hands over the client's request body (`options.clientBody`, as the /v1 routes do), that
 * body is what the server receives, with only `model` replaced by the server's name; and what the server answers is
 * what the caller gets (`onServerChunk` for each streamed chunk, `result.serverBody` for a JSON answer). Every field
 * either side knows (tools, response formats, log probabilities, usage details, fields of the server's own) therefore
 * crosses unchanged, whatever the engine interface models. Without a client body (a caller of the typed interface) the
 * request is translated from the typed one and the answer into typed events.
 *
 * Streamed events are handed on one by one as they arrive; the caller's abort aborts the fetch, which closes the
 * connection to the server.
 */
export class RemoteModel {
  readonly #target: UpstreamTarget;

  constructor(candidate: RemoteCandidate) {
    this.#target = new UpstreamTarget(candidate);
  }

  /** Its `candidateKey`: what its messages call it (the router names it publicly before they reach a key holder). */
  get backend(): string {
    return this.#target.context.backend;
  }

  /** Runs `task` on the server: the request sent as the task's endpoint takes it, the answer read back. */
  run<T extends ModelTask>(
    task: T,
    request: TaskRequest<T>,
    options: RemoteCallOptions<TaskOptions<T>>,
  ): Promise<TaskResult<T>> {
    return REMOTE_TASKS[task](this.#target, request, options);
  }
}

/** How one task crosses to a server and back: its endpoint, its body (or the client's), its answer read. */
type RemoteTask<T extends ModelTask> = (
  target: UpstreamTarget,
  request: TaskRequest<T>,
  options: RemoteCallOptions<TaskOptions<T>>,
) => Promise<TaskResult<T>>;

/** Each task's translation to and from the server's API. */
const REMOTE_TASKS: { [T in ModelTask]: RemoteTask<T> } = {
  chat: remoteChat,
  embeddings: remoteEmbed,
  transcription: remoteTranscribe,
  speech: remoteSpeak,
};

async function remoteChat(
  target: UpstreamTarget,
  request: ChatRequest,
  options: RemoteCallOptions<ChatOptions>,
): Promise<ChatResult> {
  const { clientBody, signal } = options;
  const stream = clientBody ? clientBody.stream === true : options.onEvent !== undefined;
  const body = clientBody
    ? { ...clientBody, model: target.candidate.model }
    : typedChatBody(target.candidate.model, request, stream);
  // A raw prompt (the legacy completions API) is the server's /completions: no chat template on either side.
  const path = !clientBody && request.prompt !== undefined ? '/completions' : '/chat/completions';
  const answer = await postUpstream(target, path, body, { signal, stream });
  options.onBackend?.(target.context.backend);
  if (!stream) {
    const completion = await answer.json();
    if (!isObject(completion) || !Array.isArray(completion.choices)) {
      throw notAnAnswer('an object without `choices`', target.context);
    }
    return { ...resultOf(completion), ...(clientBody && { serverBody: completion }) };
  }

  // The result is what the chunks said, read as typed events whether or not the caller takes them as chunks.
  const results = new ChatResultBuilder();
  let usage: ChatResult['usage'] = { promptTokens: 0, completionTokens: 0 };
  let done = false;
  await answer.events((data) => {
    if (done) return;
    if (data === '[DONE]') {
      done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw notAnAnswer('an event that is not JSON', target.context);
    }
    if (!isObject(chunk)) throw notAnAnswer('an event that is not an object', target.context);
    if (chunk.error !== undefined) throw fromStreamError(chunk.error, target.context);
    if (isObject(chunk.usage)) usage = usageOf(chunk.usage);
    for (const event of chunkEvents(chunk)) {
      results.add(event);
      if (!options.onServerChunk) options.onEvent?.(event);
    }
    options.onServerChunk?.(chunk);
  });
  // Servers end every stream with [DONE]; one that ended without it and with a choice unfinished was cut off.
  if (!done && !results.finished) throw cutShort(target.context);
  return results.result(usage);
}

async function remoteEmbed(
  target: UpstreamTarget,
  request: EmbedRequest,
  options: RemoteCallOptions<EmbedOptions>,
): Promise<EmbedResult> {
  const { clientBody, signal } = options;
  const model = target.candidate.model;
  const body = clientBody ? { ...clientBody, model } : { model, input: request.input, encoding_format: 'float' };
  const answer = await postUpstream(target, '/embeddings', body, { signal, stream: false });
  options.onBackend?.(target.context.backend);
  const list = await answer.json();
  if (!isObject(list) || !Array.isArray(list.data)) throw notAnAnswer('an object without `data`', target.context);
  const embeddings: Float32Array[] = [];
  for (const [position, item] of list.data.entries()) {
    const vector = isObject(item) ? toFloat32(item.embedding) : undefined;
    if (!vector) throw notAnAnswer('an embedding that is neither numbers nor base64', target.context);
    embeddings[isObject(item) && typeof item.index === 'number' ? item.index : position] = vector;
  }
  const usage = isObject(list.usage) ? list.usage : {};
  return {
    embeddings,
    usage: { promptTokens: typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0 },
    ...(clientBody && { serverBody: list }),
  };
}

/**
 * Speech to text on the server (`/audio/transcriptions` or `/translations`), asked for `verbose_json` so that its
 * segments (and words) come back; the route writes the format the client asked for from them, as for a local model.
 */
async function remoteTranscribe(
  target: UpstreamTarget,
  request: TranscribeRequest,
  options: RemoteCallOptions<TranscribeOptions>,
): Promise<TranscribeResult> {
  const form = new FormData();
  const { audio } = request;
  form.set('file', new Blob([audio.bytes as Uint8Array<ArrayBuffer>], { type: audio.type }), audio.name || 'audio');
  form.set('model', target.candidate.model);
  form.set('response_format', 'verbose_json');
  form.set('temperature', String(request.temperature));
  if (request.language && request.task === 'transcribe') form.set('language', request.language);
  if (request.prompt) form.set('prompt', request.prompt);
  form.append('timestamp_granularities[]', 'segment');
  if (request.words) form.append('timestamp_granularities[]', 'word');
  const endpoint = request.task === 'translate' ? '/audio/translations' : '/audio/transcriptions';
  const answer = await postUpstream(target, endpoint, form, { signal: options.signal, stream: false });
  options.onBackend?.(target.context.backend);
  const body = await answer.json();
  if (!isObject(body) || typeof body.text !== 'string') {
    throw notAnAnswer('an object without `text`', target.context);
  }
  const number = (n: unknown, otherwise = 0) => (typeof n === 'number' ? n : otherwise);
  const segments = (Array.isArray(body.segments) ? body.segments : []).filter(isObject).map((s) => ({
    start: number(s.start),
    end: number(s.end),
    text: typeof s.text === 'string' ? s.text : '',
    tokens: Array.isArray(s.tokens) ? s.tokens.filter((t): t is number => typeof t === 'number') : [],
    avgLogprob: number(s.avg_logprob),
    compressionRatio: number(s.compression_ratio),
    noSpeechProb: number(s.no_speech_prob),
    temperature: number(s.temperature),
    windowStart: number(s.seek) / 100,
  }));
  const words = (Array.isArray(body.words) ? body.words : []).filter(isObject).map((w) => ({
    word: typeof w.word === 'string' ? w.word : '',
    start: number(w.start),
    end: number(w.end),
  }));
  const text = body.text.trim();
  options.onEvent?.({ type: 'delta', text });
  return {
    text,
    language: typeof body.language === 'string' ? body.language : (request.language ?? 'en'),
    duration: number(body.duration, segments.at(-1)?.end ?? 0),
    segments,
    ...(request.words && { words }),
    usage: { outputTokens: segments.reduce((n, s) => n + s.tokens.length, 0) },
  };
}

/**
 * Text to speech on the server (`/audio/speech`), asked for the bytes as they are synthesised (`stream_format:
 * 'audio'`) in the client's format: they are handed on as they arrive, not encoded again. The audio's length is measured
 * from its frames once it has all come (raw `pcm` has none: its bytes count its samples).
 */
async function remoteSpeak(
  target: UpstreamTarget,
  request: SpeakRequest,
  options: RemoteCallOptions<SpeakOptions>,
): Promise<SpeakResult> {
  const body = {
    model: target.candidate.model,
    input: request.input,
    voice: request.voice,
    speed: request.speed,
    response_format: request.format,
    stream_format: 'audio',
    ...(request.instructions !== undefined && { instructions: request.instructions }),
  };
  const answer = await postUpstream(target, '/audio/speech', body, { signal: options.signal, stream: true });
  options.onBackend?.(target.context.backend);
  const chunks: Uint8Array[] = [];
  await answer.bytes((bytes) => {
    chunks.push(bytes);
    options.onEvent?.({ type: 'audio', bytes: bytes.slice() });
  });
  const all = concatBytes(chunks);
  const sampleRate = 24_000;
  const seconds = request.format === 'pcm' ? all.byteLength / 2 / sampleRate : measuredSeconds(all);
  // Servers do not say what they read; OpenAI counts a speech model's input in characters.
  return { seconds, sampleRate, usage: { inputTokens: request.input.length, outputTokens: Math.ceil(seconds * 40) } };
}

/** The audio's length from its own frames, or 0 where they cannot be read: the bytes went to the client as they were. */
function measuredSeconds(bytes: Uint8Array): number {
  try {
    return measureAudio(bytes)?.seconds ?? 0;
  } catch {
    return 0;
  }
}

function usageOf(value: unknown): ChatResult['usage'] {
  const usage = isObject(value) ? value : {};
  const count = (n: unknown) => (typeof n === 'number' ? n : 0);
  const details = isObject(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  return {
    promptTokens: count(usage.prompt_tokens),
    completionTokens: count(usage.completion_tokens),
    ...(typeof details.reasoning_tokens === 'number' && { reasoningTokens: details.reasoning_tokens }),
    ...(typeof details.accepted_prediction_tokens === 'number' && {
      acceptedPredictionTokens: details.accepted_prediction_tokens,
      rejectedPredictionTokens: count(details.rejected_prediction_tokens),
    }),
  };
}

/** A JSON completion as a typed result (text, finish reason and usage; the rest stays in `serverBody`). */
function resultOf(completion: WireObject): ChatResult {
  const choices = (completion.choices as unknown[]).filter(isObject).map((choice) => {
    const logprobs = logprobsOf(choice.logprobs);
    const toolCalls = functionCalls(choice.message);
    const reasoning = reasoningOf(choice, 'message');
    return {
      text: textOf(choice, 'message'),
      ...(reasoning !== undefined && { reasoning }),
      finishReason: finishReason(choice.finish_reason),
      ...(logprobs && { logprobs }),
      ...(toolCalls.length && { toolCalls }),
    };
  });
  return { choices, usage: usageOf(completion.usage) };
}

/** The typed events of a streamed chunk: a delta for its text (and its log probabilities), its calls, its finish. */
function chunkEvents(chunk: WireObject): ChatEvent[] {
  const events: ChatEvent[] = [];
  for (const choice of Array.isArray(chunk.choices) ? chunk.choices.filter(isObject) : []) {
    const index = typeof choice.index === 'number' ? choice.index : 0;
    const text = textOf(choice, 'delta');
    const logprobs = logprobsOf(choice.logprobs);
    const thought = reasoningOf(choice, 'delta');
    if (thought) events.push({ type: 'reasoning', choice: index, text: thought });
    if (text || logprobs?.length) events.push({ type: 'delta', choice: index, text, ...(logprobs && { logprobs }) });
    for (const part of callParts(choice.delta)) {
      if (part.name !== undefined)
        events.push({ type: 'tool_call', choice: index, index: part.index, name: part.name });
      if (part.arguments)
        events.push({ type: 'tool_arguments', choice: index, index: part.index, text: part.arguments });
    }
    if (choice.finish_reason != null) {
      events.push({ type: 'finish', choice: index, reason: finishReason(choice.finish_reason) });
    }
  }
  return events;
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
