import type { Context } from 'hono';
import { parseJsonObject } from '../request-body.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { responsesParser } from './schema.ts';
import { asInputError, prepareTurn } from './turn.ts';

/** `POST /v1/responses/input_tokens`'s answer. */
export interface InputTokenCount {
  object: 'response.input_tokens';
  input_tokens: number;
}

/**
 * `POST /v1/responses/input_tokens`: how many tokens the same body's prompt is, as `POST /v1/responses` would report
 * it in `usage.input_tokens`: its instructions, the conversation it continues, its tools and format, and the passages
 * `file_search` finds for it, in the model's own template. No tokenizer stands apart from the engine here, so the
 * model renders and reads the prompt and stops before its first token's choice matters (one token is generated and
 * dropped); the prompt stays in its key's prefix cache, so the request that follows does not read it again.
 */
export function countInputTokens(deps: RouteDeps) {
  const parse = responsesParser(deps.limits, { inputOptional: true });
  return async (c: Context<Env>) => {
    const params = parse(await parseJsonObject(c.get('body')));
    const signal = c.req.raw.signal;
    const turn = await prepareTurn(deps, c.get('key').id, params, signal);
    turn.request.maxTokens = 1;
    const result = await turn.chat({ signal }).catch(asInputError);
    return c.json<InputTokenCount>({ object: 'response.input_tokens', input_tokens: result.usage.promptTokens });
  };
}
