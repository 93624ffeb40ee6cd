/**
 * The wire format of the /v1 API, as the OpenAI API and its clients have it: each route's own types live beside it
 * (`chat-completions/wire.ts`, …); this is their index, the public surface of `lantern`'s wire types. Request bodies
 * are described by each route's `schema.ts`.
 */
export type * from './chat-completions/wire.ts';
export type * from './completions/wire.ts';
export type * from './embeddings/wire.ts';
export type * from './models/wire.ts';
export type { ErrorBody } from './errors.ts';
export type { CompletionUsage } from './usage.ts';
