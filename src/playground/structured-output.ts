import { Validator, type Schema } from '@cfworker/json-schema';
import type OpenAI from 'openai';

/** The chat tab's output modes: free text, any JSON object, or JSON valid against a schema. */
export type OutputMode = 'text' | 'json_object' | 'json_schema';

/** Schemas to pick from in the chat tab (any other can be pasted). */
export const SCHEMA_EXAMPLES: Readonly<Record<string, Record<string, unknown>>> = {
  weather: {
    type: 'object',
    properties: {
      city: { type: 'string', maxLength: 20 },
      celsius: { type: 'integer', minimum: -30, maximum: 45 },
      sky: { enum: ['sunny', 'cloudy', 'rain', 'snow'] },
    },
    required: ['city', 'celsius', 'sky'],
    additionalProperties: false,
  },
  event: {
    type: 'object',
    properties: {
      title: { type: 'string', maxLength: 30 },
      day: { type: 'string', format: 'date' },
      attendees: { type: 'array', maxItems: 3, items: { type: 'string', format: 'email' } },
    },
    required: ['title', 'day', 'attendees'],
    additionalProperties: false,
  },
  tree: {
    $defs: {
      node: {
        type: 'object',
        properties: {
          label: { type: 'string', maxLength: 8 },
          children: { type: 'array', maxItems: 2, items: { $ref: '#/$defs/node' } },
        },
        required: ['label', 'children'],
        additionalProperties: false,
      },
    },
    $ref: '#/$defs/node',
  },
};

/** The `response_format` of a request in `mode`; throws with a readable message when the schema is not JSON. */
export function responseFormat(
  mode: OutputMode,
  schemaText: string,
): OpenAI.ChatCompletionCreateParams['response_format'] {
  if (mode === 'text') return undefined;
  if (mode === 'json_object') return { type: 'json_object' };
  let schema: Record<string, unknown>;
  try {
    schema = JSON.parse(schemaText) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`The schema is not JSON: ${(error as Error).message}`, { cause: error });
  }
  return { type: 'json_schema', json_schema: { name: 'playground', schema, strict: true } };
}

/** What the page's own validator says of a finished reply: `valid`, or why not. */
export function checkReply(mode: OutputMode, schemaText: string, text: string): { valid: boolean; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { valid: false, message: `Not JSON: ${(error as Error).message}` };
  }
  if (mode === 'json_object') {
    const object = value !== null && typeof value === 'object' && !Array.isArray(value);
    return { valid: object, message: object ? 'Valid: a JSON object.' : 'Not a JSON object.' };
  }
  const result = new Validator(JSON.parse(schemaText) as Schema, '2020-12', false).validate(value);
  const error = result.errors.at(-1);
  return result.valid
    ? { valid: true, message: 'Valid: matches the schema.' }
    : { valid: false, message: `Does not match the schema: ${error?.instanceLocation} ${error?.error}` };
}
