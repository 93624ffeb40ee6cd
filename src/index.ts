/**
 * Lantern: the OpenAI-shaped /v1 API (chat completions, completions, responses, embeddings, models) as one
 * web-standard handler, the engines that answer it from local models, the key store that guards it and the store that
 * keeps responses.
 */
export * from './api/index.ts';
export {
  ChatResultBuilder,
  EngineError,
  type CallOptions,
  type ChatEvent,
  type ChatMessage,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type FunctionCall,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type EngineErrorKind,
  type EngineRuns,
  type JsonConstraint,
  type JsonSchema,
  type LoadProgress,
  type ModelCard,
  type ComputeDevice,
  type RunsOn,
  type ModelTask,
  type OutputConstraint,
  type Serving,
  type TaskEvent,
  type TaskOptions,
  type TaskRequest,
  type TaskResult,
  type TaskTypes,
  type ToolCall,
  type ToolConstraint,
  type ToolChoice,
  type ToolDefinition,
  type WireObject,
  withTaskMethods,
} from './engine-interface/index.ts';
export * from './models/index.ts';
export * from './keys/index.ts';
export * from './response-store/index.ts';
export * from './record-store/index.ts';
export { indexedDbDocumentStorage, memoryDocumentStorage, type DocumentStorage } from './document-store/index.ts';
export { DEFAULT_LIBRARY_LIMITS, type LibraryLimits } from './file-search/index.ts';
export { DEFAULT_BATCH_LIMITS, type BatchLimits } from './batches/index.ts';
