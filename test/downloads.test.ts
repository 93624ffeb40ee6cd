import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { DownloadError, downloadFile, StoredFiles, type DownloadTarget, type FileRef } from '../src/downloads/index.ts';
import { prepareCandidate } from '../src/engines/model-downloads.ts';
import { removeStoredModel, storedModel } from '../src/engines/model-files.ts';
import type { LoadProgress } from '../src/engine-interface/index.ts';
import type { TransformersCandidate, WebLLMCandidate } from '../src/models/model-profile.ts';
import { hasWebLLMModel } from '../src/engines/web-llm/web-llm-cache.ts';
import { BUNDLED_REPOS, startHubServer, TINY_MLC, type HubServer } from './support/hub-server.ts';
import { MemoryCacheStorage } from './support/memory-caches.ts';

/**
 * The downloader against a real HTTP server that serves the fixture models as the hub does and breaks the way networks
 * break (test/support/hub-server.ts): cut connections, stalls, server errors, short and corrupt bodies, servers
 * without ranges, the network gone. The store is the Cache API's shape in memory (Node has none); the browser tests
 * (test/e2e/downloads.spec.ts) run the same code on the real one.
 */
const CHAT = BUNDLED_REPOS['lantern/tiny-chat']!;
/** tiny-chat's draft model (speculation), a test fixture of its own. */
const DRAFT = fileURLToPath(new URL('./fixtures/tiny-chat-draft', import.meta.url));
const WEIGHTS = readFileSync(join(CHAT, 'onnx/model.onnx'));
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

let hub: HubServer;
let store: StoredFiles;
const source = (path: string) => `${hub.origin}/lantern/tiny-chat/resolve/main/${path}`;
/** The weights, under the URL transformers.js knows them by, fetched from the test hub. */
const weights = (extra: Partial<DownloadTarget> = {}): DownloadTarget => ({
  url: 'https://huggingface.co/lantern/tiny-chat/resolve/main/onnx/model.onnx',
  source: source('onnx/model.onnx'),
  size: WEIGHTS.length,
  sha256: sha256(WEIGHTS),
  ...extra,
});
const quick = { stallMs: 300, retryDelayMs: 10 };
/** The stored file's SHA-256 (comparing 3.5 MB byte by byte with toEqual takes seconds). */
const stored = async (file: FileRef) => sha256(new Uint8Array(await (await store.response(file))!.arrayBuffer()));
const WHOLE = sha256(WEIGHTS);

beforeAll(async () => {
  hub = await startHubServer({ repos: { ...BUNDLED_REPOS, 'lantern/tiny-chat-draft': DRAFT } });
});
beforeEach(() => {
  store = new StoredFiles(new MemoryCacheStorage());
});
afterEach(() => {
  hub.reset();
  hub.offline = false;
  vi.unstubAllGlobals();
});
afterAll(() => hub?.close());

