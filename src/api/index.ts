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
  type RealtimeCall,
  type RealtimeCallAnswerer,
} from './options.ts';
export { ApiError } from './errors.ts';
export { RATE_LIMIT_VARIABLES } from './rate-limiter.ts';

export type * from './wire.ts';
/** The Responses API's wire types, as openai-node's `OpenAI.Responses` namespace holds them. */
export type * as Responses from './responses/wire.ts';
export type { ConversationStore, KeptConversation } from './conversations/conversations.ts';
export type { ChatCompletionStore, StoredChatCompletion } from './chat-completions/stored.ts';
/** The Batch API's wire types, as openai-node's `OpenAI.Batches` namespace holds them. */
export type * as Batches from './batches/wire.ts';
