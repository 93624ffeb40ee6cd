import { keyOf, type EngineDescriptor } from './engine-descriptor.ts';
import { LLAMA_CPP_ENGINE } from './llama-cpp/llama-cpp-engine.ts';
import { REMOTE_ENGINE } from './remote/remote-engine.ts';
import { TRANSFORMERS_ENGINE } from './transformers/transformers-engine.ts';
import { WEB_LLM_ENGINE } from './web-llm/web-llm-engine.ts';

/**
 * Every engine Lantern runs candidates on, by the `engine` its candidates name, one line each: the order of chains is
 * the profile's, never this one's. A new engine writes its folder (`src/engines/<name>/`: its candidate type and
 * descriptor in `<name>-engine.ts`, light; its loaders, and its file list if it downloads) and adds one line here; a
 * local engine one to `ENGINE_LOADERS` (`loader-registry.ts`), one to `ENGINE_FILES` (`model-manifests.ts`) if it
 * downloads, and one to `BROWSER_REALMS` (`browser-realms.ts`) if it sets up a runtime there (docs/layout.md).
 *
 * Light, like the descriptors: the service worker and the page bundle it. With the other registries, the only module
 * outside an engine's folder that imports it (test/engine-imports.test.ts).
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

/**
 * Names a candidate inside Lantern and to the page that configured it: `web-llm:SmolLM2-…-MLC`,
 * `transformers:onnx-community/…@q4/cpu`, `remote:llama3.2@http://127.0.0.1:11434/v1` (a URL's user, query and
 * fragment left out: they can hold secrets). It says where the candidate lives (a folder, a server), which is the
 * page owner's to know but not a key holder's: what goes over `/v1` names candidates by `PublicView`
 * (`src/models/public-view.ts`) instead.
 */
export const candidateKey = (candidate: ModelCandidate): string => keyOf(engineOf(candidate), candidate);

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

// Each engine's candidate type (and what a profile writes with it), for profiles and the public API.
export {
  ONNX_FILES,
  type SpeechVoices,
  type TransformersCandidate,
  type VoiceAccent,
} from './transformers/transformers-engine.ts';
export { WEB_LLM_LIMITS, type WebLLMCandidate } from './web-llm/web-llm-engine.ts';
export type { LlamaCppCandidate } from './llama-cpp/llama-cpp-engine.ts';
export type { TransformersDevice, TransformersDtype } from './transformers/load-pretrained.ts';
export {
  basicCredentials,
  candidateSecrets,
  redactURL,
  type RemoteCandidate,
  type RemoteTimeouts,
} from './remote/remote-engine.ts';
