/** The engine interface shared by `src/api` (its user) and `src/engines` (its implementations). */
export type * from './types.ts';
export { EngineError, throwIfAborted, type EngineErrorKind, type EngineErrorOptions } from './errors.ts';
