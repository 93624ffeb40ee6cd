import * as z from 'zod';
import { REASONING_EFFORTS, thinksAt, type ChatRequest, type JsonConstraint } from '../../engine-interface/index.ts';
import { samplingFields, samplingOf } from '../common-fields.ts';
import { invalidRequest } from '../errors.ts';
import type { Limits } from '../options.ts';
import { checkImageCount, chatImagePart, imageLimitsOf } from '../image-parts.ts';
import { optional, parse } from '../request-validation.ts';
import { chatToolParam, toConstraint, toEngineMessages, toolCallSchema, toolFields } from '../tool-schemas.ts';

/*
 * The chat completions body (`POST /v1/chat/completions`) as a zod schema, and its conversion to the engine request.
 * Fields that are not listed are ignored (clients send `user`, ...); `store` and `metadata` keep the completion (see
 * `stored.ts`); fields that would silently
 * change the meaning of a request when ignored are refused with a 400 that names them. Tool calling's fields and their
 * conversion are in `tool-schemas.ts`.
 */

const CONTENT_PARTS =
  'Supported content parts: `text`, and `image_url` in user messages (audio and files are not read by these models).';

/** A content part: text, or (in a user message) an image; other kinds are refused naming the part's `type`. */
const contentPart = z.discriminatedUnion(
  'type',
  [z.object({ type: z.literal('text'), text: z.string() }), chatImagePart],
  {
    error: (issue) => (issue.code === 'invalid_union' ? CONTENT_PARTS : undefined),
  },
);

const message = z.object({
  // `developer` is the newer name of `system` in the OpenAI API; both reach the model as a system message.
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  // Required, except in an assistant message with tool calls: checked in `toEngineMessages`.
  content: z.union([z.string(), z.array(contentPart)]).nullish(),
  tool_calls: optional(z.array(toolCallSchema)),
  tool_call_id: optional(z.string()),
  reasoning_content: optional(z.string()),
  reasoning: optional(z.string()),
});

type ChatBody = z.output<ReturnType<typeof chatSchema>>;

/**
 * Parameters that mean something only beside another, refused alone as the OpenAI API refuses them (its messages,
 * `param`, no `code`). Checked after the schema, so each stays true whatever the schema learns to accept (tools,
 * logprobs) later.
 */
const DEPENDENT_PARAMETERS: { param: keyof ChatBody; alone: (p: ChatBody) => boolean; message: string }[] = [
  {
    param: 'tool_choice',
    alone: (p) => p.tool_choice != null && !p.tools?.length,
    message: "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
  },
  {
    param: 'top_logprobs',
    alone: (p) => p.top_logprobs != null && !p.logprobs,
    message: "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.",
  },
];

/** `response_format`: free text, any JSON object, or JSON valid against a schema (always enforced, `strict` or not). */
const responseFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      json_schema: z.object({
        name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'The name must be 1 to 64 letters, digits, `_` or `-`.'),
        description: optional(z.string()),
        schema: optional(z.record(z.string(), z.unknown())),
        strict: optional(z.boolean()),
      }),
    }),
  ],
  { error: 'The type of `response_format` must be "text", "json_object" or "json_schema".' },
);

