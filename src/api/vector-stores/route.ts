import type { Context } from 'hono';
import { invalidRequest } from '../errors.ts';
import { readListQuery } from '../list-query.ts';
import { parseJsonObject } from '../request-body.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { parseBody, rankingOf, toChunking, toFilter, vectorStoreSchemas, type VectorStoreSchemas } from './schema.ts';

/** Lists of vector stores and of their files: 20 by default, 100 at most, as the OpenAI API. */
const LIST = { defaultLimit: 20, maxLimit: 100 };

/**
 * The Vector Stores API (`/v1/vector_stores`, its `files`, `file_batches` and `search`), every call on the caller key's
 * own stores. Indexing runs in the background: an attached file is `in_progress` until its chunks are embedded and
 * indexed, which the SDK's `…AndPoll` helpers wait for.
 */
export function vectorStoreRoutes({ files }: RouteDeps) {
  const schemas = vectorStoreSchemas(files.limits.maxFilesPerBatch);
  const body = async <K extends keyof VectorStoreSchemas>(c: Context<Env>, kind: K) =>
    parseBody(schemas, kind, await parseJsonObject(c.get('body')));
  const owner = (c: Context<Env>) => c.get('key').id;
  const id = (c: Context<Env>) => c.req.param('id')!;
  const fileId = (c: Context<Env>) => c.req.param('file_id')!;
  const batchId = (c: Context<Env>) => c.req.param('batch_id')!;

  return {
    create: async (c: Context<Env>) => {
      const p = await body(c, 'create');
      return c.json(
        await files.createVectorStore(owner(c), {
          name: p.name ?? undefined,
          description: p.description ?? undefined,
          metadata: p.metadata,
          expiresAfter: p.expires_after,
          fileIds: p.file_ids ?? undefined,
          chunking: toChunking(p.chunking_strategy),
        }),
      );
    },
    list: async (c: Context<Env>) => c.json(await files.listVectorStores(owner(c), readListQuery(c.req.url, LIST))),
    retrieve: async (c: Context<Env>) => c.json(await files.retrieveVectorStore(owner(c), id(c))),
    modify: async (c: Context<Env>) => {
      const p = await body(c, 'modify');
      return c.json(
        await files.modifyVectorStore(owner(c), id(c), {
          name: p.name ?? undefined,
          metadata: p.metadata,
          expiresAfter: p.expires_after,
        }),
      );
    },
    delete: async (c: Context<Env>) => c.json(await files.deleteVectorStore(owner(c), id(c))),

    search: async (c: Context<Env>) => {
      const p = await body(c, 'search');
      const queries = typeof p.query === 'string' ? [p.query] : p.query;
      const data = await files.search(owner(c), [id(c)], {
        queries,
        maxResults: p.max_num_results ?? 10,
        filter: toFilter(p.filters),
        ...rankingOf(p.ranking_options),
        signal: c.req.raw.signal,
      });
      return c.json({
        object: 'vector_store.search_results.page',
        search_query: queries,
        data,
        has_more: false,
        next_page: null,
      });
    },

    attachFile: async (c: Context<Env>) => {
      const p = await body(c, 'attach');
      return c.json(
        await files.attachFile(owner(c), id(c), p.file_id, {
          attributes: p.attributes,
          chunking: toChunking(p.chunking_strategy),
        }),
      );
    },
    listFiles: async (c: Context<Env>) => {
      const filter = readStatusFilter(c);
      return c.json(await files.listStoreFiles(owner(c), id(c), { ...readListQuery(c.req.url, LIST), filter }));
    },
    retrieveFile: async (c: Context<Env>) => c.json(await files.retrieveStoreFile(owner(c), id(c), fileId(c))),
    updateFile: async (c: Context<Env>) => {
      const p = await body(c, 'update');
      return c.json(await files.updateStoreFile(owner(c), id(c), fileId(c), p.attributes));
    },
    detachFile: async (c: Context<Env>) => c.json(await files.detachFile(owner(c), id(c), fileId(c))),
    fileContent: async (c: Context<Env>) =>
      c.json({
        object: 'vector_store.file_content.page',
        data: await files.storeFileContent(owner(c), id(c), fileId(c)),
        has_more: false,
        next_page: null,
      }),

    createBatch: async (c: Context<Env>) => {
      const p = await body(c, 'batch');
      const shared = { attributes: p.attributes, chunking: toChunking(p.chunking_strategy) };
      const list = p.files
        ? p.files.map((f) => ({
            fileId: f.file_id,
            attributes: f.attributes ?? shared.attributes,
            chunking: toChunking(f.chunking_strategy) ?? shared.chunking,
          }))
        : p.file_ids!.map((fileId) => ({ fileId, ...shared }));
      return c.json(await files.createBatch(owner(c), id(c), list));
    },
    retrieveBatch: async (c: Context<Env>) => c.json(await files.retrieveBatch(owner(c), id(c), batchId(c))),
    cancelBatch: async (c: Context<Env>) => c.json(await files.cancelBatch(owner(c), id(c), batchId(c))),
    listBatchFiles: async (c: Context<Env>) => {
      const filter = readStatusFilter(c);
      return c.json(
        await files.listStoreFiles(owner(c), id(c), {
          ...readListQuery(c.req.url, LIST),
          filter,
          batchId: batchId(c),
        }),
      );
    },
  };
}

const STATUSES = ['in_progress', 'completed', 'failed', 'cancelled'] as const;

function readStatusFilter(c: Context<Env>): (typeof STATUSES)[number] | undefined {
  const filter = c.req.query('filter') || undefined;
  if (filter !== undefined && !(STATUSES as readonly string[]).includes(filter)) {
    throw invalidRequest(`Invalid 'filter': expected one of ${STATUSES.join(', ')}, but got \`${filter}\`.`, 'filter');
  }
  return filter as (typeof STATUSES)[number] | undefined;
}
