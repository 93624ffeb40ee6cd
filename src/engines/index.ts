/** Engines that run models behind the engine interface, and the model profiles they serve. */
export { createEngine, type EngineOptions } from './create-engine.ts';
export {
  bundledProfile,
  PUBLIC_MODELS,
  type ModelProfile,
  type ModelSource,
  type PublicModelId,
} from './model-profile.ts';
export type { TransformersDevice, TransformersDtype } from './transformers/load-pretrained.ts';
