import { hasModelInCache, prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { isModelCached, isModelRemovable, removeCachedModel } from '../src/client/model-cache.ts';
import type { WebLLMCandidate } from '../src/engines/model-profile.ts';
import { fakeCreate } from './support/fake-web-llm.ts';
import { installMemoryCaches } from './support/memory-caches.ts';

/**
 * isModelCached on a web-llm candidate, against an origin's caches laid out as web-llm 0.2.86 writes them (the fake's
 * load writes `webllm/model`: tensor-cache.json, its shards, tokenizer.json; `webllm/config`; `webllm/wasm`), and
 * against web-llm's own `hasModelInCache` on the same caches.
 */
const candidate = (model: string): WebLLMCandidate => ({ engine: 'web-llm', model });

describe('isModelCached (web-llm)', () => {
  it('says a model web-llm loaded is cached, as web-llm itself says', async () => {
    const create = fakeCreate();
    const qwen = candidate('Qwen3-0.6B-q4f16_1-MLC');
    expect(await isModelCached(qwen)).toBe(false);
    await create(qwen.model, {});
    expect(await hasModelInCache(qwen.model)).toBe(true);
    expect(await isModelCached(qwen)).toBe(true);
    // Another model of the same origin is not.
    expect(await isModelCached(candidate('Qwen3-1.7B-q4f16_1-MLC'))).toBe(false);
  });

  it('says a model with a shard missing is not cached (it would download), as web-llm says', async () => {
    const create = fakeCreate();
    const model = 'SmolLM2-360M-Instruct-q4f32_1-MLC';
    await create(model, {});
    const cache = await create.caches.open('webllm/model');
    const shard = (await cache.keys()).find((r) => r.url.endsWith('params_shard_2.bin'))!;
    await cache.delete(shard);
    expect(await hasModelInCache(model)).toBe(false);
    expect(await isModelCached(candidate(model))).toBe(false);
  });

  it("finds a -1k build in its base model's repository, where web-llm keeps it", async () => {
    const create = fakeCreate();
    const model = 'Llama-3.1-8B-Instruct-q4f16_1-MLC-1k';
    await create(model, {});
    expect(await hasModelInCache(model)).toBe(true);
    expect(await isModelCached(candidate(model))).toBe(true);
    expect(await isModelCached(candidate('Llama-3.1-8B-Instruct-q4f16_1-MLC'))).toBe(true); // the same files
  });

  it("computes every prebuilt model's repository as web-llm's records name it", async () => {
    installMemoryCaches();
    for (const record of prebuiltAppConfig.model_list) {
      const url = new URL(record.model.replace(/\/?$/, '/resolve/main/')).href;
      const cache = await caches.open('webllm/model');
      await cache.put(`${url}tensor-cache.json`, new Response(JSON.stringify({ records: [] })));
      expect(await isModelCached(candidate(record.model_id)), record.model_id).toBe(true);
      await cache.delete(`${url}tensor-cache.json`);
    }
  });

  it("removes a model's files from every cache of the origin", async () => {
    const create = fakeCreate();
    const qwen = candidate('Qwen3-0.6B-q4f16_1-MLC');
    await create(qwen.model, {});
    expect(isModelRemovable(qwen)).toBe(true);
    // tensor-cache.json, four shards and tokenizer.json (webllm/model), mlc-chat-config.json (webllm/config).
    expect(await removeCachedModel(qwen)).toBe(7);
    expect(await isModelCached(qwen)).toBe(false);
    expect(await hasModelInCache(qwen.model)).toBe(false);
    const llama = candidate('Llama-3.1-8B-Instruct-q4f16_1-MLC-1k');
    await create(llama.model, {});
    expect(await removeCachedModel(llama)).toBe(7);
    expect(await hasModelInCache(llama.model)).toBe(false);
  });
});
