/**
 * The engine interface: what `src/api` asks of whatever runs the models, and what every engine in `src/engines`
 * provides. Plain data in and out (camelCase; the wire's snake_case stays in `src/api`), so it can cross a worker
 * boundary unchanged. Each task's types are tied together in `tasks.ts` (`TaskTypes`).
 */
import type { ModelTask, TaskOptions, TaskRequest, TaskResult } from './tasks.ts';
import type { ReasoningEffort } from './reasoning-effort.ts';

/** The encodings of speech (`response_format` of `/v1/audio/speech`): mono at 24 kHz, `pcm` raw 16-bit little-endian. */
export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

/**
 * A conversation turn as the engine sees it: text, and the tool calls of an assistant turn or the call a `tool` turn
 * answers. An assistant turn that only called tools has empty `content`.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** An assistant turn's calls, in order. */
  toolCalls?: ToolCall[];
  /** A `tool` turn: the id of the call whose result `content` is. */
  toolCallId?: string;
  /**
   * An assistant turn's thought, as a reasoning model wrote it before `content` (the wire's `reasoning_content`): the
   * chat template decides whether the model sees it again (Qwen3's keeps it only after the last user turn).
   */
  reasoning?: string;
  /** A user turn's images, in the order the client put them among its text parts. */
  images?: ChatImage[];
}

/**
 * What an engine takes of a request's images: each one's bytes (a data URL's, or fetched) and pixels once decoded, all
 * of their pixels together, the fetch's time, and the hosts a URL may name.
 */
export interface ImageLimits {
  maxBytes: number;
  maxPixels: number;
  /** Pixels of all the request's images together (they are decoded one at a time). */
  maxTotalPixels: number;
  fetchTimeoutMs: number;
  /**
   * The only hosts an http(s) image may be fetched from (exact names). Absent: the realm's own rule, which in a browser
   * is the page's (any URL its fetch may reach) and in Node is none.
   */
  urlHosts?: readonly string[];
}

/** An image a user turn shows the model, and where among the turn's text the client put it. */
export interface ChatImage {
  /** A `data:` URL or an http(s) URL, as the client sent it. */
  url: string;
  /** OpenAI's `detail` (`auto` when not sent): how finely a model that tiles images may look. */
  detail: 'auto' | 'low' | 'high';
  /** Where in the turn's `content` it sits: after `content.slice(0, at)`. */
  at: number;
  /** The request's name for the part (`messages[1].content[2]`, `input[0].content[1]`): what a refusal names. */
  param: string;
}

/** A function the model may call: the wire's `tools[].function`. */
export interface ToolDefinition {
  name: string;
  description?: string;
  /** A JSON Schema of the arguments object (`{"type": "object", "properties": {}}` when the tool takes none). */
  parameters: Record<string, unknown>;
  /** The caller asked for arguments that always validate (`strict: true`). */
  strict?: boolean;
  /**
   * The request's own name for `parameters` (`tools[2].function.parameters`, `tools[2].parameters`): what a refusal of
   * them names. Default: the chat API's `tools[i].function.parameters`.
   */
  param?: string;
}

/** A call the model made: a declared function's name and its arguments, a JSON object as text. */
export interface FunctionCall {
  name: string;
  arguments: string;
}

/** A call in a conversation's history, under the id its result refers to. */
export interface ToolCall extends FunctionCall {
  id: string;
}

