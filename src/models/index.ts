/** Engines that run models behind the engine interface, and the model profiles they serve. */
export { createEngine, type EngineOptions } from './create-engine.ts';
export { createModelRouter, type ModelRouterOptions } from './model-router.ts';
export {
  createLocalEngine,
  type LocalCallOptions,
  type LocalEngine,
  type LocalEngineOptions,
  type LocalRunOptions,
  type LocalTarget,
} from '../engines/local-engine.ts';
export { REMOTE_TIMEOUTS } from '../engines/remote/upstream-request.ts';
export { DEFAULT_COOL_DOWN_MS } from '../engines/remote/circuit-breaker.ts';
export { DEFAULT_LOADERS, type ModelLoaders } from '../engines/loader-registry.ts';
export type { ChatModel, EmbeddingModel, LoadContext, RunOptions } from '../engines/model-loaders.ts';
export {
  bundledProfile,
  canRun,
  candidateChain,
  candidateKey,
  CPU_ONLY,
  NODE_CPU,
  modelChain,
  OPENAI_ALIASES,
  PUBLIC_MODELS,
  resolveModelName,
  usableCandidates,
  validateProfile,
  withEngines,
  withoutFailures,
  WEB_LLM_LIMITS,
  type AdapterLimits,
  type CandidateFailure,
  type DeviceCapabilities,
  type LocalCandidate,
  type ModelCandidate,
  type ModelChain,
  type ModelEntry,
  type ModelProfile,
  type PublicModelId,
  type RemoteCandidate,
  type RemoteTimeouts,
  type RoutingConfig,
  type RoutingPolicy,
  type EngineName,
  type LlamaCppCandidate,
  type TransformersCandidate,
  type WebLLMCandidate,
} from './model-profile.ts';
export { DEFAULT_PROFILE } from './model-registry.ts';
export type { TransformersDevice, TransformersDtype } from '../engines/engine-registry.ts';
