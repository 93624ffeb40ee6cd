import type { CompletionUsage } from '../usage.ts';

/** The legacy completions wire format (`POST /v1/completions`), as openai-node's `Completion` has it. */

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
  finish_reason: 'stop' | 'length' | null;
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