/** One generation request, already validated by the caller: a conversation, or a raw prompt. */
export interface ChatRequest {
  /** The conversation, rendered with the model's chat template. Empty when `prompt` is given. */
  messages: ChatMessage[];
  /**
   * Raw text for the model to continue as it is: no chat template, the tokenizer's own special tokens (a BOS) only.
   * The legacy completions API. When given, `messages` is empty.
   */
  prompt?: string;
  /** With images in `messages`: what a model that reads them takes of each (the handler's limits). */
  imageLimits?: ImageLimits;
  /**
   * Most tokens to generate for each choice, as the client asked: the prompt and these must fit the context window,
   * or the request is refused (`context_length_exceeded`).
   */
  maxTokens?: number;
  /**
   * When `maxTokens` is not given: the most tokens to generate for each choice (a bound on how long one request holds
   * the device), cut to the room the context window leaves after the prompt. Neither given: up to the window's end.
   */
  defaultMaxTokens?: number;
  /** 0 means greedy decoding; otherwise the softmax temperature (at most 2). */
  temperature: number;
  /** Nucleus sampling: sample from the smallest set of tokens whose probability reaches `topP`. */
  topP: number;
  /** Penalties of the OpenAI API (-2 to 2): subtracted from a token's logit once it appears / per appearance. */
  presencePenalty: number;
  frequencyPenalty: number;
  /** Added to the logits of the given token ids (-100 to 100), as the OpenAI API's `logit_bias`. */
  logitBias?: Record<number, number>;
  /** Strings that end a choice when generated; never part of the returned text. */
  stop: string[];
  /**
   * Text the reply is expected to repeat much of (OpenAI's Predicted Outputs: a file being edited, a document being
   * revised): where the engine speculates, proposals come from it first. It never changes what is generated.
   */
  prediction?: string;
  /** Number of choices to generate. */
  n: number;
  /** Makes sampling reproducible: the same seed, request and model give the same tokens. A safe integer. */
  seed?: number;
  /**
   * Whether a model with a thinking mode (Qwen3's `enable_thinking`) thinks before it answers: its thought is reported
   * apart from the answer (`reasoning` events), and constraints, calls and stop sequences apply to the answer only.
   * Absent: the model's default (its profile entry's `defaultReasoningEffort`). Models without one ignore it.
   */
  thinking?: boolean;
  /**
   * How long a thought may run where Lantern decodes (see `thoughtBudget`): the effort asked for (`reasoning_effort`,
   * `reasoning.effort`), or the model's default. Absent: `medium`.
   */
  reasoningEffort?: ReasoningEffort;
  /**
   * What every choice must be, enforced token by token (a logits mask before sampling) and checked when it ends: JSON
   * valid against a schema, or a reply that may call the given tools. Absent: free text.
   */
  constraint?: OutputConstraint;
  /** Report each generated token's log probability, with this many most likely alternatives (0 to 20). */
  logprobs?: number;
  /**
   * Whose cached prompts this request may reuse: a local engine's prefix cache (and web-llm's held conversation)
   * matches only requests of the same scope, so that no caller's prompts reach another's answers, timings or
   * `cached_tokens` (issue 41). The handler sets the API key's id. Opaque to engines, never sent to a remote server.
   * Absent: the one scope of every request without one (callers of the engine itself).
   */
  cacheScope?: string;
}

/** A JSON Schema, as the request gave it. */
export type JsonSchema = Record<string, unknown>;

/**
 * One JSON value valid against `schema` (`null`: any JSON object, the OpenAI API's `json_object`). `param` is the
 * request's own name for where the schema came from (`response_format`, `text.format`): what a refusal names.
 */
export interface JsonConstraint {
  type: 'json';
  schema: JsonSchema | null;
  /** Default `response_format`. */
  param?: string;
}

/**
 * A reply that may call tools: text (matching `text`, when given), or calls of these functions with arguments valid
 * against their `parameters`. `choice`: `auto` lets the model choose between text and calls, `required` makes it call
 * at least one, `{ name }` makes it call that function; `parallel`: whether one reply may hold several calls. A
 * request whose tools may not be called (`tool_choice: "none"`) carries no tool constraint: the model is shown none.
 */
export interface ToolConstraint {
  type: 'tools';
  tools: ToolDefinition[];
  choice: ToolChoice;
  parallel: boolean;
  /** What a reply without calls must be (the request's response format), if anything. */
  text?: JsonConstraint;
}

/** Whether a reply with tools may answer in text (`auto`), must call at least one (`required`) or that one. */
export type ToolChoice = 'auto' | 'required' | { name: string };

/**
 * What every choice must be, as data: built once from the request's own parameters by `src/api`, refused or compiled
 * once below the engines (`src/grammar/`), applied as a logits mask beside sampling and stop sequences, and
 * checked when each choice ends.
 */
export type OutputConstraint = JsonConstraint | ToolConstraint;

/** A token and its log probability, as the OpenAI API reports it. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** The token's exact UTF-8 bytes (a token may hold part of a character). */
  bytes: number[];
}

/** A generated token's log probability and the most likely alternatives at its step. */
export interface GeneratedTokenLogprob extends TokenLogprob {
  topLogprobs: TokenLogprob[];
}

