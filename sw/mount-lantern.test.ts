import * as Comlink from 'comlink';
import { afterEach, describe, expect, it } from 'vitest';
import { aborted, FakeEngine } from '../test/support/fake-engine.ts';
import { EngineError } from '../src/engine-interface/index.ts';
import { KeyRing } from '../src/keys/index.ts';
import {
  hostLock,
  PORT_REQUEST,
  PROTOCOL_VERSION,
  REQUEST_ID_HEADER,
  registerEngineErrorTransfer,
  type PortOffer,
} from '../src/worker/protocol.ts';
import { createWorkerApi } from '../src/worker/worker-api.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { mountLantern, type MountOptions } from './mount-lantern.ts';
import { memoryDocumentStorage } from '../src/document-store/index.ts';
import { memoryResponseStore } from '../src/response-store/index.ts';

/** The service worker's side, driven with hand-made events (as Hono tests its service worker adapter). */
registerEngineErrorTransfer();

const ORIGIN = 'https://app.example';

/** The host's profile as its port offer carries it: the fake engine's two models, on the CPU. */
const ROUTING: PortOffer['routing'] = {
  profile: {
    'chat-model': { task: 'chat', created: 1, candidates: [{ engine: 'transformers', model: '/chat', device: 'cpu' }] },
    'embed-model': {
      task: 'embeddings',
      created: 2,
      candidates: [{ engine: 'transformers', model: '/embed', device: 'cpu' }],
    },
  },
  policy: 'local-first',
  device: { webgpu: false, shaderF16: false },
};
const ports: MessagePort[] = [];
afterEach(() => ports.splice(0).forEach((p) => p.close()));

/** Web Locks as a test holds them: a lock held by a page (`hold`) is granted to the service worker when released. */
class FakeLocks {
  readonly #held = new Map<string, (() => void)[]>();

  hold(name: string) {
    this.#held.set(name, []);
  }

  release(name: string) {
    const waiting = this.#held.get(name) ?? [];
    this.#held.delete(name);
    waiting.forEach((grant) => grant());
  }

  request(name: string, callback: () => unknown): Promise<unknown> {
    return new Promise((resolve) => {
      const grant = () => resolve(callback());
      const waiting = this.#held.get(name);
      if (waiting) waiting.push(grant);
      else grant();
    });
  }
}

/** Just enough of a ServiceWorkerGlobalScope: listeners, clients, location, locks. */
class FakeScope {
  readonly location = { origin: ORIGIN };
  readonly navigator = { locks: new FakeLocks() };
  readonly listeners = new Map<string, ((event: unknown) => void)[]>();
  readonly windows = new Map<string, { id?: string; postMessage: (data: unknown) => void }>();
  readonly asked: unknown[] = [];
  readonly clients = {
    matchAll: async () => [...this.windows].map(([id, client]) => Object.assign(client, { id })),
    get: async (id: string) => this.windows.get(id),
  };

