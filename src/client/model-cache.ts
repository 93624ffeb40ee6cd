import { isHubModel, ONNX_FILES, type LocalCandidate, type ModelCandidate } from '../engines/model-profile.ts';
import { hasWebLLMModel, webLLMRepository } from '../engines/web-llm/web-llm-cache.ts';

/**
 * What a candidate stores in the browser's Cache API, as the engines cache it: transformers.js keys its
 * `transformers-cache` by hub URL, web-llm its caches by the URLs of its model repository (web-llm-cache.ts). A model
 * served by the app itself (a path, like the bundled ones) belongs to the app's precache and is not a page's to remove.
 */
function storage(candidate: LocalCandidate): { probe: string; prefix: string | null } {
  if (candidate.engine === 'web-llm') {
    const repo = webLLMRepository(candidate.model);
    return { probe: `${repo}resolve/main/tensor-cache.json`, prefix: repo };
  }
  const file = `onnx/${ONNX_FILES[candidate.dtype ?? 'fp32']}`;
  if (!isHubModel(candidate.model))
    return { probe: new URL(`${candidate.model}/${file}`, location.href).href, prefix: null };
  const repo = `https://huggingface.co/${candidate.model}/`;
  return { probe: `${repo}resolve/main/${file}`, prefix: repo };
}

/**
 * Whether a model candidate's weights are in a cache of this origin, so that it loads without the network.
 *
 * @example
 * for (const { id, candidates } of await lantern.models()) console.log(id, await isModelCached(candidates[0]!));
 */
export async function isModelCached(candidate: ModelCandidate): Promise<boolean> {
  if (candidate.engine === 'remote') return false; // a server's model is the server's
  // As web-llm's own hasModelInCache decides: its tensor-cache.json, and every shard that lists.
  if (candidate.engine === 'web-llm') return hasWebLLMModel(candidate.model);
  // The service worker's precache keys files with a revision query: match on the path alone.
  return (await caches.match(storage(candidate).probe, { ignoreSearch: true })) !== undefined;
}

/** Whether a page may remove the candidate from the cache: downloaded models may, models the app serves may not. */
export const isModelRemovable = (candidate: ModelCandidate) =>
  candidate.engine !== 'remote' && storage(candidate).prefix !== null;

/**
 * Deletes every cached file of a downloaded model candidate from every cache of this origin (it downloads again on its
 * next use); returns how many files were removed. Unload it first (`lantern.restartEngine()`) to free its memory too.
 */
export async function removeCachedModel(candidate: ModelCandidate): Promise<number> {
  if (candidate.engine === 'remote') return 0;
  const { prefix } = storage(candidate);
  if (!prefix) return 0;
  let removed = 0;
  for (const name of await caches.keys()) {
    const cache = await caches.open(name);
    for (const request of await cache.keys()) {
      if (request.url.startsWith(prefix) && (await cache.delete(request))) removed += 1;
    }
  }
  return removed;
}