/**
 * Why a choice ended: its model ended it or a stop sequence matched (`stop`), it hit a token limit (`length`), or it
 * ended after calling tools (`tool_calls`).
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

/**
 * What a running chat generation reports: a reasoning model's thought as it is written, then text as each token is decoded (with `logprobs`, a delta carries the log
 * probabilities of the tokens generated since the last delta); each tool call as it begins (its index in the choice's
 * calls and the function's name), then its arguments in fragments; then the end of each choice.
 */
export type ChatEvent =
  | { type: 'delta'; choice: number; text: string; logprobs?: GeneratedTokenLogprob[] }
  /** Text of the thought a reasoning model writes before its answer (never part of the answer's `delta`s). */
  | { type: 'reasoning'; choice: number; text: string }
  | { type: 'tool_call'; choice: number; index: number; name: string }
  | { type: 'tool_arguments'; choice: number; index: number; text: string }
  | { type: 'finish'; choice: number; reason: FinishReason };

export interface ChatChoice {
  /** The reply's text; empty when it only called tools. */
  text: string;
  /** A reasoning model's thought, written before `text`; absent when it did not think. */
  reasoning?: string;
  /** The calls it made, in order; absent or empty when it called none. */
  toolCalls?: FunctionCall[];
  finishReason: FinishReason;
  /** With `logprobs`: one entry per token of `text`. */
  logprobs?: GeneratedTokenLogprob[];
}

export interface TokenUsage {
  /** Tokens of the prompt, counted once however many choices were generated. */
  promptTokens: number;
  /** Tokens generated, summed over all choices: the thoughts' tokens included. */
  completionTokens: number;
  /** Of `completionTokens`, those of reasoning models' thoughts (the `</think>` that ends one included). */
  reasoningTokens?: number;
  /** Tokens of the prompt not computed again: their keys and values came from an earlier request (prefix reuse). */
  cachedPromptTokens?: number;
  /**
   * Where the engine speculated (prompt lookup, a prediction): the proposed tokens the model accepted, each a forward
   * pass saved, and those it did not. Both are absent where nothing was proposed.
   */
  acceptedPredictionTokens?: number;
  rejectedPredictionTokens?: number;
}

export interface ChatResult {
  choices: ChatChoice[];
  usage: TokenUsage;
  /** With `clientBody`, from a candidate that forwarded it: the server's completion object, as it sent it. */
  serverBody?: WireObject;
}

/** A JSON object in the OpenAI API's wire format, as a client sent it or a server answered it. */
export type WireObject = Record<string, unknown>;

/**
 * Who serves a call: its model, as `/v1/models` lists it, and the candidate that answers: by its public name where
 * the caller is a key holder (the router's `onServe`: `remote:1`, `transformers:tiny-chat@fp32/cpu`), by its
 * `candidateKey` inside the engines.
 */
export interface Serving {
  model: ModelCard;
  backend: string;
}

/** What every call of the engine interface takes. */
export interface CallOptions {
  /** Aborting stops the call (a generation within a token) and rejects it with an `aborted` EngineError. */
  signal?: AbortSignal;
  /**
   * The request body as the client sent it (its `model` is the public ID). A candidate that forwards requests to an
   * OpenAI-compatible server (see `src/engines/remote/`) sends it rather than a translation of the typed request, and
   * hands back what the server said, so that every field either side knows crosses it unchanged. Candidates that run
   * models themselves ignore it.
   */
  clientBody?: WireObject;
  /**
   * Told who serves the call once its model is found and a candidate has taken it, before any output; told again if
   * that candidate fails before any output and the next one in its fallback chain takes over.
   */
  onServe?: (serving: Serving) => void;
}

export interface ChatOptions extends CallOptions {
  /** Called synchronously for every event, in order, as tokens are generated. */
  onEvent?: (event: ChatEvent) => void;
  /**
   * With `clientBody` and a streamed request: each chunk the server streamed, as it sent it, in place of `onEvent` (a
   * candidate that forwards calls one or the other for a call, never both).
   */
  onServerChunk?: (chunk: WireObject) => void;
}

export interface EmbedRequest {
  input: string[];
}

export interface EmbedResult {
  /** One L2-normalised vector per input, in input order. */
  embeddings: Float32Array[];
  usage: { promptTokens: number };
  /** With `clientBody`, from a candidate that forwarded it: the server's answer, as it sent it. */
  serverBody?: WireObject;
}

export type EmbedOptions = CallOptions;

/** An audio file as the client sent it: its bytes, its name and its media type (either may be empty). */
export interface AudioFile {
  bytes: Uint8Array;
  name: string;
  type: string;
}

