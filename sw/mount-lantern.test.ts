import * as Comlink from 'comlink';
import { afterEach, describe, expect, it } from 'vitest';
import { aborted, FakeEngine } from '../test/support/fake-engine.ts';
import { EngineError } from '../src/engine/index.ts';
import { KeyRing } from '../src/keys/index.ts';
import {
  PORT_REQUEST,
  REQUEST_ID_HEADER,
  registerEngineErrorTransfer,
  type PortOffer,
} from '../src/worker/protocol.ts';
import { createWorkerApi } from '../src/worker/worker-api.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { mountLantern } from './mount-lantern.ts';

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

/** Just enough of a ServiceWorkerGlobalScope: listeners, clients, location. */
class FakeScope {
  readonly location = { origin: ORIGIN };
  readonly listeners = new Map<string, ((event: unknown) => void)[]>();
  readonly windows = new Map<string, { postMessage: (data: unknown) => void }>();
  readonly asked: unknown[] = [];
  readonly clients = {
    matchAll: async () => [...this.windows.values()],
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

  /** A host tab hands over a port to a worker around `engine`, with its profile. */
  offer(engine: FakeEngine, host = 'host-a', worker = 1, routing = ROUTING) {
    const { port1, port2 } = new MessageChannel();
    ports.push(port1, port2);
    Comlink.expose(
      createWorkerApi(() => engine, { report: () => {}, fatal: () => {} }),
      port1,
    );
    const offer: PortOffer = { type: 'lantern:port-offer', host, worker, routing };
    this.dispatch('message', { data: offer, ports: [port2] });
  }
}

/** An engine whose chat runs until it is aborted; `stopped` settles when the abort reached it. */
function engineThatWaitsForAbort() {
  const engine = new FakeEngine();
  const stopped = new Promise<void>((resolve) => {
    engine.onChat = async (_request, { signal }) => {
      await aborted(signal);
      resolve();
      throw new EngineError('aborted', 'cancelled');
    };
  });
  return { engine, stopped };
}

async function mounted(options: { portWaitMs?: number } = {}) {
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
  return { scope, post, chat };
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
    await expect.poll(() => scope.asked).toEqual([{ type: PORT_REQUEST }]);
    scope.offer(new FakeEngine());
    expect((await pending).status).toBe(200);
  });

  it('aborts a request when its page says it aborted it', async () => {
    const { scope, post, chat } = await mounted();
    const { engine, stopped } = engineThatWaitsForAbort();
    scope.offer(engine);
    scope.windows.set('page-1', { postMessage: () => {} });
    const pending = scope.fetch(post('/v1/chat/completions', chat, { [REQUEST_ID_HEADER]: 'req-42' }))!;
    await new Promise((resolve) => setTimeout(resolve, 20));
    scope.dispatch('message', { data: { type: 'lantern:abort', id: 'req-42' }, ports: [] });
    await stopped;
    await pending;
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
});
