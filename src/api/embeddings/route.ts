import type { Context } from 'hono';
import type { WireObject } from '../../engine-interface/index.ts';
import { float32ToBase64 } from '../base64.ts';
import { parseJsonObject } from '../request-body.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { embeddingsParser } from './schema.ts';
import type { EmbeddingList } from './wire.ts';

/**
 * `POST /v1/embeddings`. A remote candidate's answer (`result.serverBody`) is passed on as the server sent it, with
 * `model` set to the public ID (the ID an alias such as `text-embedding-3-small` names), and each vector in the
 * encoding the client asked for (a server that ignores `encoding_format` still gives the SDK the base64 it asked for
 * by default). `x-lantern-backend` names the candidate that answered.
 */
export function createEmbeddings({ engine, limits, ownedBy }: RouteDeps) {
  const parse = embeddingsParser(limits);
  return async (c: Context<Env>) => {
    const clientBody = await parseJsonObject(c.get('body'));
    const params = parse(clientBody);
    const served = new ServedBy(params.model, ownedBy);
    const result = await engine.embed(
      params.model,
      { input: params.input },
      { signal: c.req.raw.signal, clientBody, onServe: served.onServe },
    );
    const base64 = params.encodingFormat === 'base64';
    const encode = base64 ? float32ToBase64 : (v: Float32Array) => Array.from(v);
    if (result.serverBody) {
      const data = (result.serverBody.data as WireObject[]).map((item, position) =>
        (typeof item.embedding === 'string') === base64
          ? item
          : { ...item, embedding: encode(result.embeddings[(item.index as number | undefined) ?? position]!) },
      );
      return served.label(c.json({ ...result.serverBody, data, model: served.model }));
    }
    return served.label(
      c.json<EmbeddingList>({
        object: 'list',
        data: result.embeddings.map((vector, index) => ({ object: 'embedding', index, embedding: encode(vector) })),
        model: served.model,
        usage: { prompt_tokens: result.usage.promptTokens, total_tokens: result.usage.promptTokens },
      }),
    );
  };
}
