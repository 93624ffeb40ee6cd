import type * as z from 'zod';
import { invalidRequest, type ApiError } from './errors.ts';

/*
 * Request bodies checked against zod schemas, each route's own, and the first problem answered as the OpenAI API
 * answers it: a 400 in its words, naming the parameter (`messages[0].role`). Optional parameters accept `null` as "not
 * given", as the OpenAI API does.
 */

/** An optional parameter: absent or `null` is "not given". */
export const optional = <T extends z.ZodType>(schema: T) => schema.nullish();

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
