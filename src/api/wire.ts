/**
 * The wire format of the /v1 API, field for field: snake_case names, literal `object` values and nullable unions,
 * as the OpenAI API and its clients (openai-node's `ChatCompletion`, `ChatCompletionChunk`, `CreateEmbeddingResponse`,
 * `Model`) have them. Request bodies are described by the schemas in `request-schemas.ts`.
 */

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** A call in a completion's message: `arguments` is the JSON object as text. */
export interface ChatCompletionMessageToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A call in a streamed delta: the first one names it (`id`, `type`, `function.name`); the rest add `arguments`. */
export interface ChatCompletionChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments: string };
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Present when part of the prompt came from the prefix cache, as the OpenAI API reports its prompt caching. */
  prompt_tokens_details?: { cached_tokens: number };
}

/** A token's log probability (`top_logprobs` entries have no `top_logprobs` of their own). */
export interface TopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface TokenLogprob extends TopLogprob {
  top_logprobs: TopLogprob[];
}

/** A choice's (or chunk's) log probabilities, with `logprobs: true`; `null` otherwise. */
export interface ChoiceLogprobs {
  content: TokenLogprob[] | null;
  refusal: null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    /** `content` is null when the reply only called tools; `tool_calls` is there when it called any. */
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls?: ChatCompletionMessageToolCall[];
    };
    logprobs: ChoiceLogprobs | null;
    finish_reason: FinishReason;
  }[];
  usage: CompletionUsage;
  /** Stands for the model's configuration: equal fingerprints, equal seeds and equal requests give equal answers. */
  system_fingerprint: string;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  /** The same on every chunk, and as on a non-streamed completion. */
  system_fingerprint: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; tool_calls?: ChatCompletionChunkToolCall[] };
    logprobs: ChoiceLogprobs | null;
    finish_reason: FinishReason | null;
  }[];
  /** Present on every chunk when `stream_options.include_usage` is set: null, except on the last chunk. */
  usage?: CompletionUsage | null;
}

export interface Embedding {
  object: 'embedding';
  index: number;
  /** Numbers with `encoding_format: "float"`; little-endian float32 in standard base64 with `"base64"`. */
  embedding: number[] | string;
}

export interface EmbeddingList {
  object: 'list';
  data: Embedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface Model {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  /** Lantern's own: the candidates that can serve it here, in the order they are tried (`x-lantern-backend` names). */
  candidates?: string[];
  /** Lantern's own: the candidate that answered its last request or, before any, the first in line. */
  served_by?: string | null;
}

export interface ModelList {
  object: 'list';
  data: Model[];
}

export interface ErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | null;
  };
}

/** The legacy completions API's log probabilities (`logprobs: N`): parallel arrays, one entry per token. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  /** The `N` most likely tokens at each step, and the sampled one, by their text. */
  top_logprobs: Record<string, number>[];
  /** Where each token starts in the choice's `text` (the prompt's length first, with `echo`), in UTF-16 code units. */
  text_offset: number[];
}

/** A choice of a text completion, or of one of its chunks (then `text` is the new text, `finish_reason` null until the end). */
export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: FinishReason | null;
}

/** `POST /v1/completions`: the answer, and each chunk of a streamed one (openai-node's `Completion`). */
export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: CompletionChoice[];
  /** On the answer; on a stream, with `stream_options.include_usage`: null on every chunk but the last. */
  usage?: CompletionUsage | null;
}
