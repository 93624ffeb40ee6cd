import * as Comlink from 'comlink';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aborted, FakeEngine } from '../test/support/fake-engine.ts';
import { EngineError, type ChatEvent } from '../src/engine-interface/index.ts';
import { registerEngineErrorTransfer, type RunReport } from '../src/worker/protocol.ts';
import type { LocalTarget } from '../src/engines/local-engine.ts';
import { createModelRouter } from '../src/models/model-router.ts';
import { CPU_ONLY, type CandidateFailure, type LocalCandidate } from '../src/models/model-profile.ts';
import { EngineWorkerClient } from './engine-worker-client.ts';
import { createWorkerApi, type HeartbeatOptions } from '../src/worker/worker-api.ts';
import { chatRequest } from '../test/support/chat-request.ts';

/**
 * The engine worker protocol end to end in Node: a EngineWorkerClient (the service worker's side) talking over real
 * MessageChannels and Comlink to the worker API around an engine (a fake one here; the browser tests run the real one).
 */
registerEngineErrorTransfer();

const request = chatRequest();
const cpu: LocalCandidate = { engine: 'transformers', model: '/tiny', dtype: 'fp32', device: 'cpu' };
const chatTarget: LocalTarget = { id: 'chat-model', task: 'chat', candidate: cpu };
const embedTarget: LocalTarget = { id: 'embed-model', task: 'embeddings', candidate: cpu };
const speechTarget: LocalTarget = { id: 'speech-model', task: 'transcription', candidate: cpu };

/**
 * The service worker's router over `client`: the walk that decides whether a call whose engine went away is sent
 * again (the client only answers it `engine_lost`).
 */
const routed = (client: EngineWorkerClient) =>
  createModelRouter({
    local: client,
    routing: () => ({
      profile: {
        'chat-model': { task: 'chat', created: 1, candidates: [cpu] },
        'speech-model': { task: 'transcription', created: 1, candidates: [cpu] },
      },
      device: CPU_ONLY,
      policy: 'local-first',
    }),
  });

const ports: MessagePort[] = [];
afterEach(() => {
  ports.splice(0).forEach((p) => p.close());
  vi.restoreAllMocks();
});

/** A worker around `engine`, reachable through the port this returns. */
function worker(
  engine: FakeEngine,
  reports: RunReport[] = [],
  fatal: string[] = [],
  heartbeat: HeartbeatOptions = {},
  failed: CandidateFailure[] = [],
): MessagePort {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  const hooks = {
    report: (r: RunReport) => reports.push(r),
    fatal: (reason: string, failure?: CandidateFailure) => {
      fatal.push(reason);
      if (failure) failed.push(failure);
    },
  };
  Comlink.expose(
    createWorkerApi(() => engine, hooks, heartbeat),
    port1,
  );
  return port2;
}

/**
 * Watches the intervals started from now on (a call's `alive`, a worker's watch of its caller): `running()` counts
 * those not cleared yet, which is what a call that never ends would leave behind, one per call, forever.
 */
function watchIntervals() {
  const started = vi.spyOn(globalThis, 'setInterval');
  const cleared = vi.spyOn(globalThis, 'clearInterval');
  return {
    running: () => {
      const gone = new Set(cleared.mock.calls.map(([timer]) => timer));
      return started.mock.results.filter((result) => !gone.has(result.value)).length;
    },
  };
}

function remote(portWaitMs = 2000) {
  let requests = 0;
  const engine = new EngineWorkerClient({ requestPort: () => (requests += 1), portWaitMs });
  return { engine, requests: () => requests };
}

