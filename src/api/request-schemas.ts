import * as z from 'zod';
import type { ChatRequest } from '../engine/index.ts';
import { invalidRequest, type ApiError } from './errors.ts';
import type { Limits } from './options.ts';
import { toEngineMessages, toEngineTools, toolCallSchema, toolFields } from './tool-schemas.ts';

/*
 * The request bodies of the /v1 API as zod schemas, and their conversion to engine requests in one place.
 * Optional parameters accept `null` as "not given", as the OpenAI API does. Fields that are not listed are ignored
 * (clients send `user`, `metadata`, `store`, ...); fields that would silently change the meaning of a request when
 * ignored (token-array input) are refused with a 400 that names them. Tool calling's fields and their conversion are
 * in `tool-schemas.ts`.
 */

const optional = <T extends z.ZodType>(schema: T) => schema.nullish();

const textPart = z.object({ type: z.literal('text'), text: z.string() });

const message = z.object({
  // `developer` is the newer name of `system` in the OpenAI API; both reach the model as a system message.
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  // Required, except in an assistant message with tool calls: checked in `toEngineMessages`.
  content: z.union([z.string(), z.array(textPart)]).nullish(),
  tool_calls: optional(z.array(toolCallSchema)),
  tool_call_id: optional(z.string()),
});

/** OpenAI's `reasoning_effort` values; `none` and `minimal` leave a model's thinking mode off, the others turn it on. */
const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

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

/**
 * A seed of up to 64 bits as the engines' seed, a safe integer: safe seeds as they are; others by their 64-bit two's
 * complement with the 11 bits above the 53rd folded into the low ones, so that nearby large seeds stay apart.
 */
export function foldSeed(seed: number): number {
  if (Number.isSafeInteger(seed)) return seed;
  const bits = BigInt.asUintN(64, BigInt(seed));
  return Number((bits & ((1n << 53n) - 1n)) ^ (bits >> 53n));
}

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

/** The chat completions body; the other generation routes take their common sampling fields from it. */
export function chatSchema(limits: Limits) {
  const maxTokens = optional(z.int().min(1).max(limits.maxTokens));
  return z.object({
    model: z.string().min(1),
    messages: z.array(message).min(1).max(limits.maxMessages),
    temperature: optional(z.number().min(0).max(2)),
    top_p: optional(z.number().min(0).max(1)),
    presence_penalty: optional(z.number().min(-2).max(2)),
    frequency_penalty: optional(z.number().min(-2).max(2)),
    logit_bias: optional(
      z.record(
        z.string().regex(/^\d+$/, 'The keys of `logit_bias` must be token ids: integers, written as strings.'),
        z.number().min(-100).max(100),
      ),
    ),
    max_tokens: maxTokens,
    max_completion_tokens: maxTokens,
    n: optional(z.int().min(1).max(limits.maxChoices)),
    stream: optional(z.boolean()),
    stream_options: optional(z.object({ include_usage: optional(z.boolean()) })),
    stop: optional(z.union([z.string().min(1), z.array(z.string().min(1)).max(limits.maxStopSequences)])),
    // The OpenAI API takes any 64-bit integer; JSON numbers past 2^53 arrive rounded, and still must be accepted.
    seed: optional(
      z
        .number()
        .refine(
          (x) => Number.isInteger(x) && x >= -(2 ** 63) && x <= 2 ** 64,
          "Invalid 'seed': expected an integer of at most 64 bits.",
        ),
    ),
    ...toolFields,
    response_format: optional(responseFormat),
    logprobs: optional(z.boolean()),
    top_logprobs: optional(z.int().min(0).max(20)),
    // A thinking mode is switched off unless asked for, in the forms OpenAI-compatible servers take: vLLM's and
    // SGLang's template variables (other variables are ignored) and OpenAI's reasoning effort.
    chat_template_kwargs: optional(z.object({ enable_thinking: optional(z.boolean()) })),
    reasoning_effort: optional(z.enum(REASONING_EFFORTS)),
  });
}

