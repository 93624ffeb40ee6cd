import type { DownloadTarget, StoredFiles } from '../../downloads/index.ts';
import { hubBase, hubListing, modelFolder, type EngineFiles, type FetchOptions } from '../model-files.ts';
import { ggufParts, type LlamaCppCandidate } from './llama-cpp-engine.ts';

/*
 * The files a llama.cpp candidate reads, as Lantern downloads them (`ENGINE_FILES` in `model-manifests.ts`): its GGUF,
 * every part of a split one. Sizes and SHA-256s come from the hub's listing of the repository (its LFS hashes).
 */

export const LLAMA_CPP_FILES: EngineFiles<LlamaCppCandidate> = { list: llamaCppFiles };

async function llamaCppFiles(
  candidate: LlamaCppCandidate,
  _store: StoredFiles,
  options: FetchOptions,
): Promise<DownloadTarget[]> {
  const folder = modelFolder(candidate.model, candidate.hub);
  const listing = folder.repo ? await hubListing(hubBase(candidate.hub), folder.repo, options) : undefined;
  return ggufParts(candidate.file).map((name) => ({
    url: folder.url + name,
    source: folder.source + name,
    ...listing?.get(name),
  }));
}
