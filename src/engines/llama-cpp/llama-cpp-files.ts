import type { DownloadTarget, StoredFiles } from '../../downloads/index.ts';
import { isHubModel } from '../engine-descriptor.ts';
import { fromHub, hubBase, hubListing, HUGGING_FACE, type EngineFiles, type FetchOptions } from '../model-files.ts';
import { ggufParts, type LlamaCppCandidate } from './llama-cpp-engine.ts';

/*
 * The files a llama.cpp candidate reads, as Lantern downloads them (`ENGINE_FILES` in `model-manifests.ts`): its GGUF,
 * every part of a split one. Sizes and SHA-256s come from the hub's listing of the repository (its LFS hashes).
 */

export const LLAMA_CPP_FILES: EngineFiles<LlamaCppCandidate> = { list: llamaCppFiles };

/** Where a candidate's folder is asked for (`url`, as the runtime names it) and fetched from (`source`). */
export function llamaCppFolder(candidate: LlamaCppCandidate): { url: string; source: string; repo?: string } {
  if (!isHubModel(candidate.model)) {
    const folder = candidate.model.replace(/\/*$/, '/');
    return { url: folder, source: folder };
  }
  const url = `${HUGGING_FACE}${candidate.model}/resolve/main/`;
  return { url, source: fromHub(url, candidate.hub), repo: candidate.model };
}

async function llamaCppFiles(
  candidate: LlamaCppCandidate,
  _store: StoredFiles,
  options: FetchOptions,
): Promise<DownloadTarget[]> {
  const folder = llamaCppFolder(candidate);
  const listing = folder.repo ? await hubListing(hubBase(candidate.hub), folder.repo, options) : undefined;
  return ggufParts(candidate.file).map((name) => ({
    url: folder.url + name,
    source: folder.source + name,
    ...listing?.get(name),
  }));
}
