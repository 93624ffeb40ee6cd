import type { EngineErrorKind } from './errors.ts';

/**
 * What a failure means for the one walk over a model's candidates (the router's, `src/models/model-router.ts`): one
 * vocabulary for the router, the local engine and the engine worker (`src/worker/worker-api.ts`), so that they cannot
 * disagree on when a request moves on. Only the walk decides; the layers below it answer each call once.
 *
 * - `request`: the request's own (a client error, an abort, a rate limit, output that broke its constraint): it ends
 *   where it is, wherever it happened.
 * - `passed-over`: the candidate was passed over before its engine touched anything (no room for its download, no
 *   network for it): the next candidate takes over, and this one is tried again next time.
 * - `candidate`: the candidate failed (it would not load, its run broke, its GPU device was lost): the next candidate
 *   takes over; the realm it ran in may be broken (`breaksRealm`).
 * - `engine-gone`: there is no engine to run local candidates on (no page hosts one): the walk goes on to the servers.
 * - `engine-lost`: the engine went away under the call (its host tab closed, its worker was replaced): the same
 *   candidate again, on the next engine.
 * - `server`: a remote server failed: it counts against the server's circuit breaker, and the next link takes over.
 */
export type FailureMeaning = 'request' | 'passed-over' | 'candidate' | 'engine-gone' | 'engine-lost' | 'server';

/** Every error kind's meaning: a new kind must be given one here (TypeScript refuses the build until it is). */
const MEANINGS: Readonly<Record<EngineErrorKind, FailureMeaning>> = Object.freeze({
  model_not_found: 'request',
  context_length_exceeded: 'request',
  invalid_request: 'request',
  aborted: 'request',
  version_mismatch: 'request',
  invalid_output: 'request',
  rate_limited: 'request',
  insufficient_storage: 'passed-over',
  download_failed: 'passed-over',
  load_failed: 'candidate',
  internal: 'candidate',
  device_lost: 'candidate',
  unavailable: 'engine-gone',
  engine_lost: 'engine-lost',
  upstream_error: 'server',
  upstream_unavailable: 'server',
});

/** What a failure of this kind means for the walk (see {@link FailureMeaning}). */
export const failureMeaning = (kind: EngineErrorKind): FailureMeaning => MEANINGS[kind];

/** Whether a local candidate's failure of this kind hands the request on (to this candidate again, or the next). */
export const movesOnLocally = (kind: EngineErrorKind): boolean =>
  ['passed-over', 'candidate', 'engine-gone', 'engine-lost'].includes(MEANINGS[kind]);

/**
 * Whether a failure of this kind leaves the realm it happened in untrustworthy, where its engine's descriptor says
 * that one failure breaks a realm (transformers.js in a browser: one failed load or run leaves its shared promise chain
 * rejected, failing every later call; transformers.js#1635, #1767).
 */
export const breaksRealm = (kind: EngineErrorKind): boolean => MEANINGS[kind] === 'candidate';
