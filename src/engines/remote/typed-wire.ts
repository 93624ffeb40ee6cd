import {
  EngineError,
  type ChatMessage,
  type ChatRequest,
  type FinishReason,
  type FunctionCall,
  type WireObject,
} from '../../engine/index.ts';

/*
 * The typed engine request in the wire's words, and the wire's answers back in the engine's, for callers of a remote
 * candidate that have no client body to forward (the Responses API, direct callers of the engine interface).
 */

export const isObject = (value: unknown): value is WireObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The chat completions body of a typed request: the conversation with its calls and results, the tools, and the
 * sampling settings. What it cannot carry (a response format, a raw prompt) is refused rather than silently left out.
 */
export function typedChatBody(model: string, backend: string, request: ChatRequest, stream: boolean): WireObject {
  const uncarried = request.constraint
    ? ['response_format', 'A response format']
    : request.prompt !== undefined
      ? ['prompt', 'A raw prompt']
      : undefined;
  if (uncarried) {
    throw new EngineError(
      'invalid_request',
      `${uncarried[1]} cannot be sent to the remote candidate ${backend} from this API: only chat completions forward it.`,
      { param: uncarried[0] },
    );
  }
  const { tools, toolChoice } = request;
  return {
    model,
    messages: request.messages.map(wireMessage),
    temperature: request.temperature,
    top_p: request.topP,
    presence_penalty: request.presencePenalty,
    frequency_penalty: request.frequencyPenalty,
    n: request.n,
    ...(request.stop.length > 0 && { stop: request.stop }),
    ...(request.maxTokens !== undefined && { max_tokens: request.maxTokens }),
    ...(request.seed !== undefined && { seed: request.seed }),
    ...(request.logitBias && { logit_bias: request.logitBias }),
    ...(tools?.length && {
      tools: tools.map(({ name, description, parameters, strict }) => ({
        type: 'function',
        function: { name, ...(description !== undefined && { description }), parameters, ...(strict && { strict }) },
      })),
      tool_choice: typeof toolChoice === 'object' ? { type: 'function', function: toolChoice } : (toolChoice ?? 'auto'),
      parallel_tool_calls: request.parallelToolCalls ?? true,
    }),
    stream,
    // The typed result reports usage, so ask for it.
    ...(stream && { stream_options: { include_usage: true } }),
  };
}

/** A turn as the wire has it: an assistant's calls under `tool_calls` (no content: null), a result under its call's id. */
function wireMessage(m: ChatMessage): WireObject {
  if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: m.toolCallId ?? '' };
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