/** One speech-to-text request, already validated by the caller. */
export interface TranscribeRequest {
  audio: AudioFile;
  /** Write down what is said in its own language (`transcribe`), or in English (`translate`). */
  task: 'transcribe' | 'translate';
  /** The spoken language, ISO-639-1 (`en`); absent: the model's default (English for the models here). */
  language?: string;
  /** Text the speech follows on from (the previous part of a recording, names to spell): the model reads it first. */
  prompt?: string;
  /** 0 means greedy decoding; otherwise the softmax temperature (at most 1). */
  temperature: number;
  /** Whether to time each word (the wire's `timestamp_granularities[]=word`). */
  words: boolean;
  /** The longest audio the caller takes, in seconds: longer is refused (`file`), measured before it is decoded. */
  maxSeconds?: number;
}

/** A span of the transcript, as Whisper's decoding cuts it, with its place in the audio (seconds). */
export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  /** The segment's text tokens. */
  tokens: number[];
  /** The mean log probability of its tokens. */
  avgLogprob: number;
  /** How much the text compresses (gzip): a high ratio is a model repeating itself. */
  compressionRatio: number;
  /** The model's probability, before its first token, that the window holds no speech. */
  noSpeechProb: number;
  /** The temperature its window was decoded at (above 0 after Whisper's fallback). */
  temperature: number;
  /** Where the window it was decoded in starts, in seconds. */
  windowStart: number;
}

/** A word and where it is said (seconds). */
export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
}

/**
 * What a running transcription reports: its text as each span of the audio is written down for good (concatenated,
 * the deltas are the transcript), and how far through the audio it is.
 */
export type TranscriptEvent = { type: 'delta'; text: string } | { type: 'progress'; seconds: number; duration: number };

export interface TranscribeResult {
  text: string;
  /** The spoken language, ISO-639-1. */
  language: string;
  /** The audio's length in seconds. */
  duration: number;
  segments: TranscriptSegment[];
  /** With `words`: every word, in order. */
  words?: TranscriptWord[];
  /** Tokens generated (the text's, timestamps included). */
  usage: { outputTokens: number };
}

export interface TranscribeOptions extends CallOptions {
  /** Called synchronously for every event, in order. */
  onEvent?: (event: TranscriptEvent) => void;
}

/** One text-to-speech request, already validated by the caller (`POST /v1/audio/speech`). */
export interface SpeakRequest {
  /** The text to say: not empty, at most `Limits.maxSpeechChars` characters. */
  input: string;
  /** An OpenAI voice name (`alloy`, `marin`, …), mapped to one of the model's own, or one of the model's own names. */
  voice: string;
  /** How fast to speak, 0.25–4 (1 is the model's own pace). */
  speed: number;
  /** How to say it (tone, accent, pace): read by a model that follows instructions, accepted and unused by others. */
  instructions?: string;
  /** The audio's encoding, encoded where the model runs: mono at `SPEECH_SAMPLE_RATE`. */
  format: SpeechFormat;
}

/** What a running synthesis reports: its audio, encoded, as each sentence is spoken, and how far through the text. */
export type SpeechEvent =
  /** The next encoded bytes, in order (concatenated, they are the file). */
  | { type: 'audio'; bytes: Uint8Array }
  /** Characters of the input spoken so far, of `total`. */
  | { type: 'progress'; characters: number; total: number };

export interface SpeakResult {
  /** Seconds of audio. */
  seconds: number;
  /** The audio's sample rate (24 kHz, as OpenAI's `pcm`). */
  sampleRate: number;
  /**
   * Input tokens: the phonemes (or characters) the model read; output tokens: audio frames, one per 25 ms (Lantern's
   * unit: OpenAI bills speech by characters or its own audio tokens, which no local model has).
   */
  usage: { inputTokens: number; outputTokens: number };
}

export interface SpeakOptions extends CallOptions {
  /** Called synchronously for every event, in order. */
  onEvent?: (event: SpeechEvent) => void;
}

/**
 * Progress of loading a model, one union for every engine (the statuses of transformers.js' `ProgressInfo`), named by
 * the public model ID that asked for it. `progress` is a percentage.
 */