describe('EngineWorkerClient over Comlink', () => {
  it("names the candidate that serves each call, before its events, and knows the host's routing", async () => {
    const fake = new FakeEngine();
    fake.onChat = async (_request, options) => {
      options.onBackend?.('transformers:/chat@fp32/cpu');
      options.onEvent?.({ type: 'delta', choice: 0, text: 'hi' });
      return { choices: [{ text: 'hi', finishReason: 'stop' }], usage: { promptTokens: 1, completionTokens: 1 } };
    };
    const { engine } = remote();
    const routing = { profile: {}, policy: 'remote-first', device: { webgpu: false, shaderF16: false } } as const;
    engine.connect(worker(fake), 'host#1', routing);
    expect(await engine.routing()).toEqual(routing);
    const heard: string[] = [];
    await engine.run('chat', chatTarget, request, {
      onBackend: (b) => heard.push(`backend ${b}`),
      onEvent: (e) => heard.push(e.type),
    });
    expect(heard).toEqual(['backend transformers:/chat@fp32/cpu', 'delta']);
    // The routing outlives its host: servers need no engine worker.
    engine.disconnect('host');
    expect(await engine.routing()).toEqual(routing);
  });

  it('relays chat events in order before the result, builds the result from them, and relays embeddings', async () => {
    const fake = new FakeEngine();
    const reports: RunReport[] = [];
    const { engine } = remote();
    engine.connect(worker(fake, reports), 'host#1');

    const events: ChatEvent[] = [];
    const result = await engine.run('chat', chatTarget, { ...request, n: 2 }, { onEvent: (e) => events.push(e) });
    // Every event has arrived by the time the result does, though they travel on different ports.
    expect(events).toHaveLength(6);
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(2);
    expect(result.usage).toEqual({ promptTokens: 3, completionTokens: 4 });
    expect(result.choices).toEqual([
      { text: 'hi there', finishReason: 'stop' },
      { text: 'hi there', finishReason: 'stop' },
    ]);
    const embedded = await engine.run('embeddings', embedTarget, { input: ['a', 'bb'] });
    expect(embedded.embeddings.map((v) => Array.from(v))).toEqual([
      [0, 1, Math.fround(0.1)],
      [1, 2, Math.fround(0.1)],
    ]);
    expect(reports.map((r) => [r.task, r.outcome, r.events])).toEqual([
      ['chat', 'completed', 6],
      ['embeddings', 'completed', 0],
    ]);
  });

  it("relays a transcription: its audio crosses from a copy (the caller's bytes stay), its events, its result", async () => {
    const fake = new FakeEngine();
    const reports: RunReport[] = [];
    const { engine } = remote();
    engine.connect(worker(fake, reports), 'host#1');
    const audio = { bytes: new Uint8Array([1, 2, 3, 4]), name: 'a.wav', type: 'audio/wav' };
    const heard: string[] = [];
    const result = await engine.run(
      'transcription',
      speechTarget,
      { audio, task: 'transcribe', temperature: 0, words: false },
      { onEvent: (e) => heard.push(e.type === 'delta' ? e.text : e.type) },
    );
    expect(Array.from(audio.bytes)).toEqual([1, 2, 3, 4]);
    expect(Array.from(fake.transcriptions[0]!.request.audio.bytes)).toEqual([1, 2, 3, 4]);
    expect(heard).toEqual(['Hello there.', ' General Kenobi.']);
    expect(result).toMatchObject({ text: 'Hello there. General Kenobi.', duration: 3.5 });
    expect(result.segments).toHaveLength(2);
    expect(reports.map((r) => [r.task, r.outcome, r.promptTokens, r.completionTokens, r.events])).toEqual([
      ['transcription', 'completed', 0, 4, 2],
    ]);
  });

  it('has the walk send a transcription that lost its engine to the next one while it has written no text, and not after', async () => {
    const speech = { task: 'transcribe', temperature: 0, words: false } as const;
    const audio = () => ({ bytes: new Uint8Array([1, 2]), name: '', type: '' });
    const stuck = (text: boolean) => {
      const fake = new FakeEngine();
      fake.onTranscribe = async (_request, { onEvent }) => {
        onEvent?.({ type: 'progress', seconds: 1, duration: 3.5 });
        if (text) onEvent?.({ type: 'delta', text: 'Hello' });
        return new Promise(() => {});
      };
      return fake;
    };
    const { engine } = remote();
    const router = routed(engine);
    engine.connect(worker(stuck(false)), 'host#1');
    const seen: string[] = [];
    const progressed = router.run(
      'transcription',
      'speech-model',
      { ...speech, audio: audio() },
      {
        onEvent: (e) => seen.push(e.type),
      },
    );
    await expect.poll(() => seen.length).toBe(1);
    engine.connect(worker(new FakeEngine()), 'host#2');
    expect((await progressed).text).toBe('Hello there. General Kenobi.');

    engine.connect(worker(stuck(true)), 'host#3');
    seen.length = 0;
    const written = router.run(
      'transcription',
      'speech-model',
      { ...speech, audio: audio() },
      {
        onEvent: (e) => seen.push(e.type),
      },
    );
    await expect.poll(() => seen.length).toBe(2);
    engine.connect(worker(new FakeEngine()), 'host#4');
    await expect(written).rejects.toMatchObject({ kind: 'engine_lost' });
  });

  it("carries a request's cache scope to the worker's engine (prefix reuse is per key there)", async () => {
    const fake = new FakeEngine();
    const scopes: (string | undefined)[] = [];
    const answer = fake.onChat;
    fake.onChat = (chat, options) => {
      scopes.push(chat.cacheScope);
      return answer(chat, options);
    };
    const { engine } = remote();
    engine.connect(worker(fake), 'host#1');
    await engine.run('chat', chatTarget, { ...request, cacheScope: 'key_a' });
    await engine.run('chat', chatTarget, request);
    expect(scopes).toEqual(['key_a', undefined]);
  });

  it('carries EngineErrors across with their kind and param, and asks for a new worker after a poisoning one', async () => {
    const fake = new FakeEngine();
    const fatal: string[] = [];
    const { engine } = remote();
    engine.connect(worker(fake, [], fatal), 'host#1');
    fake.onChat = async () => {
      throw new EngineError('context_length_exceeded', 'too long', { param: 'messages' });
    };
    const refused = await engine.run('chat', chatTarget, request).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EngineError);
    expect(refused).toMatchObject({ kind: 'context_length_exceeded', param: 'messages', message: 'too long' });

    fake.onChat = async () => {
      throw new TypeError('wasm trap');
    };
    expect(await engine.run('chat', chatTarget, request).catch((e: unknown) => e)).toMatchObject({
      kind: 'internal',
      message: 'wasm trap',
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(fatal).toEqual(['wasm trap']);
  });

  it('aborts the worker-side generation, and answers the caller at once', async () => {
    const fake = new FakeEngine();
    const reports: RunReport[] = [];
    const { engine } = remote();
    engine.connect(worker(fake, reports), 'host#1');
    let stopped!: () => void;
    const workerStopped = new Promise<void>((resolve) => (stopped = resolve));
    fake.onChat = async (_request, { signal, onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'a' });
      await aborted(signal);
      stopped();
      throw new EngineError('aborted', 'cancelled');
    };
    const abort = new AbortController();
    const pending = engine.run('chat', chatTarget, request, { signal: abort.signal, onEvent: () => abort.abort() });
    await expect(pending).rejects.toMatchObject({ kind: 'aborted' });
    await workerStopped;
    await expect.poll(() => reports.map((r) => r.outcome)).toEqual(['aborted']);
  });

  it('waits for a port, asking for one, and says so when none comes', async () => {
    const { engine, requests } = remote(50);
    const error = await engine.run('chat', chatTarget, request).catch((e: unknown) => e);
    expect(requests()).toBe(1);
    expect(error).toMatchObject({ kind: 'unavailable', message: expect.stringMatching(/No page is hosting/) });

    const pending = engine.run('embeddings', embedTarget, { input: ['a', 'bb'] });
    engine.connect(worker(new FakeEngine()), 'host#1');
    expect((await pending).embeddings).toHaveLength(2);
  });

  it('answers a call that lost its engine engine_lost, which the walk sends to the next one before any output', async () => {
    const stuck = new FakeEngine();
    stuck.onChat = () => new Promise(() => {}); // a worker that died mid-call
    const { engine } = remote();
    engine.connect(worker(stuck), 'host-a#1');
    const alone = engine.run('chat', chatTarget, request);
    const walked = routed(engine).chat('chat-model', request);
    await expect.poll(() => stuck.chats.length).toBe(2);
    engine.disconnect('host-a');
    await expect(alone).rejects.toMatchObject({ kind: 'engine_lost' });
    engine.connect(worker(new FakeEngine()), 'host-b#1');
    expect((await walked).choices[0]!.text).toBe('hi there');
  });

  it('after a failed load that broke its worker: answers it, names the candidate once the answer is away, and answers nothing more there', async () => {
    const fake = new FakeEngine();
    fake.onChat = async () => {
      throw new EngineError('load_failed', 'protobuf parsing failed');
    };
    const fatal: string[] = [];
    const failed: CandidateFailure[] = [];
    const { engine } = remote();
    engine.connect(worker(fake, [], fatal, {}, failed), 'host#1');
    await expect(engine.run('chat', chatTarget, request)).rejects.toMatchObject({ kind: 'load_failed' });
    await expect
      .poll(() => fatal)
      .toEqual(['transformers:/tiny@fp32/cpu could not be loaded (protobuf parsing failed)']);
    expect(failed).toEqual([{ candidate: 'transformers:/tiny@fp32/cpu', reason: 'protobuf parsing failed' }]);
    // The broken worker answers nothing more: the call waits for its connection to go, and is walked to the next.
    const next = routed(engine).chat('chat-model', request);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fake.chats).toHaveLength(1);
    engine.connect(worker(new FakeEngine()), 'host#2');
    expect((await next).choices[0]!.text).toBe('hi there');
    expect(fatal).toHaveLength(1);
  });

  it('leaves no timer running, on either side, after a call lost to a worker change', async () => {
    const intervals = watchIntervals();
    const reports: RunReport[] = [];
    const stuck = new FakeEngine();
    stuck.onChat = async (_request, { signal }) => {
      await aborted(signal); // a worker that will never answer, but stops when its caller is found gone
      throw new EngineError('aborted', 'nobody is listening');
    };
    // A short heartbeat on both sides, so that the worker finds its caller gone soon.
    const engine = new EngineWorkerClient({ requestPort: () => {}, aliveMs: 20 });
    engine.connect(worker(stuck, reports, [], { aliveMs: 20, silenceMs: 100 }), 'host-a#1');
    const pending = routed(engine).chat('chat-model', request);
    await expect.poll(() => stuck.chats.length).toBe(1);
    expect(intervals.running()).toBe(2); // the call's `alive`, and the worker's watch of its caller
    engine.disconnect('host-a');
    engine.connect(worker(new FakeEngine()), 'host-b#1');
    expect((await pending).choices[0]!.text).toBe('hi there');
    // The worker stops the call once it no longer hears from it (a caller that kept saying `alive` would keep it).
    await expect.poll(() => reports.map((r) => r.outcome), { timeout: 10_000 }).toEqual(['aborted']);
    // The lost call's `alive`, the worker's watch of it, and those of the resent call: all cleared.
    expect(intervals.running()).toBe(0);
  });

  it('fails a stream that lost its engine after output began, as engine_lost, which the walk does not send again', async () => {
    const stuck = new FakeEngine();
    stuck.onChat = async (_request, { onEvent }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'half' });
      return new Promise(() => {});
    };
    const { engine } = remote();
    engine.connect(worker(stuck), 'host#1');
    const seen: ChatEvent[] = [];
    const pending = routed(engine).chat('chat-model', request, { onEvent: (e) => seen.push(e) });
    await expect.poll(() => seen.length).toBe(1);
    engine.connect(worker(new FakeEngine()), 'host#2');
    await expect(pending).rejects.toMatchObject({ kind: 'engine_lost' });
  });

  it('keeps its port when the same worker is offered twice', async () => {
    const fake = new FakeEngine();
    let release!: () => void;
    fake.onChat = async (req, options) => {
      await new Promise<void>((resolve) => (release = resolve));
      return new FakeEngine().onChat(req, options);
    };
    const { engine } = remote();
    engine.connect(worker(fake), 'host#1');
    const pending = engine.run('chat', chatTarget, request);
    await new Promise((resolve) => setTimeout(resolve, 10));
    engine.connect(worker(new FakeEngine()), 'host#1');
    release();
    expect((await pending).choices[0]!.text).toBe('hi there');
  });
});