function embeddingsSchema(limits: Limits) {
  const text = z.string().min(1).max(limits.maxInputChars);
  return z.object({
    model: z.string().min(1),
    input: z.union([text, z.array(text).min(1).max(limits.maxInputs)], {
      error: (issue) =>
        Array.isArray(issue.input) && issue.input.some((x) => typeof x === 'number' || Array.isArray(x))
          ? 'Token-array input is not supported: send the text, a string or an array of strings.'
          : undefined,
    }),
    encoding_format: optional(z.enum(['float', 'base64'])),
    dimensions: optional(z.never('`dimensions` is not supported: this model has a fixed embedding size.')),
  });
}

/** A validated chat completions request: the engine request and what the answer's shape depends on. */
export interface ChatParams {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  request: ChatRequest;
}

export interface EmbeddingsParams {
  model: string;
  input: string[];
  encodingFormat: 'float' | 'base64';
}

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function requestParsers(limits: Limits) {
  const chat = chatSchema(limits);
  const embeddings = embeddingsSchema(limits);
  return {
    chat(body: unknown): ChatParams {
      const p = parse(chat, body);
      if (p.stream_options != null && p.stream !== true) {
        throw invalidRequest('`stream_options` is only allowed when `stream` is true.', 'stream_options');
      }
      const alone = DEPENDENT_PARAMETERS.find((rule) => rule.alone(p));
      if (alone) throw invalidRequest(alone.message, alone.param);
      const stop = p.stop == null ? [] : typeof p.stop === 'string' ? [p.stop] : p.stop;
      const request: ChatRequest = {
        messages: toEngineMessages(p.messages),
        temperature: p.temperature ?? 1,
        topP: p.top_p ?? 1,
        presencePenalty: p.presence_penalty ?? 0,
        frequencyPenalty: p.frequency_penalty ?? 0,
        stop,
        n: p.n ?? 1,
      };
      // `max_completion_tokens` is the newer name of `max_tokens`; when both are sent, the newer one wins.
      const maxTokens = p.max_completion_tokens ?? p.max_tokens;
      if (maxTokens != null) request.maxTokens = maxTokens;
      // Without one, the limit on max_tokens bounds the answer too, not the model's context window (up to 131,072).
      else request.defaultMaxTokens = limits.maxTokens;
      if (p.seed != null) request.seed = foldSeed(p.seed);
      const effort = p.reasoning_effort;
      const thinking =
        p.chat_template_kwargs?.enable_thinking ?? (effort != null && effort !== 'none' && effort !== 'minimal');
      if (thinking) request.thinking = true;
      if (p.response_format?.type === 'json_object') request.constraint = { type: 'json', schema: null };
      if (p.response_format?.type === 'json_schema') {
        // No schema: any JSON value (`{}` is the schema every value matches).
        request.constraint = { type: 'json', schema: p.response_format.json_schema.schema ?? {} };
      }
      if (p.logprobs === true) request.logprobs = p.top_logprobs ?? 0;
      if (p.logit_bias != null) {
        request.logitBias = Object.fromEntries(Object.entries(p.logit_bias).map(([id, bias]) => [Number(id), bias]));
      }
      Object.assign(request, toEngineTools(p));
      return {
        model: p.model,
        stream: p.stream === true,
        includeUsage: p.stream_options?.include_usage === true,
        request,
      };
    },

    embeddings(body: unknown): EmbeddingsParams {
      const p = parse(embeddings, body);
      return {
        model: p.model,
        input: typeof p.input === 'string' ? [p.input] : p.input,
        encodingFormat: p.encoding_format ?? 'float',
      };
    },
  };
}

/** What zod reports for an issue without a message of our own, so that ours can be told apart from its defaults. */
const DEFAULT_MESSAGE = '\u0000';

