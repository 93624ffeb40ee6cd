import type { StoredFiles } from '../downloads/index.ts';
import { downloadKey, manifestName, storedManifest, type EngineFiles, type ModelManifest } from './model-files.ts';
import { candidateKey, type LocalCandidate } from './engine-registry.ts';
import type { CandidateOf, LocalEngineName } from './engine-registry.ts';
import { LLAMA_CPP_FILES } from './llama-cpp/llama-cpp-files.ts';
import { TRANSFORMERS_FILES } from './transformers/transformers-files.ts';
import { WEB_LLM_FILES } from './web-llm/web-llm-files.ts';

export { sha256OfIntegrity } from './web-llm/web-llm-files.ts';

/**
 * How each local engine lists a candidate's files (`src/engines/<name>/<name>-files.ts`), one line per engine: what
 * `prepareCandidate` downloads and the storage page reports. They may import their engine's library on demand (to read
 * its registry of files), never a model: the page bundles them.
 */
const ENGINE_FILES: { readonly [N in LocalEngineName]: EngineFiles<CandidateOf<N>> } = {
  transformers: TRANSFORMERS_FILES,
  'web-llm': WEB_LLM_FILES,
  'llama.cpp': LLAMA_CPP_FILES,
};

const filesOf = <C extends LocalCandidate>(candidate: C) => ENGINE_FILES[candidate.engine] as unknown as EngineFiles<C>;

/**
 * The candidate's files, from the manifest stored with them (so a stored model loads offline) or, the first time, from
 * the network: the small files that name the rest (config.json; web-llm's mlc-chat-config.json and tensor-cache.json)
 * are downloaded into the store first, and sizes and SHA-256s come from the hub's file listing where it has one. The
 * model library's pin (`modelLibIntegrity`) is the candidate's as it is now, not as it was at the first download.
 */
export async function modelManifest(
  candidate: LocalCandidate,
  store: StoredFiles,
  options: { fetch?: typeof fetch; signal?: AbortSignal | undefined } = {},
): Promise<ModelManifest> {
  const engine = filesOf(candidate);
  const stored = await storedManifest(candidate, store);
  if (stored) return engine.pinned?.(stored, candidate) ?? stored;
  const files = await engine.list(candidate, store, options);
  const manifest: ModelManifest = { candidate: candidateKey(candidate), key: downloadKey(candidate), files };
  await store.writeJSON(manifestName(manifest.key), manifest);
  return manifest;
}
