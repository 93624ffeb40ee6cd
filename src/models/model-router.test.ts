import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/support/chat-request.ts';
import { FakeEngine } from '../../test/support/fake-engine.ts';
import { EngineError } from '../engine-interface/index.ts';
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

  it('a local candidate that loads and fails before any output hands over to the next local one, not the server', async () => {
    const second: LocalCandidate = { engine: 'transformers', model: '/second', dtype: 'fp32', device: 'cpu' };
    const { chat, local, backends } = setUp('local-first', () => [cpu, second, dead()]);
    const targets: string[] = [];
    const answer = local.onChat;
    const runOf = local.run.bind(local);
    local.run = (task, target, request, options = {}) => {
      const model = typeof target === 'string' ? '' : target.candidate.model;
      targets.push(model);
      // As the local engine does: the candidate loads and says so, then its run breaks.
      options.onBackend?.(`transformers:${model}@fp32/cpu`);
      local.onChat = model === '/chat' ? () => Promise.reject(new EngineError('internal', 'run broke')) : answer;
      return runOf(task, target, request, options);
    };
    await expect(chat()).resolves.toMatchObject({ choices: [{ text: 'hi there' }] });
    expect(targets).toEqual(['/chat', '/second']);
    expect(backends).toEqual(['transformers:chat@fp32/cpu', 'transformers:second@fp32/cpu']);
  });

  it('walks every local candidate that fails to load, and names each failure, the ones the routing skips too', async () => {
    const second: LocalCandidate = { engine: 'transformers', model: '/second', dtype: 'fp32', device: 'cpu' };
    const third: LocalCandidate = { engine: 'transformers', model: '/third', dtype: 'fp32', device: 'cpu' };
    const local = new FakeEngine();
    const tried: string[] = [];
    const runOf = local.run.bind(local);
    local.run = (task, target, request, options = {}) => {
      const model = typeof target === 'string' ? '' : target.candidate.model;
      tried.push(model);
      if (model === '/third') return runOf(task, target, request, options);
      return Promise.reject(new EngineError('load_failed', `${model} is missing config.json`));
    };
    const profile: ModelProfile = { m: { task: 'chat', created: 1, candidates: [cpu, second, third] } };
    const failed = [{ candidate: 'transformers:/chat@fp32/cpu', reason: 'protobuf parsing failed' }];
    const router = createModelRouter({
      local,
      routing: () => ({ profile, device: CPU_ONLY, policy: 'local-first', failed }),
    });
    await expect(router.chat('m', chatRequest())).resolves.toMatchObject({ choices: [{ text: 'hi there' }] });
    // The candidate that broke its engine is skipped; the one that failed to load is tried again next time.
    expect(tried).toEqual(['/second', '/third']);

    local.run = (_task, target) =>
      Promise.reject(
        new EngineError('load_failed', `${(target as { candidate: LocalCandidate }).candidate.model} is missing`),
      );
    const error = (await router.chat('m', chatRequest()).catch((e: unknown) => e)) as EngineError;
    expect(error).toMatchObject({ kind: 'load_failed' });
    expect(error.message).toBe(
      'Model `m` could not be loaded on this device. Tried transformers:chat@fp32/cpu: protobuf parsing failed; ' +
        'transformers:second@fp32/cpu: second is missing; transformers:third@fp32/cpu: third is missing',
    );
  });

  it('sends a call whose engine went away before any output to the same candidate again, and not after output', async () => {
    const { chat, local, backends } = setUp('local-first');
    let calls = 0;
    const answer = local.onChat;
    local.onChat = async (request, options) => {
      calls += 1;
      if (calls < 3) throw new EngineError('engine_lost', 'The engine went away.');
      return answer(request, options);
    };
    await expect(chat()).resolves.toMatchObject({ choices: [{ text: 'hi there' }] });
    expect(calls).toBe(3);
    expect(local.chats.map((c) => c.model)).toEqual(['chat-model', 'chat-model', 'chat-model']);
    expect(backends).toEqual([]); // the fake names no backend

    // Once output began, the loss is the answer: the caller would hear the start twice.
    local.onChat = async (_request, options) => {
      options.onEvent?.({ type: 'delta', choice: 0, text: 'hi' });
      throw new EngineError('engine_lost', 'The engine went away.');
    };
    await expect(chat()).rejects.toMatchObject({ kind: 'engine_lost' });
  });

  it('gives up on an engine that keeps going away, and moves on to the server', async () => {
    const { chat, local } = setUp('local-first');
    local.onChat = async () => {
      throw new EngineError('engine_lost', 'The engine went away.');
    };
    const error = (await chat().catch((e: unknown) => e)) as EngineError;
    expect(local.chats).toHaveLength(9); // the first try and eight more
    expect(error).toMatchObject({ kind: 'upstream_unavailable' });
    expect(error.message).toMatch(/engine went away.*could not be reached/);
  });

  it('gives up on an engine that keeps going away when no other candidate is left: the loss is the answer', async () => {
    const { chat, local } = setUp('local-first', () => [cpu]);
    local.onChat = async () => {
      throw new EngineError('engine_lost', 'The engine went away.');
    };
    await expect(chat()).rejects.toMatchObject({ kind: 'engine_lost' });
    expect(local.chats).toHaveLength(9); // the first try and eight more
  });

  it('with no engine to run local candidates on, goes straight to the servers', async () => {
    const second: LocalCandidate = { engine: 'transformers', model: '/second', dtype: 'fp32', device: 'cpu' };
    const { chat, local } = setUp('local-first', () => [cpu, second, dead()]);
    local.onChat = async () => {
      throw new EngineError('unavailable', 'No page is hosting the engine.');
    };
    const error = (await chat().catch((e: unknown) => e)) as EngineError;
    expect(local.chats).toHaveLength(1); // the second local candidate would find no engine either
    expect(error.message).toMatch(/No page is hosting the engine.*could not be reached/);
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

describe('aliases', () => {
  const aliased = (): ModelProfile => ({
    'chat-model': { task: 'chat', created: 1, candidates: [cpu], aliases: ['gpt-4o-mini', 'gpt-4o'] },
    'embed-model': { task: 'embeddings', created: 2, candidates: [cpu], aliases: ['text-embedding-3-small'] },
  });
  const setUpAliases = (profile = aliased) => {
    const local = new FakeEngine();
    const engine = createModelRouter({
      local,
      routing: () => ({ profile: profile(), device: CPU_ONLY, policy: 'local-first' }),
    });
    return { local, engine };
  };

  it('serves a request that names an alias by its ID, and says so to onServe', async () => {
    const { local, engine } = setUpAliases();
    const answer = local.onChat;
    local.onChat = (request, options) => {
      options.onBackend?.('transformers:/chat@fp32/cpu'); // as a local engine says which candidate took the call
      return answer(request, options);
    };
    const served: string[] = [];
    await engine.chat('gpt-4o-mini', chatRequest(), { onServe: (s) => served.push(s.model.id) });
    await engine.embed('text-embedding-3-small', { input: ['a'] });
    expect(served).toEqual(['chat-model']);
    expect(local.chats.map((c) => c.model)).toEqual(['chat-model']);
    expect(local.embeds.map((e) => e.model)).toEqual(['embed-model']);
  });

  it('lists the IDs, each with its aliases', async () => {
    const cards = await setUpAliases().engine.models();
    expect(cards.map((c) => [c.id, c.aliases])).toEqual([
      ['chat-model', ['gpt-4o-mini', 'gpt-4o']],
      ['embed-model', ['text-embedding-3-small']],
    ]);
  });

  it('refuses a model of the other task by its alias as by its ID: 404, naming what the request named', async () => {
    const { engine } = setUpAliases();
    const refusal = (name: string) =>
      engine.chat(name, chatRequest()).then(
        () => expect.fail(`${name} answered`),
        (error: unknown) => error as EngineError,
      );
    const byId = await refusal('embed-model');
    const byAlias = await refusal('text-embedding-3-small');
    expect(byAlias).toBeInstanceOf(EngineError);
    expect([byAlias.kind, byAlias.param]).toEqual([byId.kind, byId.param]);
    expect(byAlias.kind).toBe('model_not_found');
    expect(byAlias.message).toBe(byId.message.replace('`embed-model`', '`text-embedding-3-small`'));
    const embedded = await engine.embed('gpt-4o', { input: ['a'] }).then(
      () => expect.fail('gpt-4o embedded'),
      (error: unknown) => error as EngineError,
    );
    expect(embedded.message).toBe(
      'The model `gpt-4o` does not exist or you do not have access to it. Models for embeddings: embed-model.',
    );
  });

  it('takes no alias for an ID: a name that is neither is not found', async () => {
    const { engine } = setUpAliases();
    await expect(engine.chat('gpt-4.1', chatRequest())).rejects.toMatchObject({ kind: 'model_not_found' });
    await expect(engine.chat('constructor', chatRequest())).rejects.toMatchObject({ kind: 'model_not_found' });
  });

  it("forwards a request named by an alias to a server under the server's own name for the model", async () => {
    const bodies: { model?: string }[] = [];
    const server = createHttpServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString()));
      request.on('end', () => {
        bodies.push(JSON.parse(text) as { model?: string });
        response.setHeader('content-type', 'application/json');
        response.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: 'llama3.2',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const remote: RemoteCandidate = { engine: 'remote', baseURL: `http://127.0.0.1:${port}/v1`, model: 'llama3.2' };
      const { engine } = setUpAliases(() => ({
        'chat-model': { task: 'chat', created: 1, candidates: [remote], aliases: ['gpt-4o-mini'] },
      }));
      const served: string[] = [];
      const clientBody = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
      const result = await engine.chat('gpt-4o-mini', chatRequest(), {
        clientBody,
        onServe: (s) => served.push(s.model.id),
      });
      expect(result.choices[0]!.text).toBe('hi');
      expect(served).toEqual(['chat-model']);
      await engine.chat('gpt-4o-mini', chatRequest());
      expect(bodies.map((b) => b.model)).toEqual(['llama3.2', 'llama3.2']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("a model's default reasoning effort", () => {
  it('is what a request that does not say whether to think gets; a request that says keeps its own', async () => {
    const local = new FakeEngine();
    const entry = (defaultReasoningEffort?: 'none' | 'minimal' | 'medium') => ({
      task: 'chat' as const,
      created: 1,
      candidates: [cpu],
      ...(defaultReasoningEffort && { defaultReasoningEffort }),
    });
    const engine = createModelRouter({
      local,
      routing: () => ({
        profile: { thinker: entry('medium'), plain: entry(), minimal: entry('minimal') },
        device: CPU_ONLY,
        policy: 'local-first',
      }),
    });
    await engine.chat('thinker', chatRequest());
    await engine.chat('plain', chatRequest());
    await engine.chat('minimal', chatRequest());
    await engine.chat('thinker', { ...chatRequest(), thinking: false });
    await engine.chat('plain', { ...chatRequest(), thinking: true });
    expect(local.chats.map((c) => c.request.thinking)).toEqual([true, false, false, false, true]);
  });
});
