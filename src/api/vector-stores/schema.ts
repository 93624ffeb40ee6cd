import * as z from 'zod';
import { filterSizeProblem, type AttributeFilter } from '../../document-search/index.ts';
import { CHUNKING_BOUNDS, DEFAULT_CHUNKING, type ChunkingOptions } from '../../documents/index.ts';
import { invalidRequest } from '../errors.ts';
import { optional, parse } from '../request-validation.ts';

/*
 * The bodies of the Vector Stores API, with OpenAI's bounds: 16 metadata pairs and 16 attributes (keys of 64
 * characters, text values of 512), chunks of 100 to 4,096 tokens overlapping by at most half, expiry after 1 to 365
 * days of disuse, 1 to 50 search results.
 */

const metadata = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, 'At most 16 metadata pairs are allowed.');

export const attributes = z
  .record(z.string().max(64), z.union([z.string().max(512), z.number(), z.boolean()]))
  .refine((a) => Object.keys(a).length <= 16, 'At most 16 attributes are allowed.');

const chunkingStrategy = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto') }),
  z.object({
    type: z.literal('static'),
    static: z
      .object({
        max_chunk_size_tokens: z.int().min(CHUNKING_BOUNDS.minChunkTokens).max(CHUNKING_BOUNDS.maxChunkTokens),
        chunk_overlap_tokens: z.int().min(0),
      })
      .refine((s) => s.chunk_overlap_tokens <= s.max_chunk_size_tokens / 2, {
        message: "'chunk_overlap_tokens' must not exceed half of 'max_chunk_size_tokens'.",
        path: ['chunk_overlap_tokens'],
      }),
  }),
]);

const expiresAfter = z.object({ anchor: z.literal('last_active_at'), days: z.int().min(1).max(365) });

const fileIds = (max: number) => z.array(z.string().min(1)).max(max);

const comparison = z.object({
  type: z.enum(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin']),
  key: z.string().min(1),
  value: z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()])).min(1)]),
});
type FilterInput = z.infer<typeof comparison> | { type: 'and' | 'or'; filters: FilterInput[] };
const filterTree: z.ZodType<FilterInput> = z.lazy(() =>
  z.union([comparison, z.object({ type: z.enum(['and', 'or']), filters: z.array(filterTree).min(1).max(64) })]),
);
/**
 * OpenAI's filters over file attributes, within FILTER_LIMITS: their size is checked first, without recursion, so that
 * a filter nested thousands deep is a 400 rather than a stack overflow in the validation that follows.
 */
export const filters: z.ZodType<FilterInput> = z
  .unknown()
  .superRefine((input, ctx) => {
    const problem = filterSizeProblem(input);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  })
  .pipe(filterTree);

/**
 * A search's `ranking_options`. OpenAI's rankers re-rank hits with a model; Lantern has none, and every ranker it
 * accepts ranks alike, by the relevance the index scores (docs/file-search.md). Which names are accepted is OpenAI's,
 * and differs by place: a vector store search takes `none` (no re-ranking), the `file_search` tool does not.
 */
const rankingOptions = <const Rankers extends readonly [string, ...string[]]>(rankers: Rankers) =>
  z.object({
    ranker: optional(z.enum(rankers)),
    score_threshold: optional(z.number().min(0).max(1)),
    hybrid_search: optional(
      z
        .object({ embedding_weight: z.number().min(0), text_weight: z.number().min(0) })
        .refine((w) => w.embedding_weight + w.text_weight > 0, 'At least one of the weights must be above 0.'),
    ),
  });

/** `POST /v1/vector_stores/{id}/search`'s, as openai-node's `VectorStoreSearchParams.RankingOptions`. */
export const searchRankingOptions = rankingOptions(['none', 'auto', 'default-2024-11-15']);
/** The `file_search` tool's, as openai-node's `FileSearchTool.RankingOptions`. */
export const toolRankingOptions = rankingOptions(['auto', 'default-2024-11-15']);

export type RankingInput = z.infer<typeof searchRankingOptions> | z.infer<typeof toolRankingOptions>;

/** A chunking strategy as the library takes it: `auto` (or none) is OpenAI's 800 tokens, 400 overlapping. */
export function toChunking(strategy: z.infer<typeof chunkingStrategy> | null | undefined): ChunkingOptions | undefined {
  if (!strategy) return undefined;
  if (strategy.type === 'auto') return DEFAULT_CHUNKING;
  return { maxChunkTokens: strategy.static.max_chunk_size_tokens, overlapTokens: strategy.static.chunk_overlap_tokens };
}

export function rankingOf(options: RankingInput | null | undefined) {
  const weights = options?.hybrid_search;
  return {
    scoreThreshold: options?.score_threshold ?? undefined,
    weights: weights ? { text: weights.text_weight, vector: weights.embedding_weight } : undefined,
  };
}

export const toFilter = (input: FilterInput | null | undefined) => (input ?? undefined) as AttributeFilter | undefined;

export function vectorStoreSchemas(maxFiles: number) {
  return {
    create: z.object({
      name: optional(z.string().max(256)),
      description: optional(z.string().max(512)),
      file_ids: optional(fileIds(maxFiles)),
      chunking_strategy: optional(chunkingStrategy),
      metadata: optional(metadata),
      expires_after: optional(expiresAfter),
    }),
    modify: z.object({
      name: optional(z.string().max(256)),
      metadata: optional(metadata),
      expires_after: expiresAfter.nullish(),
    }),
    attach: z.object({
      file_id: z.string().min(1),
      attributes: optional(attributes),
      chunking_strategy: optional(chunkingStrategy),
    }),
    update: z.object({ attributes: attributes.nullable() }),
    batch: z.object({
      file_ids: optional(fileIds(maxFiles)),
      files: optional(
        z
          .array(
            z.object({
              file_id: z.string().min(1),
              attributes: optional(attributes),
              chunking_strategy: optional(chunkingStrategy),
            }),
          )
          .max(maxFiles),
      ),
      attributes: optional(attributes),
      chunking_strategy: optional(chunkingStrategy),
    }),
    search: z.object({
      query: z.union([z.string().min(1).max(4096), z.array(z.string().min(1).max(4096)).min(1).max(10)]),
      max_num_results: optional(z.int().min(1).max(50)),
      filters: optional(filters),
      ranking_options: optional(searchRankingOptions),
      rewrite_query: optional(z.boolean()),
    }),
  };
}

export type VectorStoreSchemas = ReturnType<typeof vectorStoreSchemas>;

/** Parses a body with one of the schemas; a batch must name its files one way, not both. */
export function parseBody<K extends keyof VectorStoreSchemas>(
  schemas: VectorStoreSchemas,
  kind: K,
  body: unknown,
): z.output<VectorStoreSchemas[K]> {
  const parsed = parse(schemas[kind], body) as z.output<VectorStoreSchemas[K]>;
  if (kind === 'batch') {
    const batch = parsed as z.output<VectorStoreSchemas['batch']>;
    if (!batch.file_ids === !batch.files) {
      throw invalidRequest("Give exactly one of 'file_ids' and 'files'.", batch.files ? 'files' : 'file_ids');
    }
  }
  return parsed;
}
