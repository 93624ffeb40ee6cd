import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StoredFiles, type DownloadTarget, type FileRef } from '../src/downloads/index.ts';
import { prepareCandidate } from '../src/engines/model-downloads.ts';
import { storedManifest, storedModel, type ModelManifest } from '../src/engines/model-files.ts';
import type { TransformersCandidate, WebLLMCandidate } from '../src/models/model-profile.ts';
import { hasWebLLMModel } from '../src/engines/web-llm/web-llm-cache.ts';
import { BUNDLED_REPOS, startHubServer, TINY_MLC, type HubServer } from './support/hub-server.ts';
import { MemoryCacheStorage } from './support/memory-caches.ts';

/**
 * Issue 41, item 8: a download's record is kept per source (the hub, a mirror), a stored file is checked again each
 * time it is reused, and web-llm's model library (code) is hashed. Against the test hub (test/support/hub-server.ts);
 * `hub` stands in for huggingface.co (`asHub` sends its requests there), `mirror` is a bad mirror: no listing, and
 * weights with a byte changed, which nothing can catch.
 */
const CHAT = BUNDLED_REPOS['lantern/tiny-chat']!;
const WEIGHTS = readFileSync(join(CHAT, 'onnx/model.onnx'));
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const WHOLE = sha256(WEIGHTS);
const HUB_WEIGHTS = 'https://huggingface.co/lantern/tiny-chat/resolve/main/onnx/model.onnx';
const quick = { stallMs: 300, retryDelayMs: 10 };
const ID = 'crimson-falcon-4';

let hub: HubServer;
let mirror: HubServer;
const asHub: typeof fetch = (input, init) =>
  fetch(
    String(input instanceof Request ? input.url : input).replace('https://huggingface.co/', `${hub.origin}/`),
    init,
  );
const fromHub: TransformersCandidate = {
  engine: 'transformers',
  model: 'lantern/tiny-chat',
  device: 'cpu',
  dtype: 'fp32',
};
const fromMirror = (): TransformersCandidate => ({ ...fromHub, hub: mirror.origin });
const badMirror = () =>
  mirror.faults.push(
    { path: /^\/api\/models\//, kind: 'status', status: 404, times: Infinity },
    { path: 'onnx/model.onnx', kind: 'corrupt', times: Infinity },
  );

const read = async (store: StoredFiles, file: FileRef) =>
  sha256(new Uint8Array(await (await store.response(file))!.arrayBuffer()));
/** What the engine reads when it asks for the weights by their hub URL. */
const engineReads = (store: StoredFiles) => read(store, store.engineFile(HUB_WEIGHTS));

beforeAll(async () => {
  [hub, mirror] = await Promise.all([
    startHubServer({ repos: BUNDLED_REPOS }),
    startHubServer({ repos: BUNDLED_REPOS }),
  ]);
});
afterEach(() => {
  for (const server of [hub, mirror]) {
    server.reset();
    server.offline = false;
  }
});
afterAll(async () => {
  await hub?.close();
  await mirror?.close();
});

describe('a record per source', () => {
  it("does not take a mirror's files for the hub's: the hub's are downloaded, and each loads its own", async () => {
    const store = new StoredFiles(new MemoryCacheStorage());
    badMirror();
    await prepareCandidate(fromMirror(), { id: ID, store, fetch: asHub, ...quick });
    const mirrored = await engineReads(store);
    expect(mirrored).not.toBe(WHOLE); // the bad mirror's bytes: without a listing, nothing could tell

    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    expect(hub.bytesServed('onnx/model.onnx')).toBe(WEIGHTS.length);
    expect(await engineReads(store)).toBe(WHOLE);

    // Both stay stored, each its own copy: offline, each candidate loads its own.
    hub.offline = mirror.offline = true;
    await prepareCandidate(fromMirror(), { id: ID, store, fetch: asHub, ...quick });
    expect(await engineReads(store)).toBe(mirrored);
    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    expect(await engineReads(store)).toBe(WHOLE);
    expect(await storedModel(fromMirror(), store)).toMatchObject({ state: 'complete' });
    expect(await storedModel(fromHub, store)).toMatchObject({ state: 'complete' });
  });

  it("does not take the hub's files for a mirror's", async () => {
    const store = new StoredFiles(new MemoryCacheStorage());
    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    expect(await storedModel(fromMirror(), store)).toMatchObject({ state: 'none', bytes: 0 });
    await prepareCandidate(fromMirror(), { id: ID, store, fetch: asHub, ...quick });
    const fetched = mirror.log.filter((r) => r.method === 'GET' && r.path.includes('/resolve/main/'));
    expect(new Set(fetched.map((r) => r.path.split('/resolve/main/')[1]))).toEqual(
      new Set(['config.json', 'onnx/model.onnx', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']),
    );
  });
});

describe('a stored file checked again when reused', () => {
  it('downloads again a file whose stored part is gone', async () => {
    const storage = new MemoryCacheStorage();
    const store = new StoredFiles(storage);
    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    const cache = await storage.open('lantern-downloads');
    const part = (await cache.keys()).find((r) => r.url.includes('/parts/') && r.url.includes('model.onnx'))!;
    await cache.delete(part);
    hub.reset();
    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    expect(hub.bytesServed('onnx/model.onnx')).toBe(WEIGHTS.length);
    expect(await engineReads(store)).toBe(WHOLE);
  });

  it('refuses, with a clear error, a stored file whose list now gives another SHA-256 the server does not send', async () => {
    const store = new StoredFiles(new MemoryCacheStorage());
    await prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick });
    // The hub's file changed since (a new listing), but this server still sends the old one.
    const manifest = (await storedManifest(fromHub, store))!;
    const weights = manifest.files.find((file) => file.url === HUB_WEIGHTS)!;
    weights.sha256 = sha256(new TextEncoder().encode('another file'));
    await store.writeJSON(`manifest:${manifest.key}`, manifest);
    await expect(prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick })).rejects.toMatchObject({
      kind: 'download_failed',
      message: expect.stringMatching(
        /onnx\/model\.onnx failed its check twice \(its SHA-256 is not the one its list of files gives\)/,
      ),
    });
    expect(hub.bytesServed('onnx/model.onnx')).toBe(3 * WEIGHTS.length); // once stored, then twice refused
  });
});