describe('downloadFile', () => {
  it('stores a file whole, checked against its size and SHA-256, and reads it back as one response', async () => {
    const record = await downloadFile(store, weights(), quick);
    expect(record).toMatchObject({ complete: true, received: WEIGHTS.length });
    expect(await stored(weights())).toBe(WHOLE);
    expect(hub.bytesServed('onnx/model.onnx')).toBe(WEIGHTS.length);
  });

  it('resumes a transfer cut at half from the bytes it stored: about 1.0× the file crosses the network', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'cut', at: 0.5 });
    const seen: number[] = [];
    await downloadFile(store, weights(), { ...quick, onBytes: (bytes) => seen.push(bytes) });
    expect(await stored(weights())).toBe(WHOLE);
    const requests = hub.log.filter((r) => r.path.endsWith('onnx/model.onnx'));
    expect(requests).toHaveLength(2);
    expect(requests[1]!.range).toMatch(/^bytes=\d+-$/);
    expect(requests[1]!.status).toBe(206);
    // The cut request's bytes that arrived were all kept: only what followed them was asked for again.
    expect(Number(/=(\d+)-/.exec(requests[1]!.range!)![1])).toBe(requests[0]!.bytesSent);
    expect(hub.bytesServed('onnx/model.onnx') / WEIGHTS.length).toBeLessThanOrEqual(1.1);
    expect(seen.at(-1)).toBe(WEIGHTS.length);
  });

  it('resumes in a later session (a closed tab): a new download continues from the stored parts', async () => {
    hub.offline = false;
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'cut', at: 0.4 });
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'status', status: 404 }); // the tab closes: nothing more this time
    await expect(downloadFile(store, weights(), quick)).rejects.toThrow(DownloadError);
    const partial = (await store.record(weights()))!;
    expect(partial.complete).toBe(false);
    expect(partial.received).toBeGreaterThan(0);
    await downloadFile(store, weights(), quick);
    expect(await stored(weights())).toBe(WHOLE);
    expect(hub.bytesServed('onnx/model.onnx') / WEIGHTS.length).toBeLessThanOrEqual(1.1);
  });

  it('drops a stalled transfer and resumes it', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'stall', at: 0.3 });
    await downloadFile(store, weights(), quick);
    expect(await stored(weights())).toBe(WHOLE);
    expect(hub.log.filter((r) => r.path.endsWith('onnx/model.onnx'))[1]!.range).toMatch(/^bytes=\d+-$/);
  });

  it('retries a server error, and asks for the rest of a body that ended short', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'status', status: 503 });
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'wrong-length', at: 1000 });
    await downloadFile(store, weights(), quick);
    expect(await stored(weights())).toBe(WHOLE);
  });

  it('restarts once, and says so, when the server ignores ranges', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'cut', at: 0.5 });
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'no-range' });
    const notices: string[] = [];
    await downloadFile(store, weights(), { ...quick, onNotice: (text) => notices.push(text) });
    expect(await stored(weights())).toBe(WHOLE);
    expect(notices).toEqual([expect.stringMatching(/no range support.*restarting it from zero/)]);
  });

  it('fetches a corrupt file again once, and reports it when it is corrupt again', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'corrupt' });
    await downloadFile(store, weights(), quick);
    expect(await stored(weights())).toBe(WHOLE);

    store = new StoredFiles(new MemoryCacheStorage());
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'corrupt', times: 2 });
    await expect(downloadFile(store, weights(), quick)).rejects.toMatchObject({
      reason: 'verification',
      message: expect.stringMatching(/failed its check twice \(its SHA-256 is not the one its list of files gives\)/),
    });
    expect(await store.response(weights())).toBeUndefined();
  });

  it('says how much is stored when the network is gone, and resumes from there when it is back', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'cut', at: 0.5 });
    // The first request's answer starts, the network goes, and its body is cut: every retry then meets no network.
    const goOffline: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      hub.offline = true;
      return response;
    };
    const cut = downloadFile(store, weights(), { ...quick, attempts: 2, fetch: goOffline });
    await expect(cut).rejects.toMatchObject({
      reason: 'offline',
      message: expect.stringMatching(
        new RegExp(`of ${WEIGHTS.length} bytes are stored; the download resumes from there`),
      ),
    });
    hub.offline = false;
    await downloadFile(store, weights(), quick);
    expect(await stored(weights())).toBe(WHOLE);
  });

  it('records an optional file the server does not have as absent', async () => {
    const record = await downloadFile(
      store,
      {
        url: 'https://huggingface.co/lantern/tiny-chat/resolve/main/nope.json',
        source: source('nope.json'),
        optional: true,
      },
      quick,
    );
    expect(record).toMatchObject({ absent: true, complete: true });
  });
});

