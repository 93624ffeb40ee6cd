import type { Context } from 'hono';
import type { WireObject } from '../../engine/index.ts';
import { float32ToBase64 } from '../base64.ts';
import { BACKEND_HEADER } from '../errors.ts';
import { readJsonObject } from '../read-json.ts';
import type { EmbeddingList } from '../wire.ts';
import { requireModel, type Env, type RouteDeps } from './route-deps.ts';

/**
 * `POST /v1/embeddings`. A remote candidate's answer (`result.wire`) is passed on as the server sent it, with `model`
 * set to the public ID, and each vector in the encoding the client asked for (a server that ignores `encoding_format`
 * still gives the SDK the base64 it asked for by default). `x-lantern-backend` names the candidate that answered.
 */
export function createEmbeddings({ engine, limits, parsers }: RouteDeps) {
  return async (c: Context<Env>) => {
    const wire = await readJsonObject(c.req.raw, limits.maxBodyBytes);
    const params = parsers.embeddings(wire);
    await requireModel(engine, params.model, 'embeddings');
    const onBackend = (name: string) => c.header(BACKEND_HEADER, name);
    const result = await engine.embed(
      params.model,
      { input: params.input },
      { signal: c.req.raw.signal, wire, onBackend },
    );
    const base64 = params.encodingFormat === 'base64';
    const encode = base64 ? float32ToBase64 : (v: Float32Array) => Array.from(v);
    if (result.wire) {
      const data = (result.wire.data as WireObject[]).map((item, position) =>
        (typeof item.embedding === 'string') === base64
          ? item
          : { ...item, embedding: encode(result.embeddings[(item.index as number | undefined) ?? position]!) },
      );
      return c.json({ ...result.wire, data, model: params.model });
    }
    return c.json<EmbeddingList>({
      object: 'list',
      data: result.embeddings.map((vector, index) => ({ object: 'embedding', index, embedding: encode(vector) })),
      model: params.model,
      usage: { prompt_tokens: result.usage.promptTokens, total_tokens: result.usage.promptTokens },
    });
  };
}