/** Validates a request body against a schema; the first problem is a 400 naming the parameter, in the OpenAI API's words. */
export function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body, { reportInput: true, error: () => DEFAULT_MESSAGE });
  if (result.success) return result.data;
  throw issueToError(result.error.issues[0]!, []);
}

/** Turns the first zod issue into a 400 in the OpenAI API's words, naming the parameter (`messages[0].role`). */
function issueToError(issue: z.core.$ZodIssue, outerPath: PropertyKey[]): ApiError {
  const path = [...outerPath, ...issue.path];
  const param = formatPath(path);
  const input = (issue as { input?: unknown }).input;
  if (issue.message !== DEFAULT_MESSAGE) return invalidRequest(issue.message, param);
  if (input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_union')) {
    return invalidRequest(`Missing required parameter: '${param}'.`, param);
  }
  switch (issue.code) {
    case 'invalid_type':
      return invalidRequest(
        `Invalid type for '${param}': expected ${describeType(issue.expected)}, but got ${describeValue(input)} instead.`,
        param,
        'invalid_type',
      );
    case 'too_big':
    case 'too_small':
      return invalidRequest(`Invalid '${param}': ${describeBound(issue)}`, param, 'invalid_value');
    case 'invalid_value':
      return invalidRequest(
        `Invalid value for '${param}': expected ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, ` +
          `but got ${describeValue(input)}.`,
        param,
        'invalid_value',
      );
    case 'invalid_union': {
      // Report from the alternative that got furthest: a string array with a bad element is about that element.
      const deepest = issue.errors
        .flat()
        .reduce<z.core.$ZodIssue | undefined>(
          (best, candidate) => (candidate.path.length > (best?.path.length ?? 0) ? candidate : best),
          undefined,
        );
      if (deepest) return issueToError(deepest, path);
      const expected = issue.errors.flat().map((e) => (e.code === 'invalid_type' ? describeType(e.expected) : null));
      const shapes = [...new Set(expected.filter((x) => x !== null))].join(' or ');
      const bound = issue.errors.flat().find((e) => e.code === 'too_big' || e.code === 'too_small');
      if (bound) return issueToError(bound, path);
      return invalidRequest(
        `Invalid type for '${param}': expected ${shapes}, but got ${describeValue(input)} instead.`,
        param,
        'invalid_type',
      );
    }
    case 'invalid_key':
    case 'invalid_element':
      // A record's key or a map's element: the nested issue says what is wrong with it.
      return issue.issues[0] ? issueToError(issue.issues[0], path) : invalidRequest(`Invalid '${param}'.`, param);
    default:
      return invalidRequest(`Invalid value for '${param}'.`, param, 'invalid_value');
  }
}

function describeBound(issue: z.core.$ZodIssueTooBig | z.core.$ZodIssueTooSmall): string {
  const limit = issue.code === 'too_big' ? issue.maximum : issue.minimum;
  const op = issue.code === 'too_big' ? (issue.inclusive ? '<=' : '<') : issue.inclusive ? '>=' : '>';
  const input = (issue as { input?: unknown }).input;
  switch (issue.origin) {
    case 'array':
      return `expected an array with ${issue.code === 'too_big' ? 'at most' : 'at least'} ${String(limit)} items, but got ${(input as unknown[]).length}.`;
    case 'string':
      return `expected a string of ${issue.code === 'too_big' ? 'at most' : 'at least'} ${String(limit)} characters, but got ${(input as string).length}.`;
    default:
      return `expected a value ${op} ${String(limit)}, but got ${describeValue(input)}.`;
  }
}

function formatPath(path: PropertyKey[]): string {
  return path.reduce<string>(
    (out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)),
    '',
  );
}

function describeType(expected: string): string {
  switch (expected) {
    case 'int':
      return 'an integer';
    case 'array':
    case 'object':
      return `an ${expected}`;
    default:
      return `a ${expected}`;
  }
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? `${value}` : `the number ${value}`;
  if (typeof value === 'string') return value.length > 40 ? 'a string' : JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
