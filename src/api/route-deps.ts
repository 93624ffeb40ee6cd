import type { KeyInfo } from '../keys/index.ts';
import type { ResponseStore } from '../response-store/index.ts';
import type { FileLibrary } from '../file-search/index.ts';
import type { BackgroundRuns } from './responses/background.ts';
import type { ChatCompletionStore } from './chat-completions/stored.ts';
import type { Conversations } from './conversations/conversations.ts';
import type { BatchRunner } from '../batches/index.ts';
import type { Engine, Serving } from '../engine-interface/index.ts';
import { BACKEND_HEADER, type ErrorBody } from './errors.ts';
import { systemFingerprint } from './ids.ts';
import type { Limits } from './options.ts';
import type { CallGrant, ClientSecretGrant } from './realtime/realtime-secrets.ts';

/**
 * What middleware sets for the routes: the caller's key, the request's id, and its body, read whole (`rateLimit`); and
 * what a route sets for middleware: `outlasting`, the work a route leaves running after its answer (a background
 * response), which holds the request's rate-limit slots until it ends.
 */
export type Env = {
  Variables: {
    key: KeyInfo;
    requestId: string;
    body: Uint8Array;
    outlasting?: Promise<void>;
    /** What a Realtime secret (`ek_…`) grants, when the request presented one instead of a key. */
    realtimeGrant?: ClientSecretGrant | CallGrant;
  };
};

/** What the route handlers share, built once per handler by `createHandler`. */
export interface RouteDeps {
  engine: Engine;
  limits: Limits;
  now: () => number;
  ownedBy: string;
  /** The error body of a failure inside a started event stream, reported like any other failure. */
  errorBody: (error: unknown, requestId: string) => ErrorBody;
  /** Where the Responses API keeps responses. */
  responses: ResponseStore;
  /** The keys' files and vector stores (the Files and Vector Stores APIs, and `file_search`). */
  files: FileLibrary;
  /** The Responses API's background runs (`background: true`). */
  background: BackgroundRuns;
  /** The keys' conversations (the Conversations API, and `conversation` on responses). */
  conversations: Conversations;
  /** Where chat completions with `store: true` are kept. */
  chatCompletions: ChatCompletionStore;
  /** The keys' batches (the Batch API). */
  batches: BatchRunner;
}

/**
 * Who serves a request, as a route answers with it: the model ID (`model`: the request may have named an alias of
 * it, such as `gpt-4o-mini`), the model's `system_fingerprint` and the candidate that answered (`x-lantern-backend`),
 * learnt from the engine's `onServe` once its model is found and before any output. (An engine of the app's own that
 * never says is answered with the name the request gave and the fingerprint of that name alone.)
 */
export class ServedBy {
  #model: string;
  #fingerprint: string;
  #backend: string | undefined;
  readonly #ownedBy: string;

  constructor(model: string, ownedBy: string) {
    this.#ownedBy = ownedBy;
    this.#model = model;
    this.#fingerprint = systemFingerprint({ id: model, created: 0 }, ownedBy);
  }

  /** For the engine's `onServe`. */
  readonly onServe = ({ model, backend }: Serving): void => {
    this.#model = model.id;
    this.#fingerprint = systemFingerprint(model, this.#ownedBy);
    this.#backend = backend;
  };

  /** The ID of the model that serves the request: what answers name in their `model`. */
  get model(): string {
    return this.#model;
  }

  get fingerprint(): string {
    return this.#fingerprint;
  }

  /** Names the candidate that answered on the response, when one did. */
  label(response: Response): Response {
    if (this.#backend) response.headers.set(BACKEND_HEADER, this.#backend);
    return response;
  }
}
