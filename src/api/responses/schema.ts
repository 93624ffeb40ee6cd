import * as z from 'zod';
import {
  REASONING_EFFORTS,
  thinksAt,
  type ChatImage,
  type ChatRequest,
  type JsonConstraint,
} from '../../engine-interface/index.ts';
import { samplingFields } from '../common-fields.ts';
import { decodeCompaction } from './compaction-content.ts';
import { invalidRequest } from '../errors.ts';
import { checkImageCount, checkImageUrl, imageDetail, textAndImages, type ImagePartLimits } from '../image-parts.ts';
import type { Limits } from '../options.ts';
import { optional, parse } from '../request-validation.ts';
import { toConstraint, type ToolParamNamer } from '../tool-schemas.ts';
import type { AttributeFilter } from '../../document-search/index.ts';
import { filters, rankingOf, toFilter, toolRankingOptions } from '../vector-stores/schema.ts';
import type {
  FileSearchTool,
  FunctionTool,
  ReasoningSummary,
  ResponseFormatTextConfig,
  ResponsesToolChoice,
} from './wire.ts';

/*
 * The Responses API's request body (`POST /v1/responses`) and its conversion to what the route needs: the input items,
 * normalised, and the engine request without its messages (they come from the conversation, which may continue a
 * stored one). Fields that would change the meaning of a request if ignored (hosted tools, stored prompts) are refused
 * with a 400 naming them.
 */

/** An input item of a conversation, as kept and continued: text only, function calls and their outputs. */
export type ConversationItem =
  | {
      type: 'message';
      role: 'user' | 'assistant' | 'system' | 'developer';
      content: string;
      /** A user message's images, where they stand in `content` (kept with a stored response, as OpenAI does). */
      images?: ChatImage[];
      id?: string;
    }
  | { type: 'function_call'; call_id: string; name: string; arguments: string; id?: string }
  | { type: 'function_call_output'; call_id: string; output: string; id?: string }
  /** A reasoning model's thought, given back with the turn it came before (its text, or its summary's). */
  | { type: 'reasoning'; text: string; id?: string }
  /**
   * A file search of an earlier turn, given back (the Agents SDK sends a run's items back as input). It adds nothing to
   * the prompt: a turn with `file_search` searches again for its own question.
   */
  | { type: 'file_search_call'; queries: string[]; id?: string }
  /** The summary of the items a compaction replaced (`/v1/responses/compact`), read from its `encrypted_content`. */
  | { type: 'compaction'; summary: string; id?: string };

/** An input item as sent: a conversation item, or a reference to an item of a stored response. */
export type InputItem = ConversationItem | { type: 'item_reference'; id: string };

const CONTENT_PARTS =
  'Supported content parts: `input_text`, `output_text`, `refusal`, and `input_image` in user messages (files and ' +
  'audio are not read by these models).';

const TEXT_PARTS = [
  z.object({ type: z.literal('input_text'), text: z.string() }),
  z.object({ type: z.literal('output_text'), text: z.string() }),
  z.object({ type: z.literal('refusal'), refusal: z.string() }),
] as const;

const partError = { error: (issue: { code?: string }) => (issue.code === 'invalid_union' ? CONTENT_PARTS : undefined) };

/** A content part of a function call's output: text, whichever side wrote it. */
const textPart = z.discriminatedUnion('type', [...TEXT_PARTS], partError);

/** A content part of a message: text, or (in a user message) an image by URL; `file_id` is refused with its reason. */
const contentPart = z.discriminatedUnion(
  'type',
  [
    ...TEXT_PARTS,
    z.object({
      type: z.literal('input_image'),
      image_url: optional(z.string()),
      file_id: optional(z.string()),
      detail: optional(imageDetail),
    }),
  ],
  partError,
);

const itemStatus = optional(z.enum(['in_progress', 'completed', 'incomplete']));

const ITEM_TYPES =
  'Supported input items: messages (`type: "message"`), `function_call`, `function_call_output`, `reasoning` and ' +
  '`item_reference`.';

/** A reasoning item given back: its text parts, its summary parts; `encrypted_content` is OpenAI's own, not read. */
const reasoningItem = z.object({
  type: z.literal('reasoning'),
  id: optional(z.string()),
  summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() })),
  content: optional(z.array(z.object({ type: z.literal('reasoning_text'), text: z.string() }))),
  encrypted_content: optional(z.string()),
  status: itemStatus,
});

