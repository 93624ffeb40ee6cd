import type { JsonConstraint, ToolConstraint, ToolDefinition } from '../../src/engine-interface/index.ts';

/*
 * The tools the tests share, declared once: the functions tiny-chat was trained to call (scripts/fixtures/
 * tool_corpus.py), in each shape a client or an engine holds them, and the engine's tool constraint around a set of
 * them. A test that needs a variant (a stricter schema, another description) declares its own beside it.
 */

/** `get_weather(city)`'s parameters, as tiny-chat's tool corpus declares them. */
export const WEATHER_PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
};

/** `get_weather` as the engine holds a declared function. */
export const GET_WEATHER: ToolDefinition = {
  name: 'get_weather',
  description: 'Get the current weather in a city.',
  parameters: WEATHER_PARAMETERS,
};

/** `get_time(city)`, the other function tiny-chat was trained to call. */
export const GET_TIME: ToolDefinition = {
  name: 'get_time',
  description: 'Get the local time in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A function as chat completions declare it: `{ type: 'function', function: {...} }`. */
export const chatTool = ({ name, description, parameters }: ToolDefinition) => ({
  type: 'function' as const,
  function: { name, ...(description !== undefined && { description }), parameters },
});

/** A function as the Responses API declares it: flat, `{ type: 'function', name, ... }`. */
export const responsesTool = ({ name, description, parameters }: ToolDefinition, strict = false) => ({
  type: 'function' as const,
  name,
  ...(description !== undefined && { description }),
  parameters,
  strict,
});

/** The engine's constraint of a reply that may call `tools` (by default: text or any calls, several at once). */
export function toolConstraint(
  tools: ToolDefinition[],
  options: { choice?: ToolConstraint['choice']; parallel?: boolean; text?: JsonConstraint } = {},
): ToolConstraint {
  const { choice = 'auto', parallel = true, text } = options;
  return { type: 'tools', tools, choice, parallel, ...(text && { text }) };
}