function chatSchema(limits: Limits) {
  const { model, n, stream, stream_options, stop, seed, ...sampling } = samplingFields(limits);
  const maxTokens = optional(z.int().min(1).max(limits.maxTokens));
  return z.object({
    model,
    messages: z.array(message).min(1).max(limits.maxMessages),
    ...sampling,
    max_tokens: maxTokens,
    max_completion_tokens: maxTokens,
    n,
    stream,
    stream_options,
    stop,
    seed,
    ...toolFields,
    response_format: optional(responseFormat),
    logprobs: optional(z.boolean()),
    top_logprobs: optional(z.int().min(0).max(20)),
    // A thinking mode is switched on or off in the forms OpenAI-compatible servers take: vLLM's and SGLang's template
    // variables (other variables are ignored) and OpenAI's reasoning effort; neither: the model's default.
    chat_template_kwargs: optional(z.object({ enable_thinking: optional(z.boolean()) })),
    reasoning_effort: optional(z.enum(REASONING_EFFORTS)),
    // Keeps the completion for the stored completions routes (stored.ts), with its metadata.
    store: optional(z.boolean()),
    metadata: optional(
      z
        .record(z.string().max(64), z.string().max(512))
        .refine((m) => Object.keys(m).length <= 16, 'At most 16 metadata pairs are allowed.'),
    ),
    // OpenAI's Predicted Outputs: text the reply will largely repeat, which speculation proposes from. At most
    // `maxInputChars` in all, its parts together: a reply is at most `maxTokens` long, and a longer prediction is only
    // tokenized, never proposed from (64 parts of 32,768 characters held the engine 7.5 s for a 40-token answer).
    prediction: optional(
      z.object({
        type: z.literal('content'),
        content: z
          .union([
            z.string().max(limits.maxInputChars),
            z.array(z.object({ type: z.literal('text'), text: z.string().max(limits.maxInputChars) })).max(64),
          ])
          .refine(
            (content) =>
              typeof content === 'string' ||
              content.reduce((chars, part) => chars + part.text.length, 0) <= limits.maxInputChars,
            `A prediction may hold at most ${limits.maxInputChars} characters, its parts together.`,
          ),
      }),
    ),
  });
}

/** A validated chat completions request: the engine request and what the answer's shape depends on. */
export interface ChatParams {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  request: ChatRequest;
  /** Whether to keep the completion (`store: true`), and the metadata kept with it. */
  store: boolean;
  metadata: Record<string, string>;
}

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function chatParser(limits: Limits): (body: unknown) => ChatParams {
  const schema = chatSchema(limits);
  return (body) => {
    const p = parse(schema, body);
    const { stream, includeUsage, request: sampling } = samplingOf(p);
    const alone = DEPENDENT_PARAMETERS.find((rule) => rule.alone(p));
    if (alone) throw invalidRequest(alone.message, alone.param);
    const messages = toEngineMessages(p.messages, limits);
    checkImageCount(messages, limits.maxImages);
    const request: ChatRequest = { messages, ...sampling };
    if (messages.some((m) => m.images)) request.imageLimits = imageLimitsOf(limits);
    // `max_completion_tokens` is the newer name of `max_tokens`; when both are sent, the newer one wins.
    const maxTokens = p.max_completion_tokens ?? p.max_tokens;
    if (maxTokens != null) request.maxTokens = maxTokens;
    // Without one, the limit on max_tokens bounds the answer too, not the model's context window (up to 131,072).
    else request.defaultMaxTokens = limits.maxTokens;
    const thinking =
      p.chat_template_kwargs?.enable_thinking ??
      (p.reasoning_effort != null ? thinksAt(p.reasoning_effort) : undefined);
    if (thinking !== undefined) request.thinking = thinking;
    if (p.reasoning_effort != null) request.reasoningEffort = p.reasoning_effort;
    if (p.logprobs === true) request.logprobs = p.top_logprobs ?? 0;
    if (p.prediction) {
      const { content } = p.prediction;
      const text = typeof content === 'string' ? content : content.map((part) => part.text).join('');
      if (text) request.prediction = text;
    }
    const format = p.response_format;
    // No schema: any JSON value (`{}` is the schema every value matches).
    const text: JsonConstraint | undefined =
      format?.type === 'json_object'
        ? { type: 'json', schema: null, param: 'response_format' }
        : format?.type === 'json_schema'
          ? { type: 'json', schema: format.json_schema.schema ?? {}, param: 'response_format' }
          : undefined;
    const tools = (p.tools ?? []).map((t) => t.function);
    const choice = typeof p.tool_choice === 'object' ? p.tool_choice?.function : p.tool_choice;
    const constraint = toConstraint(text, tools, choice, p.parallel_tool_calls, chatToolParam, limits);
    if (constraint) request.constraint = constraint;
    return { model: p.model, stream, includeUsage, request, store: p.store === true, metadata: p.metadata ?? {} };
  };
}
