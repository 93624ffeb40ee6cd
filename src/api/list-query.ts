import { invalidRequest } from './errors.ts';

/** A cursor list's query, as OpenAI's lists take it: `limit`, `order` (`asc` or `desc`), `after` and `before`. */
export interface ListQuery {
  limit: number;
  order: 'asc' | 'desc';
  after?: string;
  before?: string;
}

/**
 * Reads a list's query parameters: `limit` from 1 to `maxLimit` (`defaultLimit` when absent), `order` `desc` unless
 * `asc`. Each bad value is a 400 naming it.
 */
export function readListQuery(
  url: string,
  { defaultLimit, maxLimit }: { defaultLimit: number; maxLimit: number },
): ListQuery {
  const params = new URL(url).searchParams;
  const limitText = params.get('limit');
  const limit = limitText === null || limitText === '' ? defaultLimit : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
    throw invalidRequest(
      `Invalid 'limit': expected an integer from 1 to ${maxLimit}, but got \`${limitText}\`.`,
      'limit',
    );
  }
  const order = params.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') {
    throw invalidRequest(`Invalid 'order': expected \`asc\` or \`desc\`, but got \`${order}\`.`, 'order');
  }
  const after = params.get('after') || undefined;
  const before = params.get('before') || undefined;
  return { limit, order, ...(after !== undefined && { after }), ...(before !== undefined && { before }) };
}
