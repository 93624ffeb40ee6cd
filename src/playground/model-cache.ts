import { isHubModel, ONNX_FILES, type LocalCandidate } from '../engines/model-profile.ts';

/**
 * What a candidate stores in the browser's Cache API, as the engines cache it: transformers.js keys its
 * `transformers-cache` by hub URL, web-llm its caches by the URLs of its model repository. A model served by the app
 * itself (a path, like the bundled ones) belongs to the app's precache and is not the playground's to remove.
 */
function storage(candidate: LocalCandidate): { probe: string; prefix: string | null } {
  if (candidate.engine === 'web-llm') {
    const repo = `https://huggingface.co/mlc-ai/${candidate.model}/`;
    return { probe: `${repo}resolve/main/ndarray-cache.json`, prefix: repo };
  }
  const file = `onnx/${ONNX_FILES[candidate.dtype ?? 'fp32']}`;
  if (!isHubModel(candidate.model))
    return { probe: new URL(`${candidate.model}/${file}`, location.href).href, prefix: null };
  const repo = `https://huggingface.co/${candidate.model}/`;
  return { probe: `${repo}resolve/main/${file}`, prefix: repo };
}

/** Whether the candidate's weights are in a cache of this origin (so it loads without the network). */
export async function isCached(candidate: LocalCandidate): Promise<boolean> {
  // The service worker's precache keys files with a revision query: match on the path alone.
  return (await caches.match(storage(candidate).probe, { ignoreSearch: true })) !== undefined;
}

/** Whether the playground may remove the candidate from the cache (models the app ships cannot be). */
export const isRemovable = (candidate: LocalCandidate) => storage(candidate).prefix !== null;

/** Deletes every cached file of the candidate from every cache of this origin; returns how many were removed. */
export async function removeFromCache(candidate: LocalCandidate): Promise<number> {
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
