import type { EngineDescriptor } from './engine-descriptor.ts';
import { LLAMA_CPP_ENGINE } from './llama-cpp/llama-cpp-engine.ts';
import { REMOTE_ENGINE } from './remote/remote-engine.ts';
import { TRANSFORMERS_ENGINE } from './transformers/transformers-engine.ts';
import { WEB_LLM_ENGINE } from './web-llm/web-llm-engine.ts';

/**
 * Every engine Lantern runs candidates on, by the `engine` its candidates name, one line each: the order of chains is
 * the profile's, never this one's. A new engine writes its folder (`src/engines/<name>/`: its candidate type and
 * descriptor in `<name>-engine.ts`, light; its loaders, and its file list if it downloads) and adds one line here, one
 * to `ENGINE_LOADERS` (`model-loaders.ts`) and, for a local engine, one to `ENGINE_FILES` (`model-manifests.ts`).
 *
 * Light, like the descriptors: the service worker and the page bundle it.
 */
export const ENGINES = Object.freeze({
  transformers: TRANSFORMERS_ENGINE,
  'web-llm': WEB_LLM_ENGINE,
  'llama.cpp': LLAMA_CPP_ENGINE,
  remote: REMOTE_ENGINE,
});

type Engines = typeof ENGINES;

export type EngineName = keyof Engines;

/** The candidate type of an engine. */
export type CandidateOf<N extends EngineName> = Engines[N] extends EngineDescriptor<infer C, boolean> ? C : never;

/** Every engine's candidates: what a profile's entries list. */
export type ModelCandidate = CandidateOf<EngineName>;

/** The engines that run on this device. */
export type LocalEngineName = { [N in EngineName]: Engines[N]['local'] extends true ? N : never }[EngineName];

/** The candidates that run on this device. */
export type LocalCandidate = CandidateOf<LocalEngineName>;

/** The descriptor of a candidate's engine. */
export function engineOf<C extends ModelCandidate>(candidate: C): EngineDescriptor<C> {
  return ENGINES[candidate.engine as EngineName] as unknown as EngineDescriptor<C>;
}

/** The descriptor of the engine a `candidateKey` (or a public name) names, by its first part; undefined for none. */
export function engineOfKey(key: string): EngineDescriptor<ModelCandidate> | undefined {
  const name = key.slice(0, key.indexOf(':'));
  return Object.hasOwn(ENGINES, name) ? (ENGINES[name as EngineName] as EngineDescriptor<ModelCandidate>) : undefined;
}

/** The label the playground shows a candidate by (before its model): `transformers.js · cpu · fp32`, `web-llm`. */
export const candidateLabel = (candidate: ModelCandidate): string => engineOf(candidate).label(candidate);
