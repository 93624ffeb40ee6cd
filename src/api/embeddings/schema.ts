import * as z from 'zod';
import type { Limits } from '../options.ts';
import { optional, parse } from '../request-validation.ts';

/** The embeddings body (`POST /v1/embeddings`) as a zod schema. Token-array input and `dimensions` are refused. */
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

export interface EmbeddingsParams {
  model: string;
  input: string[];
  encodingFormat: 'float' | 'base64';
}

/** Compiled once per handler, as the limits are fixed for its lifetime. */
export function embeddingsParser(limits: Limits): (body: unknown) => EmbeddingsParams {
  const schema = embeddingsSchema(limits);
  return (body) => {
    const p = parse(schema, body);
    return {
      model: p.model,
      input: typeof p.input === 'string' ? [p.input] : p.input,
      encodingFormat: p.encoding_format ?? 'float',
    };
  };
}