export const inputItem = z.preprocess(
  // `type` may be left out: a message is known by its role, a reference by its lone id.
  (item) =>
    typeof item === 'object' && item !== null && !Array.isArray(item) && (item as { type?: unknown }).type == null
      ? { ...item, type: 'role' in item ? 'message' : 'item_reference' }
      : item,
  z.discriminatedUnion(
    'type',
    [
      z.object({
        type: z.literal('message'),
        role: z.enum(['user', 'assistant', 'system', 'developer']),
        content: z.union([z.string(), z.array(contentPart)]),
        id: optional(z.string()),
        status: itemStatus,
      }),
      z.object({
        type: z.literal('function_call'),
        call_id: z.string().min(1),
        name: z.string().min(1),
        arguments: z.string(),
        id: optional(z.string()),
        status: itemStatus,
      }),
      z.object({
        type: z.literal('function_call_output'),
        call_id: z.string().min(1),
        output: z.union([z.string(), z.array(textPart)]),
        id: optional(z.string()),
        status: itemStatus,
      }),
      reasoningItem,
      z.object({
        type: z.literal('file_search_call'),
        id: optional(z.string()),
        queries: optional(z.array(z.string())),
        status: optional(z.string()),
        results: optional(z.array(z.unknown())),
      }),
      z.object({ type: z.literal('item_reference'), id: z.string().min(1) }),
      z.object({ type: z.literal('compaction'), encrypted_content: z.string().min(1), id: optional(z.string()) }),
    ],
    { error: (issue) => (issue.code === 'invalid_union' ? `Unsupported input item type. ${ITEM_TYPES}` : undefined) },
  ),
);

/** OpenAI's rule for names of functions and schemas. */
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const TOOLS = 'Supported tools: `function` and `file_search` (other hosted tools do not run here).';

const functionTool = z.object(
  {
    type: z.literal('function', { error: TOOLS }),
    name: z.string().regex(NAME, 'Function names are 1 to 64 letters, digits, underscores and dashes.'),
    description: optional(z.string()),
    parameters: optional(z.record(z.string(), z.unknown())),
    strict: optional(z.boolean()),
  },
  { error: TOOLS },
);

/** OpenAI allows two vector stores in one `file_search` tool. */
const fileSearchTool = z.object({
  type: z.literal('file_search'),
  vector_store_ids: z.array(z.string().min(1)).min(1).max(2),
  max_num_results: optional(z.int().min(1).max(50)),
  filters: optional(filters),
  ranking_options: optional(toolRankingOptions),
});

const tool = z.discriminatedUnion('type', [functionTool, fileSearchTool], {
  error: (issue) => (issue.code === 'invalid_union' ? TOOLS : undefined),
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), name: z.string().min(1) }),
  z.object({ type: z.literal('file_search') }),
]);

const format = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: z.string().regex(NAME, 'The name must be 1 to 64 letters, digits, `_` or `-`.'),
      schema: z.record(z.string(), z.unknown()),
      description: optional(z.string()),
      strict: optional(z.boolean()),
    }),
  ],
  { error: 'The type of `text.format` must be "text", "json_object" or "json_schema".' },
);

/** What refusing a field says: it exists in the OpenAI API, and Lantern does not do it. */
const unsupported = (what: string) => optional(z.never(`${what} is not supported here.`));

function responsesSchema(limits: Limits) {
  const { model, temperature, top_p, presence_penalty, frequency_penalty } = samplingFields(limits);
  return z.object({ model, temperature, top_p, presence_penalty, frequency_penalty }).extend({
    // Required by `POST /v1/responses`, optional where a stored conversation may stand for it (`responsesParser`).
    input: optional(z.union([z.string(), z.array(inputItem).min(1).max(limits.maxMessages)])),
    instructions: optional(z.string()),
    max_output_tokens: optional(z.int().min(1).max(limits.maxTokens)),
    stream: optional(z.boolean()),
    store: optional(z.boolean()),
    previous_response_id: optional(z.string().min(1)),
    tools: optional(z.array(tool).max(128)),
    tool_choice: optional(toolChoice),
    parallel_tool_calls: optional(z.boolean()),
    text: optional(z.object({ format: optional(format), verbosity: optional(z.enum(['low', 'medium', 'high'])) })),
    reasoning: optional(
      z.object({
        effort: optional(z.enum(REASONING_EFFORTS)),
        summary: optional(z.enum(['auto', 'concise', 'detailed'])),
        // Its older name.
        generate_summary: optional(z.enum(['auto', 'concise', 'detailed'])),
      }),
    ),
    include: optional(z.array(z.string())),
    top_logprobs: optional(z.int().min(0).max(20)),
    metadata: optional(z.record(z.string().max(64), z.string().max(512))),
    user: optional(z.string()),
    // OpenAI's limits: a safety identifier is at most 64 characters; a cache key is the app's name for a shared prefix.
    safety_identifier: optional(z.string().max(64)),
    prompt_cache_key: optional(z.string().max(1024)),
    max_tool_calls: optional(z.int().min(0)),
    truncation: optional(z.enum(['disabled'], { error: 'Only `truncation: "disabled"` is supported.' })),
    background: optional(z.boolean()),
    // A conversation of the Conversations API, by id or as `{ id }`: its items come before the input.
    conversation: optional(z.union([z.string().min(1), z.object({ id: z.string().min(1) })])),
    prompt: unsupported('`prompt` (stored prompt templates)'),
  });
}

