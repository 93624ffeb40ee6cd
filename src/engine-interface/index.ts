/** The engine interface shared by `src/api` (its user) and `src/engines` (its implementations). */
export type * from './types.ts';
export type * from './tasks.ts';
export { withTaskMethods } from './tasks.ts';
export { ChatResultBuilder } from './chat-result.ts';
export { byteSize } from './byte-size.ts';
export { messageParts, type MessagePart } from './message-parts.ts';
export { watchOutput, type OutputListeners } from './watch-output.ts';
export {
  REASONING_EFFORTS,
  THOUGHT_SHARES,
  thinksAt,
  thoughtBudget,
  type ReasoningEffort,
} from './reasoning-effort.ts';
export { EngineError, modelNotFound, throwIfAborted, type EngineErrorKind, type EngineErrorOptions } from './errors.ts';
export { breaksRealm, failureMeaning, movesOnLocally, type FailureMeaning } from './failures.ts';
export { isWireObject } from './wire-object.ts';
export { OPENAI_VOICES, type OpenAIVoice } from './voices.ts';