  addEventListener(type: string, listener: (event: unknown) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  dispatch(type: string, event: unknown) {
    for (const listener of this.listeners.get(type) ?? []) listener(event);
  }

  /** Sends a fetch event; resolves with the answer, or undefined when Lantern left it alone. */
  fetch(request: Request, clientId = 'page-1'): Promise<Response> | undefined {
    let answered: Promise<Response> | undefined;
    this.dispatch('fetch', { request, clientId, respondWith: (r: Promise<Response>) => (answered = r) });
    return answered;
  }

  /**
   * A host tab hands over a port to a worker around `engine`, with its profile, holding its host lock; `source` hears
   * what the service worker answers. Resolves with the port's other end.
   */
  offer(
    engine: FakeEngine,
    host = 'host-a',
    worker = 1,
    routing = ROUTING,
    { protocol = PROTOCOL_VERSION, source = { postMessage: (_data: unknown) => {} } } = {},
  ): MessagePort {
    const { port1, port2 } = new MessageChannel();
    ports.push(port1, port2);
    Comlink.expose(
      createWorkerApi(() => engine, { report: () => {}, fatal: () => {} }),
      port1,
    );
    this.navigator.locks.hold(hostLock(host));
    const offer: PortOffer = { type: 'lantern:port-offer', protocol, host, worker, routing };
    this.dispatch('message', { data: offer, ports: [port2], source });
    return port1;
  }
}

/**
 * An engine whose chat runs until it is aborted; `started` settles when a chat reached it, `stopped` when the abort
 * did.
 */
function engineThatWaitsForAbort() {
  const engine = new FakeEngine();
  let start!: () => void;
  const started = new Promise<void>((resolve) => (start = resolve));
  const stopped = new Promise<void>((resolve) => {
    engine.onChat = async (_request, { signal }) => {
      start();
      await aborted(signal);
      resolve();
      throw new EngineError('aborted', 'cancelled');
    };
  });
  return { engine, started, stopped };
}

async function mounted(options: Partial<MountOptions> = {}) {
  const scope = new FakeScope();
  const keys = new KeyRing();
  const { key } = await keys.issue('sw test');
  mountLantern(scope as unknown as ServiceWorkerGlobalScope, { keys, onServerError: () => {}, ...options });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Request(ORIGIN + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const chat = { model: 'chat-model', messages: [{ role: 'user', content: 'hi' }] };
  return { scope, post, chat, key };
}

describe('mountLantern', () => {
  it('answers /v1 through the port a host tab offered, and leaves other requests alone', async () => {
    const { scope, post, chat } = await mounted();
    scope.offer(new FakeEngine());
    const response = await scope.fetch(post('/v1/chat/completions', chat))!;
    expect(response.status).toBe(200);
    expect(
      ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
    ).toBe('hi there');
    expect(scope.fetch(new Request(`${ORIGIN}/index.html`))).toBeUndefined();
    expect(scope.fetch(new Request('https://elsewhere.example/v1/models'))).toBeUndefined();
  });

  it('asks its windows for a port when it has none, and answers once one is offered', async () => {
    const { scope, post, chat } = await mounted();
    scope.windows.set('page-1', { postMessage: (data) => scope.asked.push(data) });
    const pending = scope.fetch(post('/v1/chat/completions', chat))!;
    await expect.poll(() => scope.asked).toContainEqual({ type: PORT_REQUEST });
    scope.offer(new FakeEngine());
    expect((await pending).status).toBe(200);
  });

  it('aborts a request when its page says it aborted it', async () => {
    const { scope, post, chat } = await mounted();
    const { engine, started, stopped } = engineThatWaitsForAbort();
    scope.offer(engine);
    scope.windows.set('page-1', { postMessage: () => {} });
    const pending = scope.fetch(post('/v1/chat/completions', chat, { [REQUEST_ID_HEADER]: 'req-42' }))!;
    // Generating (a wait of 20 ms was not always enough on a loaded machine: aborted before the engine had the
    // request, the handler rightly never called it, and `stopped` never came).
    await started;
    scope.dispatch('message', { data: { type: 'lantern:abort', id: 'req-42' }, ports: [] });
    await stopped;
    await pending;
  });

  it.each([
    ['after its request, before the engine has it', false],
    ['before its request', true],
  ])('an abort heard %s: the engine is never asked, and the next request is answered', async (_, first) => {
    const { scope, post, chat } = await mounted();
    const engine = new FakeEngine();
    scope.offer(engine);
    const abort = () => scope.dispatch('message', { data: { type: 'lantern:abort', id: 'req-43' }, ports: [] });
    if (first) abort();
    const pending = scope.fetch(post('/v1/chat/completions', chat, { [REQUEST_ID_HEADER]: 'req-43' }))!;
    if (!first) abort();
    await pending;
    expect(engine.chats).toEqual([]);
    const next = await scope.fetch(post('/v1/chat/completions', chat, { [REQUEST_ID_HEADER]: 'req-44' }))!;
    expect(next.status).toBe(200);
    expect(engine.chats).toHaveLength(1);
  });

  it('tells its windows it is busy while a request is in flight, and answers each keep-awake with whether it still is', async () => {
    const { scope, post, chat } = await mounted();
    scope.offer(engineThatWaitsForAbort().engine);
    const heard: unknown[] = [];
    scope.windows.set('page-1', { postMessage: (data) => heard.push(data) });
    const keepAwake = () => {
      const replies: unknown[] = [];
      scope.dispatch('message', {
        data: { type: 'lantern:keep-awake' },
        ports: [],
        source: { postMessage: (data: unknown) => replies.push(data) },
      });
      return replies;
    };
    expect(keepAwake()).toEqual([{ type: 'lantern:busy', busy: false }]);
    const pending = scope.fetch(post('/v1/chat/completions', chat, { [REQUEST_ID_HEADER]: 'req-7' }))!;
    await expect.poll(() => heard).toEqual([{ type: 'lantern:busy', busy: true }]);
    expect(keepAwake()).toEqual([{ type: 'lantern:busy', busy: true }]);
    scope.dispatch('message', { data: { type: 'lantern:abort', id: 'req-7' }, ports: [] });
    await pending;
    expect(keepAwake()).toEqual([{ type: 'lantern:busy', busy: false }]);
  });

  it('aborts a request whose page has gone away', async () => {
    const { scope, post, chat } = await mounted();
    const { engine, stopped } = engineThatWaitsForAbort();
    scope.offer(engine);
    scope.windows.set('page-1', { postMessage: () => {} });
    const pending = scope.fetch(post('/v1/chat/completions', chat), 'page-1')!;
    scope.windows.delete('page-1'); // the tab closed
    await stopped;
    await pending;
  });

  it('stops using a host that went away, and says so when no other host comes', async () => {
    const { scope, post, chat } = await mounted({ portWaitMs: 50 });
    scope.offer(new FakeEngine(), 'host-a');
    expect((await scope.fetch(post('/v1/chat/completions', chat))!).status).toBe(200);
    scope.dispatch('message', { data: { type: 'lantern:host-gone', host: 'host-a' }, ports: [] });
    const response = await scope.fetch(post('/v1/chat/completions', chat))!;
    expect(response.status).toBe(500);
    expect(response.headers.get('x-should-retry')).toBe('true');
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/No page is hosting/);
  });

  it("stops using a host whose page died without a word (its renderer crashed) once the host's lock is released", async () => {
    const { scope, post, chat } = await mounted();
    const streaming = new FakeEngine();
    streaming.onChat = async (_request, { onEvent, signal }) => {
      onEvent?.({ type: 'delta', choice: 0, text: 'hi' });
      await aborted(signal); // the tab's renderer crashes here: nothing more comes, not even the end
      return new Promise(() => {});
    };
    scope.offer(streaming, 'host-a');
    const response = await scope.fetch(post('/v1/chat/completions', { ...chat, stream: true }))!;
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let heard = '';
    while (!heard.includes('"hi"')) heard += (await reader.read()).value;
    scope.navigator.locks.release(hostLock('host-a')); // what the browser does for a crashed tab
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
    expect(rest).toMatch(/data: \{"error":\{"message":"The engine went away while this request was running/);
    expect(rest).toContain('"code":"engine_unavailable"');
    // The next request goes to the next host.
    scope.offer(new FakeEngine(), 'host-b');
    expect((await scope.fetch(post('/v1/chat/completions', chat))!).status).toBe(200);
  });

  it('refuses the port of a page of another protocol version, and answers at once while no page can host', async () => {
    const { scope, post, chat } = await mounted();
    const told: unknown[] = [];
    const old = { id: 'page-old', postMessage: (data: unknown) => told.push(data) };
    scope.windows.set(old.id, old);
    const older = new FakeEngine();
    const port = scope.offer(older, 'host-old', 1, ROUTING, { protocol: PROTOCOL_VERSION - 1, source: old });
    const closed = new Promise((resolve) => port.addEventListener('close', resolve));
    port.start();
    expect(told).toEqual([{ type: 'lantern:protocol', protocol: PROTOCOL_VERSION }]);
    const started = performance.now();
    const response = await scope.fetch(post('/v1/chat/completions', chat), old.id)!;
    expect(performance.now() - started).toBeLessThan(1000); // at once, not after the wait for a port
    expect(response.status).toBe(503);
    expect(response.headers.get('x-should-retry')).toBe('false');
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('version_mismatch');
    expect(error.message).toBe(
      `The open pages of this app run another version of it than its service worker (protocol ${PROTOCOL_VERSION - 1} ` +
        `against ${PROTOCOL_VERSION}): reload them, then retry.`,
    );
    expect(older.chats).toHaveLength(0);
    await closed; // closed unused

    // A page of this version opens: it tells its version, and a request waits for its port.
    const fresh = { id: 'page-new', postMessage: (_data: unknown) => {} };
    scope.windows.set(fresh.id, fresh);
    scope.dispatch('message', {
      data: { type: 'lantern:protocol', protocol: PROTOCOL_VERSION },
      ports: [],
      source: fresh,
    });
    const pending = scope.fetch(post('/v1/chat/completions', chat), fresh.id)!;
    scope.offer(new FakeEngine(), 'host-new');
    expect((await pending).status).toBe(200);
  });

  it('waits for a port while an open page has not told its version', async () => {
    const { scope, post, chat } = await mounted();
    const old = { id: 'page-old', postMessage: (_data: unknown) => {} };
    scope.windows.set(old.id, old);
    scope.windows.set('page-starting', { id: 'page-starting', postMessage: () => {} });
    scope.dispatch('message', {
      data: { type: 'lantern:protocol', protocol: PROTOCOL_VERSION + 1 },
      ports: [],
      source: old,
    });
    const pending = scope.fetch(post('/v1/chat/completions', chat), 'page-starting')!;
    await new Promise((resolve) => setTimeout(resolve, 50));
    scope.offer(new FakeEngine(), 'host-new');
    expect((await pending).status).toBe(200);
  });

  it('forwards an ID only a server can serve by itself, and keeps answering it once no tab hosts the engine', async () => {
    const upstream = await startUpstream({ mode: 'lantern' });
    try {
      const { scope, post } = await mounted({ portWaitMs: 50 });
      const engine = new FakeEngine();
      const far = {
        engine: 'remote',
        baseURL: upstream.baseURL,
        model: 'crimson-falcon-4',
        apiKey: upstream.key,
      } as const;
      const profile = { ...ROUTING.profile, 'far-chat': { task: 'chat', created: 3, candidates: [far] } } as const;
      scope.offer(engine, 'host-a', 1, { ...ROUTING, profile });
      const served: unknown[] = [];
      scope.windows.set('page-1', { postMessage: (data) => served.push(data) });
      scope.dispatch('message', { data: { type: 'lantern:host-gone', host: 'host-a' }, ports: [] });

      const request = { model: 'far-chat', messages: [{ role: 'user', content: 'Hello' }], temperature: 0 };
      const response = await scope.fetch(post('/v1/chat/completions', request))!;
      expect(response.status).toBe(200);
      // A key holder learns that a server answered, not where it is; the pages that configured it hear its key.
      expect(response.headers.get('x-lantern-backend')).toBe('remote:1');
      expect(((await response.json()) as { model: string }).model).toBe('far-chat');
      expect(engine.chats).toHaveLength(0);
      // The pages hear which candidate answers the ID.
      await expect
        .poll(() => served)
        .toContainEqual({
          type: 'lantern:served',
          model: 'far-chat',
          backend: `remote:crimson-falcon-4@${upstream.baseURL}`,
        });
    } finally {
      await upstream.kill();
    }
  });

  it('keeps itself alive for the indexing a request starts, and tells its pages how far it has got', async () => {
    // Node has no IndexedDB: the service worker's files in memory.
    const { scope, post, key } = await mounted({ documents: memoryDocumentStorage() });
    scope.offer(new FakeEngine());
    const heard: unknown[] = [];
    scope.windows.set('page-1', { postMessage: (data) => heard.push(data) });
    const form = new FormData();
    form.set('purpose', 'assistants');
    form.set('file', new File(['Owls hunt at night.'], 'owls.txt', { type: 'text/plain' }));
    const upload = new Request(`${ORIGIN}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    const file = (await (await scope.fetch(upload))!.json()) as { id: string };

    const waited: Promise<unknown>[] = [];
    let answered: Promise<Response> | undefined;
    scope.dispatch('fetch', {
      request: post('/v1/vector_stores', { file_ids: [file.id] }),
      clientId: 'page-1',
      respondWith: (r: Promise<Response>) => (answered = r),
      waitUntil: (work: Promise<unknown>) => waited.push(work),
    });
    const store = (await (await answered!).json()) as { id: string };
    expect(waited).toHaveLength(1);
    await waited[0];
    expect(heard).toContainEqual({
      type: 'lantern:indexing',
      vectorStoreId: store.id,
      fileId: file.id,
      chunksDone: 1,
      chunksTotal: 1,
    });
  });

  it('keeps itself alive for a background response past its answer, until its run ends', async () => {
    // Node has no IndexedDB: the service worker's responses in memory.
    const { scope, post } = await mounted({ responses: memoryResponseStore() });
    const { engine, stopped } = engineThatWaitsForAbort();
    scope.offer(engine);
    scope.windows.set('page-1', { postMessage: () => {} });
    const keepAwake = () => {
      const replies: unknown[] = [];
      const source = { postMessage: (data: unknown) => replies.push(data) };
      scope.dispatch('message', { data: { type: 'lantern:keep-awake' }, ports: [], source });
      return replies;
    };
    const waited: Promise<unknown>[] = [];
    let answered: Promise<Response> | undefined;
    scope.dispatch('fetch', {
      request: post('/v1/responses', { model: 'chat-model', input: 'hi', background: true }),
      clientId: 'page-1',
      respondWith: (r: Promise<Response>) => (answered = r),
      waitUntil: (work: Promise<unknown>) => waited.push(work),
    });
    const created = (await (await answered!).json()) as { id: string; status: string };
    expect(created.status).toBe('queued');
    expect(waited).toHaveLength(1);
    // Answered, and still busy: its pages keep it awake while the run goes on.
    expect(keepAwake()).toEqual([{ type: 'lantern:busy', busy: true }]);

    const cancelled = await scope.fetch(post(`/v1/responses/${created.id}/cancel`, {}))!;
    expect(await cancelled.json()).toMatchObject({ id: created.id, status: 'cancelled' });
    await stopped;
    await waited[0];
    expect(keepAwake()).toEqual([{ type: 'lantern:busy', busy: false }]);
  });
});
