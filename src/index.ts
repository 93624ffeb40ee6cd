/**
 * Lantern: the OpenAI-shaped /v1 API (chat completions, embeddings, models) as one web-standard handler, the engines
 * that answer it from local models, and the key store that guards it.
 */
export * from './api/index.ts';
export {
  EngineError,
  type ChatEvent,
  type ChatMessage,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type EngineErrorKind,
  type LoadProgress,
  type ModelCard,
  type ModelTask,
  type WireObject,
  type WireOptions,
} from './engine/index.ts';
export * from './engines/index.ts';
export * from './keys/index.ts';
