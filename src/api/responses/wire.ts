/**
 * The Responses API's wire format (`/v1/responses`), field for field as openai-node's `Response`,
 * `ResponseOutputItem` and `ResponseStreamEvent` have it, for the parts Lantern produces: output messages of text and
 * function calls. Request bodies are described by `responses-schema.ts`.
 */

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

/** A token's log probability in an `output_text` part. */
export interface ResponseLogprob {
  token: string;
  bytes: number[];
  logprob: number;
  top_logprobs: { token: string; bytes: number[]; logprob: number }[];
}

/**
 * A passage of a file the answer drew on (`file_search`): `index` is the position in the text where it is cited, as
 * OpenAI's answers place it (after the sentence, or at the end).
 */
export interface FileCitation {
  type: 'file_citation';
  file_id: string;
  filename: string;
  index: number;
}

export interface ResponseOutputText {
  type: 'output_text';
  text: string;
  annotations: FileCitation[];
  /** With `include: ["message.output_text.logprobs"]`; empty otherwise. */
  logprobs: ResponseLogprob[];
}

export interface ResponseOutputMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  status: ItemStatus;
  content: ResponseOutputText[];
}

/** A call of a function tool the model made; `arguments` is a JSON object as text. */
export interface ResponseFunctionToolCall {
  id: string;
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
  status: ItemStatus;
}

/**
 * A reasoning model's thought: its text as `reasoning_text` content (as vLLM and open-weight reasoning models return
 * it), and as its own summary when the request asked for one (`reasoning.summary`; no model summarises it here).
 */
export interface ResponseReasoningItem {
  id: string;
  type: 'reasoning';
  summary: { type: 'summary_text'; text: string }[];
  content: { type: 'reasoning_text'; text: string }[];
  status: ItemStatus;
}

/** A result of a file search, as `include: ["file_search_call.results"]` shows it. */
export interface FileSearchResult {
  file_id: string;
  filename: string;
  score: number;
  text: string;
  attributes: Record<string, string | number | boolean> | null;
}

/** The search `file_search` ran before the answer: its queries and, when asked for, its results. */
export interface ResponseFileSearchToolCall {
  id: string;
  type: 'file_search_call';
  status: 'in_progress' | 'searching' | 'completed' | 'incomplete' | 'failed';
  queries: string[];
  results: FileSearchResult[] | null;
}

export type ResponseOutputItem =
  ResponseOutputMessage | ResponseFunctionToolCall | ResponseReasoningItem | ResponseFileSearchToolCall;

/** `reasoning.summary`: the summary a request asks for, if any. */
export type ReasoningSummary = 'auto' | 'concise' | 'detailed';

/** The `file_search` tool as the request declared it, echoed on the response. */
export interface FileSearchTool {
  type: 'file_search';
  vector_store_ids: string[];
  max_num_results?: number;
  filters?: unknown;
  ranking_options?: {
    ranker?: 'auto' | 'default-2024-11-15';
    score_threshold?: number;
    hybrid_search?: { embedding_weight: number; text_weight: number };
  };
}

/** A function tool as the request declared it (`tools[]`), echoed on the response. */
export interface FunctionTool {
  type: 'function';
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

export type ResponsesToolChoice =
  'none' | 'auto' | 'required' | { type: 'function'; name: string } | { type: 'file_search' };

/** `text.format`: free text, any JSON object, or JSON valid against a schema. */
export type ResponseFormatTextConfig =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean | null;
    };

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** `queued` and `cancelled` are a background response's only (see background.ts). */
export type ResponseStatus = 'completed' | 'failed' | 'in_progress' | 'incomplete' | 'queued' | 'cancelled';

/** Why a response failed, in the API's `ResponseError` codes. */
export interface ResponseError {
  code: 'server_error' | 'rate_limit_exceeded' | 'invalid_prompt';
  message: string;
}

