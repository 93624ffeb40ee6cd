/** Engines that run models behind the engine interface, and the model profiles they serve. */
export { createEngine, type EngineOptions } from './create-engine.ts';
export {
  DEFAULT_LOADERS,
  type ChatModel,
  type EmbeddingModel,
  type LoadContext,
  type ModelLoaders,
} from './model-loaders.ts';
export {
  bundledProfile,
  canRun,
  candidateKey,
  CPU_ONLY,
  modelChain,
  PUBLIC_MODELS,
  usableCandidates,
  WEB_LLM_LIMITS,
  type AdapterLimits,
  type CandidateFailure,
  type DeviceCapabilities,
  type ModelCandidate,
  type ModelChain,
  type ModelEntry,
  type ModelProfile,
  type PublicModelId,
  type TransformersCandidate,
  type WebLLMCandidate,
} from './model-profile.ts';
export { DEFAULT_PROFILE } from './model-registry.ts';
export type { TransformersDevice, TransformersDtype } from './transformers/load-pretrained.ts';
