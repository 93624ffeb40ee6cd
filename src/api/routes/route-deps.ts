import type { Engine, ModelCard, ModelTask } from '../../engine/index.ts';
import type { KeyInfo } from '../../keys/index.ts';
import type { ResponseStore } from '../../response-store/index.ts';
import { modelNotFound } from '../errors.ts';
import type { Limits } from '../options.ts';
import type { Lease } from '../rate-limiter.ts';
import type { requestParsers } from '../request-schemas.ts';
import type { ErrorBody } from '../wire.ts';

/** What middleware hands to routes: the caller's key, the request id, and a rate-limited route's generation slot. */
export type Env = { Variables: { key: KeyInfo; requestId: string; generation?: Lease } };

/** What the route handlers share, built once per handler by `createHandler`. */
export interface RouteDeps {
  engine: Engine;
  limits: Limits;
  parsers: ReturnType<typeof requestParsers>;
  now: () => number;
  ownedBy: string;
  /** The error body of a failure inside a started event stream, reported like any other failure. */
  errorBody: (error: unknown, requestId: string) => ErrorBody;
  /** Where the Responses API keeps responses. */
  responses: ResponseStore;
}

/**
 * 404s a model that does not exist or serves another task (a chat model on /v1/embeddings), as OpenAI does, before
 * any work is queued; returns its card.
 */
export async function requireModel(engine: Engine, model: string, task: ModelTask): Promise<ModelCard> {
  const card = (await engine.models()).find((m) => m.id === model);
  if (!card || card.task !== task) throw modelNotFound(model);
  return card;
}
