/**
 * An engine worker in a thread of its own (Node worker_threads), for tests of the worker protocol across real threads:
 * the real worker API (src/worker/worker-api.ts) around an engine whose forward passes hold the thread, as
 * onnxruntime's do, so that the thread hears no message while one runs. Started by `startEngineThread()`
 * (test/support/engine-threads.ts) with its options as `workerData`.
 */
import * as Comlink from 'comlink';
import { parentPort, workerData } from 'node:worker_threads';
import { throwIfAborted } from '../../src/engine-interface/index.ts';
import { yieldToEventLoop } from '../../src/engines/transformers/yield-to-event-loop.ts';
import { registerEngineErrorTransfer } from '../../src/worker/protocol.ts';
import { createWorkerApi, type HeartbeatOptions } from '../../src/worker/worker-api.ts';
import { FakeEngine } from './fake-engine.ts';

export interface EngineThreadOptions {
  /** How long the prefill (the first forward pass) holds the thread. */
  prefillMs: number;
  /** How long each later forward pass holds it. */
  tokenMs: number;
  /** Tokens to generate after the prefill. */
  tokens: number;
  heartbeat?: HeartbeatOptions;
}

const { port, prefillMs, tokenMs, tokens, heartbeat } = workerData as EngineThreadOptions & { port: MessagePort };

/** Holds this thread for `ms` without running its event loop, as a synchronous forward pass does (without the CPU). */
const holdThread = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

registerEngineErrorTransfer();
const engine = new FakeEngine();
engine.onChat = async (_request, { signal, onEvent }) => {
  const text: string[] = [];
  for (let i = 0; i < tokens; i++) {
    // Each forward pass starts on a fresh task, as the engines' do (load-pretrained.ts), then holds the thread.
    await yieldToEventLoop();
    throwIfAborted(signal);
    holdThread(i === 0 ? prefillMs : tokenMs);
    text.push(` ${i}`);
    onEvent?.({ type: 'delta', choice: 0, text: ` ${i}` });
  }
  onEvent?.({ type: 'finish', choice: 0, reason: 'length' });
  return {
    choices: [{ text: text.join(''), finishReason: 'length' }],
    usage: { promptTokens: 1, completionTokens: tokens },
  };
};

Comlink.expose(
  createWorkerApi(() => engine, { report: (report) => parentPort!.postMessage(report), fatal: () => {} }, heartbeat),
  port,
);
parentPort!.postMessage('ready');
