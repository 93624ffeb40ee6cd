/** Engines that run models behind the engine interface, and the model profiles they serve. */
export { createEngine, type EngineOptions } from './create-engine.ts';
export { createModelRouter, type ModelRouterOptions } from '../models/model-router.ts';
export {
  createLocalEngine,
  type LocalCallOptions,
  type LocalEngine,
  type LocalEngineOptions,
  type LocalRunOptions,
  type LocalTarget,
} from './local-engine.ts';
export { REMOTE_TIMEOUTS } from './remote/upstream-request.ts';
export { DEFAULT_COOL_DOWN_MS } from './remote/circuit-breaker.ts';
export {
  DEFAULT_LOADERS,
  type ChatModel,
  type EmbeddingModel,
  type LoadContext,
  type ModelLoaders,
  type RunOptions,
} from './model-loaders.ts';
export {
  bundledProfile,
  canRun,
  candidateChain,
  candidateKey,
  CPU_ONLY,
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
} from '../models/model-profile.ts';
export { DEFAULT_PROFILE } from '../models/model-registry.ts';
export type { TransformersDevice, TransformersDtype } from './transformers/load-pretrained.ts';