/** A validated Responses request: the input, what the response echoes, and the engine request but its messages. */
export interface ResponsesParams {
  model: string;
  stream: boolean;
  store: boolean;
  /** Whether it runs on after the answer, detached from its request (see background.ts). */
  background: boolean;
  previousResponseId: string | null;
  /** The conversation (Conversations API) the response continues and is added to. */
  conversationId: string | null;
  instructions: string | null;
  input: InputItem[];
  /** The `file_search` tool, when the request has one and its `tool_choice` is not `none`. */
  fileSearch: ParsedFileSearch | null;
  /** Whether `include` asks for the file search's results in its item. */
  includeSearchResults: boolean;
  /** The engine request; `messages` is filled once the conversation is known. */
  request: Omit<ChatRequest, 'messages'>;
  /** The request's settings as the response object shows them. */
  settings: {
    max_output_tokens: number | null;
    metadata: Record<string, string>;
    parallel_tool_calls: boolean;
    reasoning: { effort: string | null; summary: ReasoningSummary | null };
    temperature: number;
    top_p: number;
    text: { format: ResponseFormatTextConfig; verbosity: 'low' | 'medium' | 'high' };
    tool_choice: ResponsesToolChoice;
    tools: (FunctionTool | FileSearchTool)[];
    top_logprobs: number;
    presence_penalty: number;
    frequency_penalty: number;
    max_tool_calls: number | null;
    safety_identifier: string | null;
    prompt_cache_key: string | null;
    user: string | null;
  };
}

export interface ParsedFileSearch {
  vectorStoreIds: string[];
  maxResults: number;
  filter: AttributeFilter | undefined;
  ranking: ReturnType<typeof rankingOf>;
}

/**
 * Results a `file_search` retrieves by default: OpenAI's 20. The model is given as many of them as its context window
 * holds (the route's `withSources`), best first.
 */
const FILE_SEARCH_RESULTS = 20;

/** `include` value that asks for the file search's results. */
const SEARCH_RESULTS = 'file_search_call.results';

