import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/support/chat-request.ts';
import { FakeEngine } from '../../test/support/fake-engine.ts';
import { EngineError } from '../engine/index.ts';
import { createModelRouter } from './model-router.ts';
import {
  CPU_ONLY,
  type LocalCandidate,
  type ModelProfile,
  type RemoteCandidate,
  type RoutingPolicy,
} from './model-profile.ts';

/**
 * The fallback chain across local and remote candidates. The local link is a fake engine (this tests the layer above it); the
 * remote links are real fetches to a loopback port where nothing listens, so the server is as dead as one can be.
 * Answering servers are in test/remote-*.test.ts.
 */
let deadURL: string;
beforeAll(async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  deadURL = `http://127.0.0.1:${port}/v1`;
});

const cpu: LocalCandidate = { engine: 'transformers', model: '/chat', dtype: 'fp32', device: 'cpu' };
const gpuOnly: LocalCandidate = { engine: 'web-llm', model: 'Tiny-q4f16_1-MLC' };
const dead = (): RemoteCandidate => ({ engine: 'remote', baseURL: deadURL, model: 'far', coolDownMs: 30_000 });

function setUp(policy: RoutingPolicy, candidates = () => [cpu, dead()]) {
  const local = new FakeEngine();
  const time = { now: 0 };
  const served: [string, string][] = [];
  const profile = (): ModelProfile => ({
    'chat-model': { task: 'chat', created: 1, candidates: candidates() },
    'remote-only': { task: 'chat', created: 2, candidates: [dead()] },
    'gpu-or-remote': { task: 'chat', created: 3, candidates: [gpuOnly, dead()] },
  });
  const engine = createModelRouter({
    local,
    routing: () => ({ profile: profile(), device: CPU_ONLY, policy }),
    now: () => time.now,
    onServed: (model, backend) => served.push([model, backend]),
  });
  const backends: string[] = [];
  const chat = (model = 'chat-model') =>
    engine.chat(model, chatRequest(), { onServe: (s) => backends.push(s.backend), onEvent: () => {} });
  return { local, engine, time, chat, backends, served };
}

/** What a key holder is told of the server: that there is one, not where (`PublicView`). */
const remoteName = 'remote:1';

describe('the model router', () => {
  it('local-first: the local candidates answer, the server is not called', async () => {
    const { engine, chat, local } = setUp('local-first');
    await expect(chat()).resolves.toMatchObject({ choices: [{ text: 'hi there' }] });
    expect(local.chats).toHaveLength(1);
    const card = (await engine.models()).find((m) => m.id === 'chat-model')!;
    expect(card.candidates).toEqual(['transformers:chat@fp32/cpu', remoteName]);
  });

  it('remote-first: a dead server hands the request to the local link, then is left alone for its cool-down', async () => {
    const { engine, chat, local, time, served } = setUp('remote-first');
    const first = () => engine.models().then((cards) => cards.find((m) => m.id === 'chat-model')!);
    expect((await first()).candidates).toEqual([remoteName, 'transformers:chat@fp32/cpu']);
    expect((await first()).servedBy).toBe(remoteName);

    await expect(chat()).resolves.toMatchObject({ choices: [{ text: 'hi there' }] });
    expect(local.chats).toHaveLength(1);
    expect(served).toEqual([['chat-model', 'local']]);
    expect((await first()).servedBy).toBe('local');

    // Cooling down: the server is skipped at once (the fake local engine answers; no fetch is even tried).
    time.now += 29_000;
    await chat();
    expect(local.chats).toHaveLength(2);
    // After the cool-down it is first in line again, and is tried again.
    time.now += 2_000;
    expect((await engine.models()).find((m) => m.id === 'remote-only')!.servedBy).toBe(remoteName);
  });

  it('local-only: servers are never used, and an ID only a server can serve does not exist here', async () => {
    const { engine, chat } = setUp('local-only');
    expect((await engine.models()).map((m) => m.id)).toEqual(['chat-model']);
    await expect(chat('remote-only')).rejects.toMatchObject({ kind: 'model_not_found' });
  });

  it('a model this device cannot run goes to the server, with no local engine involved', async () => {
    const { chat, local } = setUp('local-first');
    const error = await chat('gpu-or-remote').catch((e: EngineError) => e);
    expect(local.chats).toHaveLength(0);
    expect(error).toMatchObject({ kind: 'upstream_unavailable', retry: true, backend: remoteName });
    expect((error as EngineError).message).toMatch(/could not be reached \(ECONNREFUSED\)/);
    expect((error as EngineError).message).not.toContain(deadURL);
  });

  it('a dead server is 503 with the time left of its cool-down once it has failed', async () => {
    const { chat, time } = setUp('local-first');
    await expect(chat('remote-only')).rejects.toMatchObject({ kind: 'upstream_unavailable' });
    time.now += 12_000;
    const error = (await chat('remote-only').catch((e: unknown) => e)) as EngineError;
    expect(error).toMatchObject({ kind: 'upstream_unavailable', retry: true, retryAfterMs: 18_000 });
    expect(error.message).toMatch(/left alone for 18 s more/);
  });

  it('a local model that fails to load hands over to the server; both failures are named', async () => {
    const { chat, local } = setUp('local-first');
    local.onChat = async () => {
      throw new EngineError('load_failed', 'Model `chat-model` could not be loaded on this device.');
    };
    const error = (await chat().catch((e: unknown) => e)) as EngineError;
    // The server's failure is the one a retry can heal.
    expect(error).toMatchObject({ kind: 'upstream_unavailable', retry: true });
    expect(error.message).toMatch(/could not be loaded.*could not be reached/);
  });

  it("a client's error, or a failure once output began, ends the request where it is", async () => {
    const { chat, local } = setUp('local-first');
    local.onChat = async () => {
      throw new EngineError('context_length_exceeded', 'too long', { param: 'messages' });
    };
    await expect(chat()).rejects.toMatchObject({ kind: 'context_length_exceeded' });
    local.onChat = async (_request, options) => {
      options.onEvent?.({ type: 'delta', choice: 0, text: 'hi' });
      throw new EngineError('internal', 'broke mid-answer');
    };
    await expect(chat()).rejects.toMatchObject({ kind: 'internal', message: 'broke mid-answer' });
  });
});