export interface Response {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  /** When it ended, in Unix seconds; null while it runs. */
  completed_at: number | null;
  /** Whether it ran on after its answer (`background: true`), detached from the request. */
  background: boolean;
  error: ResponseError | null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  model: string;
  output: ResponseOutputItem[];
  /** The text of every `output_text` part, joined: openai-node's convenience, written by the server too. */
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  /** The conversation (Conversations API) it continued and was added to; null when the request named none. */
  conversation: { id: string } | null;
  reasoning: { effort: string | null; summary: ReasoningSummary | null };
  service_tier: 'default';
  /** Whether it is kept for retrieval: the request's `store`, or false when keeping it failed (see docs/responses.md). */
  store: boolean;
  temperature: number;
  text: { format: ResponseFormatTextConfig; verbosity: 'low' | 'medium' | 'high' };
  tool_choice: ResponsesToolChoice;
  tools: (FunctionTool | FileSearchTool)[];
  top_logprobs: number;
  top_p: number;
  truncation: 'disabled';
  usage: ResponseUsage | null;
  presence_penalty: number;
  frequency_penalty: number;
  /**
   * The most calls of built-in tools the response may make. `file_search` is the only one here, and it searches once
   * before the answer: any limit of 1 or more holds, and 0 runs no search.
   */
  max_tool_calls: number | null;
  /** The app's identifier of its end user (OpenAI's successor of `user`), echoed: nothing here is monitored. */
  safety_identifier: string | null;
  /**
   * The app's name for a prompt prefix it shares between requests, echoed. Prompts are cached here per API key by
   * their tokens whatever the key (docs/performance.md), so it changes nothing.
   */
  prompt_cache_key: string | null;
  user: string | null;
}

/** `DELETE /v1/responses/{id}`. */
export interface ResponseDeleted {
  id: string;
  object: 'response.deleted';
  deleted: true;
}

/** A token's log probability in an `output_text` delta: without bytes. */
export interface DeltaLogprob {
  token: string;
  logprob: number;
  top_logprobs: { token: string; logprob: number }[];
}

type Sequenced<T> = T & { sequence_number: number };

/** The events of a streamed response, in the order OpenAI sends them; each event's `type` is also its SSE name. */
export type ResponseStreamEvent = Sequenced<
  | { type: 'response.created' | 'response.queued' | 'response.in_progress'; response: Response }
  | { type: 'response.completed' | 'response.incomplete' | 'response.failed'; response: Response }
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: ResponseOutputItem }
  | {
      type: 'response.content_part.added' | 'response.content_part.done';
      item_id: string;
      output_index: number;
      content_index: number;
      part: ResponseOutputText;
    }
  | {
      type: 'response.output_text.delta';
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
      logprobs: DeltaLogprob[];
    }
  | {
      type: 'response.output_text.done';
      item_id: string;
      output_index: number;
      content_index: number;
      text: string;
      logprobs: DeltaLogprob[];
    }
  | { type: 'response.function_call_arguments.delta'; item_id: string; output_index: number; delta: string }
  | {
      type:
        | 'response.file_search_call.in_progress'
        | 'response.file_search_call.searching'
        | 'response.file_search_call.completed';
      item_id: string;
      output_index: number;
    }
  | {
      type: 'response.output_text.annotation.added';
      item_id: string;
      output_index: number;
      content_index: number;
      annotation_index: number;
      annotation: FileCitation;
    }
  | {
      type: 'response.reasoning_text.delta';
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
    }
  | { type: 'response.reasoning_text.done'; item_id: string; output_index: number; content_index: number; text: string }
  | {
      type: 'response.reasoning_summary_part.added' | 'response.reasoning_summary_part.done';
      item_id: string;
      output_index: number;
      summary_index: number;
      part: { type: 'summary_text'; text: string };
    }
  | {
      type: 'response.reasoning_summary_text.delta';
      item_id: string;
      output_index: number;
      summary_index: number;
      delta: string;
    }
  | {
      type: 'response.reasoning_summary_text.done';
      item_id: string;
      output_index: number;
      summary_index: number;
      text: string;
    }
  | {
      type: 'response.function_call_arguments.done';
      item_id: string;
      output_index: number;
      name: string;
      arguments: string;
    }
>;
