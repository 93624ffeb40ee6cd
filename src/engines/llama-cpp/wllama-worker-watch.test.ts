import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Wllama } from '@wllama/wllama/esm/index.js';
import { watchWorker } from './wllama-worker-watch.ts';

/**
 * wllama 2 itself (its Wllama and its proxy to its worker), over a Worker that never answers and fails when told to:
 * Node has no Web Worker, and a real one cannot be made to crash on cue.
 */
class SilentWorker {
  static started: SilentWorker[] = [];
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  readonly posted: { verb: string }[] = [];
  terminated = false;
  constructor() {
    SilentWorker.started.push(this);
  }
  postMessage(message: { verb: string }) {
    this.posted.push(message);
  }
  terminate() {
    this.terminated = true;
  }
}

/** A wllama loading a model, watched, with its worker once it has been asked to start. */
async function loading() {
  const watch = watchWorker();
  const wllama = new Wllama({ 'single-thread/wllama.wasm': 'http://lantern.test/wllama.wasm' }, {
    suppressNativeLog: true,
    logger: watch.logger,
  } as never);
  watch.watch(wllama);
  const load = wllama.loadModel([new Blob(['GGUF'])], { n_threads: 1 });
  await vi.waitFor(() => expect(SilentWorker.started[0]?.posted[0]?.verb).toBe('module.init'));
  return { watch, wllama, load, worker: SilentWorker.started[0]! };
}

describe("wllama's worker, watched", () => {
  beforeEach(() => {
    SilentWorker.started = [];
    vi.stubGlobal('Worker', SilentWorker);
    vi.stubGlobal('document', { baseURI: 'http://lantern.test/' });
    vi.stubGlobal('navigator', { hardwareConcurrency: 2, userAgent: 'Node' });
  });
  afterEach(() => vi.unstubAllGlobals());

  it('fails the calls waiting on a worker that failed, stops it, and fails later calls at once as engine_lost', async () => {
    const { watch, wllama, load, worker } = await loading();
    // What a browser fires at the worker's owner on an uncaught error in it (Firefox: a plain Event, no message).
    worker.onerror!(new Event('error'));
    await expect(load).rejects.toThrow(/its worker fired error/);
    expect(worker.terminated).toBe(true);
    expect(watch.lost()).toBe('its worker fired error');
    await expect(watch.guard(() => wllama.tokenize('hello'))()).rejects.toMatchObject({ kind: 'engine_lost' });
    await expect(wllama.exit()).resolves.toBeUndefined(); // nothing left to wait for
  });

  it("loses the worker on llama.cpp's own abort too", async () => {
    const { watch, load, worker } = await loading();
    worker.onmessage!({ data: { verb: 'signal.abort', args: ['GGML_ASSERT(n_tokens <= n_batch) failed'] } });
    await expect(load).rejects.toThrow(/GGML_ASSERT/);
    expect(worker.terminated).toBe(true);
    expect(watch.lost()).toBe('llama.cpp aborted: GGML_ASSERT(n_tokens <= n_batch) failed');
  });

  it("keeps wllama's own error logs as logs", () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    watchWorker().logger.error('Cannot find waiting task with callbackId = 3');
    expect(error).toHaveBeenCalledWith('Cannot find waiting task with callbackId = 3');
    error.mockRestore();
  });
});
