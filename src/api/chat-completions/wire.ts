import type { CompletionUsage } from '../usage.ts';

/**
 * The chat completions wire format, field for field: snake_case names, literal `object` values and nullable unions,
 * as the OpenAI API and its clients (openai-node's `ChatCompletion`, `ChatCompletionChunk`) have them. The request body
 * is described by the schema in `schema.ts`.
 */

/** Why a choice ended. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls';

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

/** An alternative token's log probability (`top_logprobs` entries have no `top_logprobs` of their own). */
export interface ChatCompletionTopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

/** A generated token's log probability, and its most likely alternatives. */
export interface ChatCompletionTokenLogprob extends ChatCompletionTopLogprob {
  top_logprobs: ChatCompletionTopLogprob[];
}

/** A choice's (or chunk's) log probabilities, with `logprobs: true`; `null` otherwise. */
export interface ChoiceLogprobs {
  content: ChatCompletionTokenLogprob[] | null;
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
      /**
       * A reasoning model's thought, apart from its answer, as vLLM, llama.cpp's server and DeepSeek return it (the AI
       * SDK and LangChain read it as reasoning); absent when the model did not think.
       */
      reasoning_content?: string;
      /** The same thought, as Ollama and OpenRouter return it (the OpenAI Agents SDK reads only this name). */
      reasoning?: string;
      tool_calls?: ChatCompletionMessageToolCall[];
    };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason;
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
    delta: {
      role?: 'assistant';
      content?: string | null;
      /** A piece of the thought, before any `content` (as `message.reasoning_content`). */
      reasoning_content?: string;
      /** The same piece, under the other name (as `message.reasoning`). */
      reasoning?: string;
      tool_calls?: ChatCompletionChunkToolCall[];
    };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason | null;
  }[];
  /** Present on every chunk when `stream_options.include_usage` is set: null, except on the last chunk. */
  usage?: CompletionUsage | null;
}
