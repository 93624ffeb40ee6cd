import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/**
 * `npm run serve:node` as a browser app of another origin meets it, over real HTTP: the preflight a browser sends
 * before the SDK's requests (they carry `Authorization`), then the requests, with the `Origin` a browser adds. A
 * browser lets the page read an answer only when it names the page's origin in `Access-Control-Allow-Origin`.
 */
const SDK_HEADERS = 'authorization,content-type,x-stainless-lang,x-stainless-retry-count';

const preflight = (server: ServedNode, origin: string, path = '/chat/completions') =>
  fetch(`${server.baseURL}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': SDK_HEADERS },
  });

const chat = (server: ServedNode, origin: string, init: { key?: string; stream?: boolean } = {}) =>
  fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: {
      origin,
      'content-type': 'application/json',
      ...(init.key && { authorization: `Bearer ${init.key}` }),
    },
    body: JSON.stringify({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Hello' }],
      max_tokens: 3,
      stream: init.stream ?? false,
    }),
  });

describe('npm run serve:node with its default origins (local development)', () => {
  let server: ServedNode;
  beforeAll(async () => {
    server = await serveNode();
  }, 60_000);
  afterAll(() => server?.close());

  it.each(['http://localhost:5173', 'http://127.0.0.1:3000', 'https://localhost', 'http://[::1]:8080'])(
    'answers the preflight of %s without a key, allowing the SDK headers',
    async (origin) => {
      const response = await preflight(server, origin);
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-methods')).toMatch(/POST/);
      expect(response.headers.get('access-control-allow-headers')).toBe(SDK_HEADERS);
      expect(response.headers.get('access-control-max-age')).toBe('600');
    },
  );

  it('lets an allowed origin read answers, errors and streams, and the headers the SDK needs', async () => {
    const origin = 'http://localhost:5173';
    const ok = await chat(server, origin, { key: server.key });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(origin);
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/x-request-id.*retry-after-ms.*x-should-retry/);
    expect(((await ok.json()) as { object: string }).object).toBe('chat.completion');

    const unauthorized = await chat(server, origin); // no key: the SDK must see this 401, not a network error
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(origin);

    const stream = await chat(server, origin, { key: server.key, stream: true });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.headers.get('access-control-allow-origin')).toBe(origin);
    expect(await stream.text()).toMatch(/data: \[DONE\]\n\n$/);
  });

  it.each(['https://evil.example', 'http://localhost.evil.example', 'null'])(
    'gives %s no CORS headers, so its browser refuses',
    async (origin) => {
      const response = await preflight(server, origin);
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      const answer = await chat(server, origin, { key: server.key });
      expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    },
  );
});

describe('npm run serve:node with LANTERN_CORS_ORIGINS', () => {
  let server: ServedNode;
  beforeAll(async () => {
    server = await serveNode({ LANTERN_CORS_ORIGINS: 'https://app.example, https://admin.example/' });
  }, 60_000);
  afterAll(() => server?.close());

  it('allows exactly the origins listed', async () => {
    for (const origin of ['https://app.example', 'https://admin.example']) {
      expect((await preflight(server, origin)).headers.get('access-control-allow-origin')).toBe(origin);
    }
    expect((await preflight(server, 'http://localhost:5173')).headers.get('access-control-allow-origin')).toBeNull();
  });
});