/** `include` value that asks for log probabilities. */
const LOGPROBS = 'message.output_text.logprobs';

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function responsesParser(
  limits: Limits,
  { inputOptional = false }: { inputOptional?: boolean } = {},
): (body: unknown) => ResponsesParams {
  const schema = responsesSchema(limits);
  return (body) => {
    const p = parse(schema, body);
    // Compaction and token counts may name only the stored response they continue.
    if (p.input == null && !inputOptional) throw invalidRequest("Missing required parameter: 'input'.", 'input');
    if (p.metadata && Object.keys(p.metadata).length > 16) {
      throw invalidRequest("Invalid 'metadata': at most 16 keys.", 'metadata', 'invalid_value');
    }
    // As OpenAI's API: a background response is polled for, so it must be kept.
    if (p.background === true && p.store === false) {
      throw invalidRequest('Background mode requires `store` to be true.', 'background');
    }
    if (p.conversation != null && p.previous_response_id != null) {
      // As OpenAI answers: one source of the conversation before the input.
      throw invalidRequest(
        "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.",
        null,
        'mutually_exclusive_parameters',
      );
    }
    const functionTools = (p.tools ?? []).filter((t) => t.type === 'function');
    const searchTools = (p.tools ?? []).filter((t) => t.type === 'file_search');
    if (searchTools.length > 1) {
      throw invalidRequest('Only one `file_search` tool may be given: list every vector store in it.', 'tools');
    }
    const tools = (p.tools ?? []).map((t): FunctionTool | FileSearchTool =>
      t.type === 'file_search'
        ? {
            type: 'file_search',
            vector_store_ids: t.vector_store_ids,
            ...(t.max_num_results != null && { max_num_results: t.max_num_results }),
            ...(t.filters != null && { filters: t.filters }),
            ...(t.ranking_options != null && {
              ranking_options: {
                ...(t.ranking_options.ranker != null && { ranker: t.ranking_options.ranker }),
                ...(t.ranking_options.score_threshold != null && {
                  score_threshold: t.ranking_options.score_threshold,
                }),
                ...(t.ranking_options.hybrid_search != null && { hybrid_search: t.ranking_options.hybrid_search }),
              },
            }),
          }
        : {
            type: 'function',
            name: t.name,
            description: t.description ?? null,
            parameters: t.parameters ?? null,
            strict: t.strict ?? null,
          },
    );
    if (p.tool_choice != null && !tools.length && p.tool_choice !== 'none' && p.tool_choice !== 'auto') {
      throw invalidRequest("Invalid value for 'tool_choice': a tool must be chosen from 'tools'.", 'tool_choice');
    }
    const searchTool = searchTools[0];
    if (typeof p.tool_choice === 'object' && p.tool_choice?.type === 'file_search' && !searchTool) {
      throw invalidRequest("Invalid value for 'tool_choice': 'tools' has no `file_search` tool.", 'tool_choice');
    }
    // `max_tool_calls` counts calls of built-in tools: the search is the one here, so 0 runs none.
    const fileSearch: ParsedFileSearch | null =
      searchTool && p.tool_choice !== 'none' && p.max_tool_calls !== 0
        ? {
            vectorStoreIds: searchTool.vector_store_ids,
            maxResults: searchTool.max_num_results ?? FILE_SEARCH_RESULTS,
            filter: toFilter(searchTool.filters),
            ranking: rankingOf(searchTool.ranking_options),
          }
        : null;

    const request: Omit<ChatRequest, 'messages'> = {
      temperature: p.temperature ?? 1,
      topP: p.top_p ?? 1,
      presencePenalty: p.presence_penalty ?? 0,
      frequencyPenalty: p.frequency_penalty ?? 0,
      stop: [],
      n: 1,
    };
    if (p.max_output_tokens != null) request.maxTokens = p.max_output_tokens;
    else request.defaultMaxTokens = limits.maxTokens;
    // Thinking on or off as the effort says; no effort: the model's default.
    const effort = p.reasoning?.effort;
    if (effort != null) {
      request.thinking = thinksAt(effort);
      request.reasoningEffort = effort;
    }
    const summary = p.reasoning?.summary ?? p.reasoning?.generate_summary ?? null;
    const f = p.text?.format;
    const textFormat: ResponseFormatTextConfig =
      f?.type === 'json_schema'
        ? {
            type: 'json_schema',
            name: f.name,
            schema: f.schema,
            ...(f.description != null && { description: f.description }),
            strict: f.strict ?? null,
          }
        : { type: f?.type ?? 'text' };
    const json: JsonConstraint | undefined =
      textFormat.type === 'json_object'
        ? { type: 'json', schema: null, param: 'text.format' }
        : textFormat.type === 'json_schema'
          ? { type: 'json', schema: textFormat.schema, param: 'text.format' }
          : undefined;
    // Function tools on the chat tool mechanism: the same checks and the same constraint as chat completions'.
    // The search runs before the answer whenever the tool is there, so choosing it (or `required` with no function to
    // call) asks nothing more of the model.
    const choice =
      typeof p.tool_choice === 'object' && p.tool_choice
        ? p.tool_choice.type === 'function'
          ? { name: p.tool_choice.name }
          : 'auto'
        : p.tool_choice === 'required' && !functionTools.length
          ? 'auto'
          : p.tool_choice;
    // Refusals name the function's place in the request's own `tools`, file_search among them.
    const places = (p.tools ?? []).flatMap((t, i) => (t.type === 'function' ? [i] : []));
    const paramOf: ToolParamNamer = (i, field) => flatToolParam(places[i]!, field);
    const constraint = toConstraint(json, functionTools, choice, p.parallel_tool_calls, paramOf, limits);
    if (constraint) request.constraint = constraint;
    if (p.include?.includes(LOGPROBS) || p.top_logprobs != null) request.logprobs = p.top_logprobs ?? 0;

    const input: InputItem[] =
      p.input == null
        ? []
        : typeof p.input === 'string'
          ? [{ type: 'message', role: 'user', content: p.input }]
          : toInputItems(p.input, limits);

    checkImageCount(
      input.filter((item) => item.type === 'message'),
      limits.maxImages,
    );

    return {
      model: p.model,
      stream: p.stream === true,
      store: p.store !== false,
      background: p.background === true,
      previousResponseId: p.previous_response_id ?? null,
      conversationId:
        p.conversation == null ? null : typeof p.conversation === 'string' ? p.conversation : p.conversation.id,
      instructions: p.instructions ?? null,
      input,
      fileSearch,
      includeSearchResults: p.include?.includes(SEARCH_RESULTS) ?? false,
      request,
      settings: {
        max_output_tokens: p.max_output_tokens ?? null,
        metadata: p.metadata ?? {},
        parallel_tool_calls: p.parallel_tool_calls ?? true,
        reasoning: { effort: effort ?? null, summary },
        temperature: request.temperature,
        top_p: request.topP,
        text: { format: textFormat, verbosity: p.text?.verbosity ?? 'medium' },
        tool_choice: typeof p.tool_choice === 'object' && p.tool_choice ? p.tool_choice : (p.tool_choice ?? 'auto'),
        tools,
        top_logprobs: p.top_logprobs ?? 0,
        presence_penalty: request.presencePenalty,
        frequency_penalty: request.frequencyPenalty,
        max_tool_calls: p.max_tool_calls ?? null,
        safety_identifier: p.safety_identifier ?? null,
        prompt_cache_key: p.prompt_cache_key ?? null,
        user: p.user ?? null,
      },
    };
  };
}

