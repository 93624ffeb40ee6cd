/** The /v1 API as one web-standard handler. */
export { createHandler, type Handler } from './create-handler.ts';
export {
  DEFAULT_LIMITS,
  DEFAULT_RATE_LIMITS,
  isLocalOrigin,
  type CorsOptions,
  type HandlerOptions,
  type Limits,
  type RateLimits,
} from './options.ts';
export { ApiError } from './errors.ts';

export type * from './wire.ts';
