/*
 * Where web-llm 0.2.86 keeps a model in the browser's Cache API, without importing web-llm (the page reads it too):
 * its `reloadInternal` and `hasModelInCache` fetch through caches named by scope (`webllm/model`: tensor-cache.json,
 * the weights' shards and the tokenizer; `webllm/config`: mlc-chat-config.json; `webllm/wasm`: the model library),
 * keyed by the URLs of the model's repository (`cleanModelUrl` of its record's `model`, then `resolve/main/`).
 */

/** web-llm's caches (its `createScopedArtifactCache` scopes, 0.2.86), where it looks for a model's files. */
export const WEB_LLM_CACHES = { model: 'webllm/model', config: 'webllm/config', wasm: 'webllm/wasm' } as const;

/** The cache web-llm keeps a model's weights and tokenizer in (`createScopedArtifactCache('webllm/model')`). */
export const WEB_LLM_MODEL_CACHE = WEB_LLM_CACHES.model;

/**
 * The repository of a prebuilt web-llm model: mlc-ai's repository of its build, which a `-1k` build (a 1,024-token
 * window) and an embedding model's `-b4`/`-b32` (a batch size) share with the build they are named after. The rule is
 * tested against every record of web-llm's `prebuiltAppConfig` (test/model-cache.test.ts).
 */
export function webLLMRepository(modelId: string): string {
  return `https://huggingface.co/mlc-ai/${modelId.replace(/-(1k|b\d+)$/, '')}/`;
}

/** The URL web-llm fetches a model's file from, and keys it by in its caches (`new URL(file, modelUrl)`). */
export const webLLMFileUrl = (modelId: string, file: string) =>
  new URL(file, `${webLLMRepository(modelId)}resolve/main/`).href;

/**
 * Whether web-llm would load the model without downloading its weights, decided as its `hasModelInCache` decides it
 * (tvmjs' `hasTensorInCache`): tensor-cache.json is in the `webllm/model` cache, and every shard it lists.
 */
export async function hasWebLLMModel(modelId: string, storage: CacheStorage = caches): Promise<boolean> {
  const cache = await storage.open(WEB_LLM_MODEL_CACHE);
  const list = await cache.match(webLLMFileUrl(modelId, 'tensor-cache.json'));
  if (!list) return false;
  const { records } = (await list.json()) as { records: { dataPath: string }[] };
  const keys = new Set((await cache.keys()).map((request) => request.url));
  return records.every((record) => keys.has(webLLMFileUrl(modelId, record.dataPath)));
}
