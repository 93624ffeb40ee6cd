import type { Context } from 'hono';
import type { BatchEndpoint } from '../../batches/index.ts';
import { readListQuery } from '../list-query.ts';
import { parseJsonObject } from '../request-body.ts';
import { parse } from '../request-validation.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { createBatchSchema } from './schema.ts';
import type { Batch } from './wire.ts';

/** Lists of batches: 20 by default, 100 at most, as the OpenAI API. */
const LIST = { defaultLimit: 20, maxLimit: 100 };

/**
 * The Batch API (`/v1/batches`), every call on the caller key's own batches. A batch is created `validating` and
 * answered at once; its file is read, its lines run and its output and error files written in the background
 * (`BatchRunner`), which the SDK's callers poll for with `batches.retrieve`.
 */
export function batchRoutes({ batches }: RouteDeps) {
  const owner = (c: Context<Env>) => c.get('key').id;
  const id = (c: Context<Env>) => c.req.param('id')!;
  return {
    create: async (c: Context<Env>) => {
      const p = parse(createBatchSchema, await parseJsonObject(c.get('body')));
      return c.json<Batch>(
        await batches.create(owner(c), {
          inputFileId: p.input_file_id,
          endpoint: p.endpoint as BatchEndpoint,
          metadata: p.metadata,
          outputExpiresAfterS: p.output_expires_after?.seconds,
        }),
      );
    },
    list: async (c: Context<Env>) => {
      const { limit, order, after } = readListQuery(c.req.url, LIST);
      return c.json(await batches.list(owner(c), { limit, order, after }));
    },
    retrieve: async (c: Context<Env>) => c.json<Batch>(await batches.retrieve(owner(c), id(c))),
    cancel: async (c: Context<Env>) => c.json<Batch>(await batches.cancel(owner(c), id(c))),
  };
}