describe('prepareCandidate', () => {
  const candidate: TransformersCandidate = {
    engine: 'transformers',
    model: 'lantern/tiny-chat',
    device: 'cpu',
    dtype: 'fp32',
  };
  const mirrored = () => ({ ...candidate, hub: hub.origin });
  const withQuota = (quota: number, usage = 0) =>
    vi.stubGlobal('navigator', { storage: { estimate: async () => ({ quota, usage }) } });

  it("downloads every file transformers.js reads, from a mirror, stored under the hub's URLs", async () => {
    const events: LoadProgress[] = [];
    await prepareCandidate(mirrored(), { id: 'crimson-falcon-4', store, onProgress: (e) => events.push(e), ...quick });
    const files = hub.log.filter((r) => r.path.includes('/resolve/')).map((r) => r.path.split('/resolve/main/')[1]);
    expect(new Set(files)).toEqual(
      new Set(['config.json', 'onnx/model.onnx', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']),
    );
    expect(await storedModel(mirrored(), store)).toMatchObject({ state: 'complete', missing: [] });
    // Read by the engine under the hub's URL: the copy of the mirror that the preparation checked.
    const asked = store.engineFile('https://huggingface.co/lantern/tiny-chat/resolve/main/onnx/model.onnx');
    expect(asked.source).toBe(source('onnx/model.onnx'));
    expect(await stored(asked)).toBe(WHOLE);
    expect(events.at(-1)).toMatchObject({ status: 'progress_total', progress: 100 });
    expect(events).toContainEqual({ status: 'done', model: 'crimson-falcon-4', file: 'onnx/model.onnx' });

    // Stored: a second preparation, offline, needs nothing.
    hub.reset();
    hub.offline = true;
    await prepareCandidate(mirrored(), { id: 'crimson-falcon-4', store, ...quick });
    expect(hub.log).toEqual([]);
  });

  it('refuses a download the quota cannot hold before fetching the weights, saying what is needed and free', async () => {
    withQuota(2_000_000, 500_000);
    const failure = prepareCandidate(mirrored(), { id: 'crimson-falcon-4', store, ...quick });
    await expect(failure).rejects.toMatchObject({
      kind: 'insufficient_storage',
      message: expect.stringMatching(/needs about 4 MB and this site has 2 MB free/),
      cause: { needed: expect.any(Number), free: 1_500_000, quota: 2_000_000 },
    });
    expect(hub.bytesServed('onnx/model.onnx')).toBe(0);
  });

  it('reports a partial model with what is missing, and removes what it stored', async () => {
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'cut', at: 0.5 });
    hub.faults.push({ path: 'onnx/model.onnx', kind: 'status', status: 404, times: Infinity });
    await expect(prepareCandidate(mirrored(), { id: 'x', store, ...quick })).rejects.toMatchObject({
      kind: 'download_failed',
      message: expect.stringMatching(
        /onnx\/model.onnx could not be downloaded.*4 of 5 files are stored.*missing: onnx\/model.onnx/,
      ),
    });
    const partial = await storedModel(mirrored(), store);
    expect(partial).toMatchObject({ state: 'partial', missing: ['onnx/model.onnx'] });
    expect(partial.bytes).toBeGreaterThan(WEIGHTS.length / 2);
    expect(await removeStoredModel(mirrored(), store)).toBe(partial.bytes);
    expect(await storedModel(mirrored(), store)).toMatchObject({ state: 'none', bytes: 0 });
  });

  it('downloads a draft model beside the model, each repository under its own URLs', async () => {
    const drafted: TransformersCandidate = { ...mirrored(), draft: 'lantern/tiny-chat-draft' };
    await prepareCandidate(drafted, { id: 'crimson-falcon-4', store, ...quick });
    const weightsOf = hub.log
      .filter((r) => r.path.endsWith('/onnx/model.onnx'))
      .map((r) => r.path.split('/resolve/')[0]);
    expect(new Set(weightsOf)).toEqual(new Set(['/lantern/tiny-chat', '/lantern/tiny-chat-draft']));
    expect(await storedModel(drafted, store)).toMatchObject({ state: 'complete', missing: [] });
    const draftWeights = store.engineFile(
      'https://huggingface.co/lantern/tiny-chat-draft/resolve/main/onnx/model.onnx',
    );
    expect(await stored(draftWeights)).toBe(sha256(readFileSync(join(DRAFT, 'onnx/model.onnx'))));
  });

  it('loads a model from an absolute URL (a CDN without a hub listing), sizes from the server', async () => {
    const cdn: TransformersCandidate = { ...candidate, model: `${hub.origin}/lantern/tiny-chat/resolve/main` };
    await prepareCandidate(cdn, { id: 'crimson-falcon-4', store, ...quick });
    expect(await stored({ url: source('onnx/model.onnx') })).toBe(WHOLE);
    expect(await storedModel(cdn, store)).toMatchObject({ state: 'complete', totalBytes: expect.any(Number) });
  });
});

describe('prepareCandidate for web-llm', () => {
  /** The synthetic web-llm repo of the test hub, served as a model of web-llm's prebuilt list. */
  let mlc: HubServer;
  beforeAll(async () => {
    mlc = await startHubServer({ repos: {}, webLLM: true, webLLMRepo: 'mlc-ai/Qwen3-0.6B-q4f32_1-MLC' });
  });
  afterAll(() => mlc?.close());

  it("places every file in web-llm's own caches, under the URLs web-llm asks for, as its cache check wants them", async () => {
    const storage = new MemoryCacheStorage();
    const candidate: WebLLMCandidate = {
      engine: 'web-llm',
      model: 'Qwen3-0.6B-q4f32_1-MLC',
      hub: mlc.origin,
      modelLib: `${mlc.origin}${TINY_MLC.modelLibPath}`,
    };
    expect(await hasWebLLMModel(candidate.model, storage)).toBe(false);
    await prepareCandidate(candidate, { id: 'crimson-falcon-4', store: new StoredFiles(storage), ...quick });
    expect(await hasWebLLMModel(candidate.model, storage)).toBe(true);
    const base = 'https://huggingface.co/mlc-ai/Qwen3-0.6B-q4f32_1-MLC/resolve/main/';
    expect(await (await storage.open('webllm/config')).match(`${base}mlc-chat-config.json`)).toBeDefined();
    expect(await (await storage.open('webllm/model')).match(`${base}tokenizer.json`)).toBeDefined();
    const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
    const library = prebuiltAppConfig.model_list.find((r) => r.model_id === candidate.model)!.model_lib;
    expect(await (await storage.open('webllm/wasm')).match(library)).toBeDefined();
    // Placed whole: nothing of them stays in Lantern's own cache but their records.
    const state = await storedModel(candidate, new StoredFiles(storage));
    expect(state).toMatchObject({ state: 'complete', missing: [] });
    expect(state.bytes).toBeGreaterThan(600_000);
  });
});
