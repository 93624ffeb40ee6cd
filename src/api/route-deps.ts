import type { KeyInfo } from '../keys/index.ts';
import type { ResponseStore } from '../response-store/index.ts';
import type { Engine, Serving } from '../engine/index.ts';
import { BACKEND_HEADER, type ErrorBody } from './errors.ts';
import { systemFingerprint } from './ids.ts';
import type { Limits } from './options.ts';

/** What middleware hands to routes: the caller's key and the request id. */
export type Env = { Variables: { key: KeyInfo; requestId: string } };

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
}

/**
 * Who serves a request, as a route answers with it: the model's `system_fingerprint` and the candidate that answered
 * (`x-lantern-backend`), learnt from the engine's `onServe` once its model is found and before any output. (An engine
 * of the app's own that never says is answered with the fingerprint of the model ID alone.)
 */
export class ServedBy {
  #fingerprint: string;
  #backend: string | undefined;
  readonly #ownedBy: string;

  constructor(model: string, ownedBy: string) {
    this.#ownedBy = ownedBy;
    this.#fingerprint = systemFingerprint({ id: model, created: 0 }, ownedBy);
  }

  /** For the engine's `onServe`. */
  readonly onServe = ({ model, backend }: Serving): void => {
    this.#fingerprint = systemFingerprint(model, this.#ownedBy);
    this.#backend = backend;
  };

  get fingerprint(): string {
    return this.#fingerprint;
  }

  /** Names the candidate that answered on the response, when one did. */
  label(response: Response): Response {
    if (this.#backend) response.headers.set(BACKEND_HEADER, this.#backend);
    return response;
  }
}