describe('web-llm', () => {
  /** The synthetic web-llm repo of the test hub, as a model of web-llm's prebuilt list; `other` a second host. */
  let mlc: HubServer;
  let other: HubServer;
  const repo = 'mlc-ai/Qwen3-0.6B-q4f32_1-MLC';
  beforeAll(async () => {
    [mlc, other] = await Promise.all([
      startHubServer({ repos: {}, webLLM: true, webLLMRepo: repo }),
      startHubServer({ repos: {}, webLLM: true, webLLMRepo: repo }),
    ]);
  });
  afterEach(() => {
    for (const server of [mlc, other]) {
      server.reset();
      server.offline = false;
    }
  });
  afterAll(async () => {
    await mlc?.close();
    await other?.close();
  });
  const candidate = (server = mlc, extra: Partial<WebLLMCandidate> = {}): WebLLMCandidate => ({
    engine: 'web-llm',
    model: 'Qwen3-0.6B-q4f32_1-MLC',
    hub: server.origin,
    modelLib: `${server.origin}${TINY_MLC.modelLibPath}`,
    ...extra,
  });
  const library = async () =>
    (await import('@mlc-ai/web-llm')).prebuiltAppConfig.model_list.find((r) => r.model_id === candidate().model)!
      .model_lib;
  const libraryBytes = async () =>
    new Uint8Array(await (await fetch(`${mlc.origin}${TINY_MLC.modelLibPath}`)).arrayBuffer());
  const integrity = (bytes: Uint8Array) => `sha256-${createHash('sha256').update(bytes).digest('base64')}`;
  const shard = (path: string) => mlc.log.filter((r) => r.method === 'GET' && r.path.endsWith(path));

  it('refuses a model library whose bytes do not match its pinned hash', async () => {
    const storage = new MemoryCacheStorage();
    const pinned = candidate(mlc, { modelLibIntegrity: integrity(new TextEncoder().encode('another library')) });
    await expect(prepareCandidate(pinned, { id: ID, store: new StoredFiles(storage), ...quick })).rejects.toMatchObject(
      {
        kind: 'download_failed',
        message: expect.stringMatching(/webgpu\.wasm failed its check twice \(its SHA-256 is not the one/),
      },
    );
    expect(await (await storage.open('webllm/wasm')).match(await library())).toBeUndefined();

    // Pinned to its own bytes, it is stored; pinned later to others, the stored copy is refused too.
    const right = candidate(mlc, { modelLibIntegrity: integrity(await libraryBytes()) });
    await prepareCandidate(right, { id: ID, store: new StoredFiles(storage), ...quick });
    expect(await (await storage.open('webllm/wasm')).match(await library())).toBeDefined();
    await expect(prepareCandidate(pinned, { id: ID, store: new StoredFiles(storage), ...quick })).rejects.toMatchObject(
      { kind: 'download_failed' },
    );
  });

  it('hashes the stored library again on reuse: changed bytes in its cache are downloaded again', async () => {
    const storage = new MemoryCacheStorage();
    const store = new StoredFiles(storage);
    await prepareCandidate(candidate(), { id: ID, store, ...quick });
    const wasm = await storage.open('webllm/wasm');
    const placed = (await wasm.match(await library()))!;
    const bytes = new Uint8Array(await placed.arrayBuffer());
    bytes[bytes.length - 1]! ^= 1; // same length, same headers: only its hash tells
    await wasm.put(await library(), new Response(bytes, { headers: placed.headers }));
    mlc.reset();
    await prepareCandidate(candidate(), { id: ID, store, ...quick });
    expect(shard(TINY_MLC.modelLibPath)).toHaveLength(1);
    expect(sha256(new Uint8Array(await (await wasm.match(await library()))!.arrayBuffer()))).toBe(
      sha256(await libraryBytes()),
    );
  });

  it("downloads again a shard that web-llm's cache got from elsewhere", async () => {
    const storage = new MemoryCacheStorage();
    const store = new StoredFiles(storage);
    await prepareCandidate(candidate(), { id: ID, store, ...quick });
    const model = await storage.open('webllm/model');
    const url = `https://huggingface.co/${repo}/resolve/main/params_shard_0.bin`;
    const size = (await (await model.match(url))!.arrayBuffer()).byteLength;
    await model.put(url, new Response(new Uint8Array(size), { headers: { 'content-length': String(size) } }));
    mlc.reset();
    await prepareCandidate(candidate(), { id: ID, store, ...quick });
    expect(shard('params_shard_0.bin')).toHaveLength(1);
    expect(shard('params_shard_1.bin')).toHaveLength(0);
  });

  it("keeps one host's copy at a time in web-llm's caches, and says so", async () => {
    const storage = new MemoryCacheStorage();
    const store = new StoredFiles(storage);
    await prepareCandidate(candidate(mlc), { id: ID, store, ...quick });
    await prepareCandidate(candidate(other), { id: ID, store, ...quick });
    expect(other.log.some((r) => r.path.endsWith('params_shard_0.bin'))).toBe(true);
    // web-llm reads one file per URL: the first host's copy was replaced, and its model is no longer complete.
    expect(await storedModel(candidate(other), store)).toMatchObject({ state: 'complete' });
    expect(await storedModel(candidate(mlc), store)).toMatchObject({ state: 'none', bytes: 0 });
    expect(await hasWebLLMModel(candidate().model, storage)).toBe(true);
    mlc.reset();
    await prepareCandidate(candidate(mlc), { id: ID, store, ...quick });
    expect(shard('params_shard_0.bin')).toHaveLength(1);
  });
});

describe('a store written before records had a source', () => {
  /**
   * Writes what Lantern stored before issue 41, key for key: records by URL without a source, parts by URL, web-llm's
   * files whole in its caches without Lantern's headers, manifests by `candidateKey` without `key`.
   */
  async function writeLegacy(storage: CacheStorage, manifest: ModelManifest, bytes: Map<string, Uint8Array>) {
    const base = 'https://lantern-downloads.invalid/';
    const cache = await storage.open('lantern-downloads');
    for (const file of manifest.files) {
      const body = bytes.get(file.url)!;
      const own = (file.cache ?? 'lantern-downloads') === 'lantern-downloads';
      if (own) await cache.put(`${base}part/0/${encodeURIComponent(file.url)}`, new Response(body.slice()));
      else {
        const headers = { 'content-type': 'application/octet-stream', 'content-length': String(body.length) };
        await (await storage.open(file.cache!)).put(file.url, new Response(body.slice(), { headers }));
      }
      const record = {
        url: file.url,
        cache: file.cache ?? 'lantern-downloads',
        ...(file.sha256 && { sha256: file.sha256 }),
        size: body.length,
        received: body.length,
        parts: own ? [body.length] : [],
        complete: true,
        lastUsed: Date.now(),
      };
      await cache.put(`${base}file/${encodeURIComponent(file.url)}`, Response.json(record));
    }
    const files = manifest.files.map(({ executable: _, ...file }) => file);
    const name = `manifest:${manifest.candidate}`;
    await cache.put(
      `${base}manifest/${encodeURIComponent(name)}`,
      Response.json({ candidate: manifest.candidate, files }),
    );
  }

  /** A candidate prepared by this version in a scratch store: its manifest and each file's bytes. */
  async function downloaded(candidate: TransformersCandidate | WebLLMCandidate) {
    const scratch = new StoredFiles(new MemoryCacheStorage());
    await prepareCandidate(candidate, { id: ID, store: scratch, ...quick });
    const manifest = (await storedManifest(candidate, scratch))!;
    const bytes = new Map<string, Uint8Array>();
    for (const file of manifest.files) {
      bytes.set(file.url, new Uint8Array(await (await scratch.response(file as DownloadTarget))!.arrayBuffer()));
    }
    return { manifest, bytes };
  }

  it("loads a mirror's model offline, as the mirror's; the hub's candidate does not take it", async () => {
    const { manifest, bytes } = await downloaded(fromMirror());
    const storage = new MemoryCacheStorage();
    await writeLegacy(storage, manifest, bytes);
    const store = new StoredFiles(storage);
    hub.offline = mirror.offline = true;
    for (let load = 0; load < 2; load++)
      await prepareCandidate(fromMirror(), { id: ID, store, fetch: asHub, ...quick });
    expect(await engineReads(store)).toBe(WHOLE);
    expect(await storedModel(fromMirror(), store)).toMatchObject({ state: 'complete' });
    // Its manifest moved to the mirror's name; the hub's candidate has nothing stored, and needs the network.
    expect(await store.jsonNames()).toContain(
      `manifest:transformers:lantern/tiny-chat@fp32/cpu from ${mirror.origin}/`,
    );
    expect(await storedModel(fromHub, store)).toMatchObject({ state: 'none' });
    await expect(prepareCandidate(fromHub, { id: ID, store, fetch: asHub, ...quick })).rejects.toMatchObject({
      kind: 'download_failed',
    });
  });

  it("loads a web-llm model offline from web-llm's caches", async () => {
    let mlc: HubServer | undefined;
    try {
      mlc = await startHubServer({ repos: {}, webLLM: true, webLLMRepo: 'mlc-ai/Qwen3-0.6B-q4f32_1-MLC' });
      const candidate: WebLLMCandidate = {
        engine: 'web-llm',
        model: 'Qwen3-0.6B-q4f32_1-MLC',
        hub: mlc.origin,
        modelLib: `${mlc.origin}${TINY_MLC.modelLibPath}`,
      };
      const { manifest, bytes } = await downloaded(candidate);
      const storage = new MemoryCacheStorage();
      await writeLegacy(storage, manifest, bytes);
      mlc.offline = true;
      // Twice: the first reuse hashes the library (code) and records its hash, and the second trusts that record.
      for (let load = 0; load < 2; load++) {
        await prepareCandidate(candidate, { id: ID, store: new StoredFiles(storage), ...quick });
      }
      expect(await storedModel(candidate, new StoredFiles(storage))).toMatchObject({ state: 'complete' });
      expect(await hasWebLLMModel(candidate.model, storage)).toBe(true);
    } finally {
      await mlc?.close();
    }
  });
});
