import type {
  ChatMessage,
  ChatRequest,
  FinishReason,
  FunctionCall,
  GeneratedTokenLogprob,
  JsonConstraint,
  TokenLogprob,
  WireObject,
} from '../../engine-interface/index.ts';
import { messageParts } from '../../engine-interface/index.ts';

/*
 * The typed engine request in the wire's words, and the wire's answers back in the engine's, for callers of a remote
 * candidate that have no client body to forward (the Responses API and completions routes, direct callers).
 */

export const isObject = (value: unknown): value is WireObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The typed request in the wire's words, for callers that have no client body to forward (the Responses API and
 * completions routes): a chat completion, or a text completion for a raw prompt. Every field that changes what the
 * model may say crosses — the constraint as the server's `response_format`, so that the server enforces it; the tools,
 * and the conversation's calls and results in the wire's shape; log probabilities in the dialect of the endpoint.
 */
export function typedChatBody(model: string, request: ChatRequest, stream: boolean): WireObject {
  const raw = request.prompt !== undefined;
  const { constraint } = request;
  const tools = constraint?.type === 'tools' ? constraint : undefined;
  const format = constraint?.type === 'json' ? constraint : tools?.text;
  return {
    model,
    ...(raw ? { prompt: request.prompt } : { messages: request.messages.map(wireMessage) }),
    temperature: request.temperature,
    top_p: request.topP,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    n: request.n,
    ...(request.stop.length > 0 && { stop: request.stop }),
    ...(request.maxTokens !== undefined && { max_tokens: request.maxTokens }),
    ...(request.seed !== undefined && { seed: request.seed }),
    ...(request.logitBias && { logit_bias: request.logitBias }),
    // The thinking switch of vLLM, SGLang and llama.cpp's server (OpenAI's own `reasoning_effort` is refused by its
    // models that do not reason).
    ...(request.thinking !== undefined && !raw && { chat_template_kwargs: { enable_thinking: request.thinking } }),
    ...(format && !raw && { response_format: responseFormat(format) }),
    ...(request.logprobs !== undefined &&
      (raw ? { logprobs: request.logprobs } : { logprobs: true, top_logprobs: request.logprobs })),
    ...(tools &&
      !raw && {
        tools: tools.tools.map(({ name, description, parameters, strict }) => ({
          type: 'function',
          function: { name, ...(description !== undefined && { description }), parameters, ...(strict && { strict }) },
        })),
        tool_choice: typeof tools.choice === 'object' ? { type: 'function', function: tools.choice } : tools.choice,
        parallel_tool_calls: tools.parallel,
      }),
    stream,
    // The typed result reports usage, so ask for it.
    ...(stream && { stream_options: { include_usage: true } }),
  };
}

/** A JSON constraint as the OpenAI API's `response_format`: any JSON object, or JSON valid against a schema. */
function responseFormat(constraint: JsonConstraint): WireObject {
  if (constraint.schema === null) return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: 'response', schema: constraint.schema, strict: true } };
}

/**
 * A choice's log probabilities as typed entries, from either dialect: chat's `logprobs.content` (token, logprob,
 * bytes, top_logprobs) or legacy completions' parallel arrays (`tokens`, `token_logprobs`, `top_logprobs` maps).
 */
export function logprobsOf(value: unknown): GeneratedTokenLogprob[] | undefined {
  if (!isObject(value)) return undefined;
  const entry = (token: unknown, logprob: unknown, bytes?: unknown): TokenLogprob => {
    const text = typeof token === 'string' ? token : '';
    return {
      token: text,
      logprob: typeof logprob === 'number' ? logprob : -Infinity,
      bytes: Array.isArray(bytes) ? (bytes as number[]) : [...new TextEncoder().encode(text)],
    };
  };
  if (Array.isArray(value.content)) {
    return value.content.filter(isObject).map((item) => ({
      ...entry(item.token, item.logprob, item.bytes),
      topLogprobs: (Array.isArray(item.top_logprobs) ? item.top_logprobs.filter(isObject) : []).map((top) =>
        entry(top.token, top.logprob, top.bytes),
      ),
    }));
  }
  if (!Array.isArray(value.tokens)) return undefined;
  const logprobs = Array.isArray(value.token_logprobs) ? value.token_logprobs : [];
  const tops = Array.isArray(value.top_logprobs) ? value.top_logprobs : [];
  return value.tokens.map((token, i) => ({
    ...entry(token, logprobs[i]),
    topLogprobs: Object.entries(isObject(tops[i]) ? tops[i] : {}).map(([t, lp]) => entry(t, lp)),
  }));
}

/** A choice's text, from a chat message or delta (`content`) or a text completion (`text`). */
export function textOf(choice: WireObject, key: 'message' | 'delta'): string {
  if (typeof choice.text === 'string') return choice.text;
  const part = isObject(choice[key]) ? choice[key] : {};
  return typeof part.content === 'string' ? part.content : '';
}

/** A reasoning model's thought in a message or delta, as servers return it: `reasoning_content`, or `reasoning`. */
export function reasoningOf(choice: WireObject, key: 'message' | 'delta'): string | undefined {
  const part = isObject(choice[key]) ? choice[key] : {};
  const thought = part.reasoning_content ?? part.reasoning;
  return typeof thought === 'string' ? thought : undefined;
}

/**
 * A turn as the wire has it: an assistant's calls under `tool_calls` (no text: null), a result under its call's id,
 * an assistant's thought as `reasoning_content`.
 */
function wireMessage(m: ChatMessage): WireObject {
  if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: m.toolCallId ?? '' };
  if (m.reasoning) return { ...wireMessage({ ...m, reasoning: undefined }), reasoning_content: m.reasoning };
  if (m.images?.length) {
    // A user turn with images: its parts again, as the client sent them (`detail` passed on).
    const content = messageParts(m).map((part) =>
      part.type === 'text'
        ? { type: 'text', text: part.text }
        : { type: 'image_url', image_url: { url: part.image.url, detail: part.image.detail } },
    );
    return { role: m.role, content };
  }
  if (!m.toolCalls?.length) return { role: m.role, content: m.content };
  const calls = m.toolCalls.map(({ id, name, arguments: args }) => ({
    id,
    type: 'function',
    function: { name, arguments: args },
  }));
  return { role: 'assistant', content: m.content || null, tool_calls: calls };
}

export const finishReason = (reason: unknown): FinishReason =>
  reason === 'length' ? 'length' : reason === 'tool_calls' ? 'tool_calls' : 'stop';

/** A call of a completion's message or of a chunk's delta: the delta's `index`, and what this part of it holds. */
export interface WireCallPart {
  index: number;
  name?: string;
  arguments: string;
}

/** The calls of a message or of a delta (`tool_calls`), whatever else it holds. */
export function callParts(message: unknown): WireCallPart[] {
  const calls = isObject(message) && Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  return calls.map((call, position) => {
    const fn = isObject(call.function) ? call.function : {};
    return {
      index: typeof call.index === 'number' ? call.index : position,
      ...(typeof fn.name === 'string' && { name: fn.name }),
      arguments: typeof fn.arguments === 'string' ? fn.arguments : '',
    };
  });
}

/** A whole message's calls as the engine reports them. */
export const functionCalls = (message: unknown): FunctionCall[] =>
  callParts(message).map((part) => ({ name: part.name ?? '', arguments: part.arguments }));