export type LoadProgress =
  | { status: 'initiate' | 'download' | 'done'; model: string; file: string }
  | { status: 'progress'; model: string; file: string; loaded: number; total: number; progress: number }
  | { status: 'progress_total'; model: string; loaded: number; total: number; progress: number }
  /**
   * The model is loaded; `resolved` names what runs it (e.g. `web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC`), `runsOn`
   * where, as its engine's runtime found it (absent where the engine does not say).
   */
  | { status: 'ready'; model: string; resolved: string; runsOn?: RunsOn }
  /** A candidate of the model's fallback chain failed to load, for `reason`; the next one is tried, if any. */
  | { status: 'failed'; model: string; candidate: string; reason: string }
  /**
   * A candidate was passed over this time, before its engine loaded anything: its download does not fit the storage
   * quota, or could not be made (offline). The next one is tried; it is tried again on the next load.
   */
  | { status: 'skipped'; model: string; candidate: string; reason: string };

/** A model the engine can serve, under its public ID. */
export interface ModelCard {
  id: string;
  task: ModelTask;
  /** When the model was published, in Unix seconds. */
  created: number;
  /** Other names a request may call it by (`gpt-4o-mini`): served by it, and answered under `id`. */
  aliases?: string[];
  /** What it reads, when the engine says: text; images too (a chat ID with a candidate that reads them here); audio. */
  inputs?: ('text' | 'image' | 'audio')[];
  /** What it writes, when the engine says: text, or audio (a text-to-speech ID). */
  outputs?: ('text' | 'audio')[];
  /**
   * A text-to-speech ID's voices, when the engine says: OpenAI's names (each mapped to one of the model's), then the
   * model's own.
   */
  voices?: string[];
  /**
   * The candidates that can serve it here, in the order they are tried, when the engine says: by their public names
   * (`PublicView`), never where they live.
   */
  candidates?: string[];
  /** The candidate that answered its last request or, before any, the first in line that is not cooling down. */
  servedBy?: string | null;
  /**
   * What this device has stored of each candidate it downloads, by the candidates' public names: `complete` (it loads
   * offline), `partial` (a download was cut: it resumes), `none`. Only where there is a store (a browser).
   */
  stored?: Record<string, StoredState>;
  /**
   * Where each of its candidates loaded on this device's engine computes (`RunsOn`), by the same names: only those
   * loaded, as their runtimes found it when they loaded (llama.cpp's GPU backend, or the CPU where it found none).
   */
  runsOn?: Record<string, RunsOn>;
}

/**
 * Where a loaded model computes, as its engine's runtime found it rather than as it was asked: `webgpu`; `wasm`
 * (WebAssembly on the CPU, in a browser); `cpu` (Node, natively); or the native GPU backend llama.cpp found in Node,
 * `cuda`, `vulkan` or `metal`.
 */
export interface RunsOn {
  device: ComputeDevice;
  /** On the CPU (`wasm`, `cpu`): the threads it computes with, where the engine says; 1 is single-threaded. */
  threads?: number;
}

export type ComputeDevice = 'webgpu' | 'wasm' | 'cpu' | 'cuda' | 'vulkan' | 'metal';

/** How much of a downloaded model is stored on this device. */
export type StoredState = 'complete' | 'partial' | 'none';

/**
 * What every engine implements: its models, and one `run` that carries any task (`TaskTypes`). Implementations throw
 * or reject with {@link EngineError} only.
 */
export interface EngineRuns {
  /** The models this engine can serve on this device. */
  models(): Promise<ModelCard[]>;
  /** Runs `task` on the model `model` (a public ID or an alias of one). */
  run<T extends ModelTask>(
    task: T,
    model: string,
    request: TaskRequest<T>,
    options?: TaskOptions<T>,
  ): Promise<TaskResult<T>>;
}

/**
 * Everything that runs models, behind one door: `run`, and a method per task that is that task's `run`
 * (`withTaskMethods` gives an engine them).
 *
 * @example
 * const result = await engine.chat('crimson-falcon-4', request, { onEvent: (e) => console.log(e) });
 * // the same call:
 * await engine.run('chat', 'crimson-falcon-4', request, { onEvent: (e) => console.log(e) });
 */
export interface Engine extends EngineRuns {
  chat(model: string, request: ChatRequest, options?: ChatOptions): Promise<ChatResult>;
  embed(model: string, request: EmbedRequest, options?: EmbedOptions): Promise<EmbedResult>;
  transcribe(model: string, request: TranscribeRequest, options?: TranscribeOptions): Promise<TranscribeResult>;
  speak(model: string, request: SpeakRequest, options?: SpeakOptions): Promise<SpeakResult>;
}
