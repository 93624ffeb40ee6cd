import { hasModelInCache, prebuiltAppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { hasWebLLMModel, webLLMFileUrl, webLLMRepository } from '../src/engines/web-llm/web-llm-cache.ts';
import { fakeCreate } from './support/fake-web-llm.ts';
import { installMemoryCaches } from './support/memory-caches.ts';

/**
 * Where web-llm keeps a model (src/engines/web-llm/web-llm-cache.ts, which Lantern's downloads place web-llm's files
 * by), against an origin's caches laid out as web-llm 0.2.86 writes them (the fake's load writes `webllm/model`:
 * tensor-cache.json, its shards, tokenizer.json; `webllm/config`; `webllm/wasm`), and against web-llm's own
 * `hasModelInCache` on the same caches.
 */
describe('hasWebLLMModel', () => {
  it('says a model web-llm loaded is stored, as web-llm itself says', async () => {
    const create = fakeCreate();
    const model = 'Qwen3-0.6B-q4f16_1-MLC';
    expect(await hasWebLLMModel(model)).toBe(false);
    await create(model, {});
    expect(await hasModelInCache(model)).toBe(true);
    expect(await hasWebLLMModel(model)).toBe(true);
    // Another model of the same origin is not.
    expect(await hasWebLLMModel('Qwen3-1.7B-q4f16_1-MLC')).toBe(false);
  });

  it('says a model with a shard missing is not stored (it would download), as web-llm says', async () => {
    const create = fakeCreate();
    const model = 'SmolLM2-360M-Instruct-q4f32_1-MLC';
    await create(model, {});
    const cache = await create.caches.open('webllm/model');
    const shard = (await cache.keys()).find((r) => r.url.endsWith('params_shard_2.bin'))!;
    await cache.delete(shard);
    expect(await hasModelInCache(model)).toBe(false);
    expect(await hasWebLLMModel(model)).toBe(false);
  });

  it("finds a -1k build in its base model's repository, where web-llm keeps it", async () => {
    const create = fakeCreate();
    const model = 'Llama-3.1-8B-Instruct-q4f16_1-MLC-1k';
    await create(model, {});
    expect(await hasModelInCache(model)).toBe(true);
    expect(await hasWebLLMModel(model)).toBe(true);
    expect(await hasWebLLMModel('Llama-3.1-8B-Instruct-q4f16_1-MLC')).toBe(true); // the same files
  });
});

describe('webLLMRepository', () => {
  it("computes every prebuilt model's repository as web-llm's records name it", async () => {
    installMemoryCaches();
    for (const record of prebuiltAppConfig.model_list) {
      const url = new URL(record.model.replace(/\/?$/, '/resolve/main/')).href;
      expect(`${webLLMRepository(record.model_id)}resolve/main/`, record.model_id).toBe(url);
      expect(webLLMFileUrl(record.model_id, 'tensor-cache.json')).toBe(`${url}tensor-cache.json`);
      const cache = await caches.open('webllm/model');
      await cache.put(`${url}tensor-cache.json`, new Response(JSON.stringify({ records: [] })));
      expect(await hasWebLLMModel(record.model_id), record.model_id).toBe(true);
      await cache.delete(`${url}tensor-cache.json`);
    }
  });
});
