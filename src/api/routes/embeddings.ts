import type { Context } from 'hono';
import { float32ToBase64 } from '../base64.ts';
import { readJsonObject } from '../read-json.ts';
import type { EmbeddingList } from '../wire.ts';
import { requireModel, type Env, type RouteDeps } from './route-deps.ts';

/** `POST /v1/embeddings`. */
export function createEmbeddings({ engine, limits, parsers }: RouteDeps) {
  return async (c: Context<Env>) => {
    const params = parsers.embeddings(await readJsonObject(c.req.raw, limits.maxBodyBytes));
    await requireModel(engine, params.model, 'embeddings');
    const result = await engine.embed(params.model, { input: params.input }, { signal: c.req.raw.signal });
    const encode = params.encodingFormat === 'base64' ? float32ToBase64 : (v: Float32Array) => Array.from(v);
    return c.json<EmbeddingList>({
      object: 'list',
      data: result.embeddings.map((vector, index) => ({ object: 'embedding', index, embedding: encode(vector) })),
      model: params.model,
      usage: { prompt_tokens: result.usage.promptTokens, total_tokens: result.usage.promptTokens },
    });
  };
}
