import { afterEach, describe, expect, it } from 'vitest';
import { chatRequest } from '../test/support/chat-request.ts';
import { startEngineThread } from '../test/support/engine-threads.ts';
import type { ChatEvent } from '../src/engine-interface/index.ts';
import { CALLER_SILENCE_MS, registerEngineErrorTransfer } from '../src/worker/protocol.ts';
import type { LocalTarget } from '../src/engines/local-engine.ts';
import { EngineWorkerClient } from './engine-worker-client.ts';

/**
 * The caller's heartbeat across real threads: a EngineWorkerClient (the service worker's side) here, the real worker API in
 * a worker thread (test/support/engine-thread.ts), over real MessageChannels and Comlink. The engine's forward passes
 * hold the worker's thread, as onnxruntime's do, so that it hears nothing while one runs.
 */
registerEngineErrorTransfer();

const request = chatRequest();
const chatTarget: LocalTarget = {
  id: 'chat-model',
  task: 'chat',
  candidate: { engine: 'transformers', model: '/tiny', dtype: 'fp32', device: 'cpu' },
};
const stops: (() => Promise<number>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

describe("the caller's heartbeat", () => {
  it('lets a prefill that holds the worker for over twice the silence threshold finish, on the real thresholds', async () => {
    const thread = await startEngineThread({ prefillMs: 2.25 * CALLER_SILENCE_MS, tokenMs: 0, tokens: 4 });
    stops.push(thread.stop);
    const engine = new EngineWorkerClient({ requestPort: () => {} });
    engine.connect(thread.port, 'thread#1');
    const events: ChatEvent[] = [];
    const result = await engine.run('chat', chatTarget, request, { onEvent: (e) => events.push(e) });
    expect(result.choices).toEqual([{ text: ' 0 1 2 3', finishReason: 'length' }]);
    expect(events.map((e) => e.type)).toEqual(['delta', 'delta', 'delta', 'delta', 'finish']);
    await expect.poll(() => thread.reports.map((r) => r.outcome)).toEqual(['completed']);
  }, 60_000);

  it('still aborts a generation whose caller went silent, within the silence threshold of listening', async () => {
    // Short thresholds: a caller that is really gone is found out as surely, only sooner.
    const heartbeat = { aliveMs: 100, silenceMs: 500 };
    const thread = await startEngineThread({ prefillMs: 0, tokenMs: 20, tokens: 100_000, heartbeat });
    stops.push(thread.stop);
    const engine = new EngineWorkerClient({ requestPort: () => {}, aliveMs: heartbeat.aliveMs, portWaitMs: 10 });
    engine.connect(thread.port, 'thread#1');
    const seen: ChatEvent[] = [];
    const pending = engine.run('chat', chatTarget, request, { onEvent: (e) => seen.push(e) }).catch((e: unknown) => e);
    await expect.poll(() => seen.length).toBeGreaterThan(0);
    // The caller goes away without a word to the worker, as a stopped service worker does.
    engine.disconnect('thread');
    expect(await pending).toMatchObject({ kind: expect.stringMatching(/^(engine_lost|aborted)$/) });
    await expect.poll(() => thread.reports.map((r) => r.outcome), { timeout: 20_000 }).toEqual(['aborted']);
    expect(thread.reports[0]!.events).toBeLessThan(100_000);
  });
});
