/// <reference lib="webworker" />
/**
 * The baseline of the browser benchmarks: the same engine, on the same device, called directly inside a worker,
 * with no service worker, port, SSE or SDK between the caller and the tokens.
 */
import * as Comlink from 'comlink';
import type { ChatRequest, Engine } from '../../src/engine/index.ts';
import { createBrowserEngine } from '../../src/worker/browser-engine.ts';
import type { EngineWorkerConfig } from '../../src/worker/protocol.ts';

let engine: Engine;
const now = () => performance.timeOrigin + performance.now();

const direct = {
  async start(config: EngineWorkerConfig) {
    ({ engine } = await createBrowserEngine(config));
  },
  /** One chat call: when it started and when each text delta was generated, in epoch milliseconds. */
  async chat(model: string, request: ChatRequest) {
    const tokenTimes: number[] = [];
    const started = now();
    const result = await engine.chat(model, request, {
      onEvent: (event) => event.type === 'delta' && tokenTimes.push(now()),
    });
    return { started, tokenTimes, usage: result.usage };
  },
  /** One embeddings call, in milliseconds. */
  async embed(model: string, input: string[]) {
    const started = performance.now();
    await engine.embed(model, { input });
    return performance.now() - started;
  },
};

export type DirectWorker = typeof direct;
Comlink.expose(direct);