/** An input item as the schema reads it. */
export type ParsedInputItem = z.output<typeof inputItem>;

/**
 * Input items as sent (`input` of a response, `items` of a conversation), normalised: each message's text and images,
 * each output's text. `param` names the list in refusals.
 */
export function toInputItems(items: ParsedInputItem[], limits: ImagePartLimits, param = 'input'): InputItem[] {
  return items.map((item, i): InputItem => {
    switch (item.type) {
      case 'item_reference':
        return { type: 'item_reference', id: item.id };
      case 'message':
        return withId(messageItem(item.role, item.content, i, limits, param), item.id);
      case 'function_call':
        return withId(
          { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments },
          item.id,
        );
      case 'reasoning': {
        const parts = item.content?.length ? item.content : item.summary;
        return withId({ type: 'reasoning', text: parts.map((part) => part.text).join('\n') }, item.id);
      }
      case 'file_search_call':
        return withId({ type: 'file_search_call', queries: item.queries ?? [] }, item.id);
      case 'function_call_output':
        return withId({ type: 'function_call_output', call_id: item.call_id, output: text(item.output) }, item.id);
      case 'compaction':
        return withId(
          { type: 'compaction', summary: decodeCompaction(item.encrypted_content, `${param}[${i}]`) },
          item.id,
        );
    }
  });
}

type MessageContent = z.output<typeof contentPart>[] | string;

/** A message item: its text, and a user message's images (checked as chat's are: URL, type and size). */
function messageItem(
  role: 'user' | 'assistant' | 'system' | 'developer',
  content: MessageContent,
  i: number,
  limits: ImagePartLimits,
  list = 'input',
): ConversationItem & { type: 'message' } {
  if (typeof content === 'string') return { type: 'message', role, content };
  const parts = content.map((part, j) => {
    if (part.type !== 'input_image') return { text: part.type === 'refusal' ? part.refusal : part.text };
    const param = `${list}[${i}].content[${j}]`;
    if (role !== 'user') {
      throw invalidRequest(
        `Invalid '${param}': images are only allowed in messages with role 'user', not '${role}'.`,
        param,
      );
    }
    if (part.image_url == null) {
      throw part.file_id != null
        ? invalidRequest(
            `Invalid '${param}.file_id': there is no Files API here, so no file IDs: send the image as \`image_url\` ` +
              '(an http(s) URL or a base64 data URL).',
            `${param}.file_id`,
          )
        : invalidRequest(`Missing required parameter: '${param}.image_url'.`, `${param}.image_url`);
    }
    checkImageUrl(part.image_url, `${param}.image_url`, limits.maxImageBytes);
    return { image: { url: part.image_url, detail: part.detail ?? 'auto', param } };
  });
  const { content: text, images } = textAndImages(parts);
  return { type: 'message', role, content: text, ...(images.length > 0 && { images }) };
}

/** This API's function tools are flat: `tools[i].name`, where chat completions have `tools[i].function.name`. */
const flatToolParam: ToolParamNamer = (index, field) => `tools[${index}].${field}`;

type TextParts =
  string | ({ type: 'input_text' | 'output_text'; text: string } | { type: 'refusal'; refusal: string })[];

/** A message's or an output's text: its parts joined by new lines, as chat messages' parts are. */
const text = (content: TextParts): string =>
  typeof content === 'string'
    ? content
    : content.map((part) => (part.type === 'refusal' ? part.refusal : part.text)).join('\n');

function withId<T extends ConversationItem>(item: T, id: string | null | undefined): T {
  return id == null ? item : { ...item, id };
}
