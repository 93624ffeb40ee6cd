import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { CLOSED_PORT } from './support/closed-port.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEngine, createHandler, KeyRing, type Handler, type ModelProfile } from '../src/index.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';

/**
 * Secrets stay secret: what a key holder reads (every answer's body and headers, streams, `/v1/models`) never holds a
 * remote candidate's credentials (a user and password or a token in its `baseURL`, a `?key=` in its query, its
 * `apiKey`, its headers), its server's address, or a local model's absolute path; the operator's log
 * (`onServerError`, the console) never holds a credential either. A fake server in this process echoes everything it
 * was sent (its URL, its `authorization` header) in its errors, as real servers and proxies do.
 */
const PASSWORD = 'hunter2-pw-3f9a';
const QUERY_KEY = 'qk-7c1e5d0b2a';
const API_KEY = 'sk-apikey-91b4e6';
const TOKEN = 'tok-user-only-5e8d';
const HEADER_SECRET = 'hdr-secret-2b7f';
const CREDENTIALS = [PASSWORD, QUERY_KEY, API_KEY, TOKEN, HEADER_SECRET, btoa(`alice:${PASSWORD}`)];

let server: Server;
let port: number;
let refusedPort: number;
let models: string; // a folder with a distinctive absolute path: the local models live under it
let keys: KeyRing;
let handler: Handler;
let keyA: string;
let keyB: string;

/** Where each remote candidate lives: none of it may reach a key holder. */
const locations = () => [`127.0.0.1:${port}`, `127.0.0.1:${refusedPort}`, '/secret-route/', 'alice'];
/** Every answer's headers and body, and everything logged: where no credential may show. */
const answers: string[] = [];
const logs: string[] = [];

/** The fake server: checks the credentials where they belong, and echoes them in its failures. */
function serve(request: IncomingMessage, response: ServerResponse) {
  const url = new URL(request.url!, `http://127.0.0.1:${port}`);
  const auth = request.headers.authorization ?? '';
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    const said = `${request.method} http://alice:${PASSWORD}@${request.headers.host}${request.url} with ${auth}`;
    const fail = (status: number, message: string) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { message, type: 'server_error', param: null, code: null } }));
    };
    if (url.pathname.startsWith('/secret-route/ok/v1/')) {
      // It takes the user and password as HTTP Basic and keeps the query where it was configured.
      const basic = auth === `Basic ${btoa(`alice:${PASSWORD}`)}`;
      if (!basic || url.searchParams.get('key') !== QUERY_KEY) return fail(401, `refused: ${said}`);
      response.writeHead(200, { 'content-type': 'application/json' });
      const model = (JSON.parse(body) as { model: string }).model;
      return response.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 0,
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    }
    if (url.pathname.startsWith('/secret-route/refuse/v1/')) return fail(401, `bad credentials in ${said}`);
    if (url.pathname.startsWith('/secret-route/midstream/v1/')) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [] as unknown[] };
      chunk.choices = [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }];
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
      return response.end(`data: ${JSON.stringify({ error: { message: `crashed serving ${said}` } })}\n\n`);
    }
    const model = (JSON.parse(body || '{}') as { model?: string }).model;
    return fail(500, `internal error at ${said} serving '${model}'`);
  });
}

beforeAll(async () => {
  server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
  refusedPort = CLOSED_PORT;

  models = mkdtempSync(join(tmpdir(), 'lantern-private-models-'));
  // A model folder whose weights are missing: transformers.js names the file it did not find, by its absolute path.
  const partial = join(models, 'partial-chat');
  mkdirSync(partial);
  for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) {
    writeFileSync(join(partial, file), readBundled(file));
  }

  const base = (route: string, credentials = `alice:${PASSWORD}@`) =>
    `http://${credentials}127.0.0.1:${port}/secret-route/${route}/v1?key=${QUERY_KEY}`;
  const remote = (route: string, extra: object = {}) => ({
    engine: 'remote' as const,
    baseURL: base(route),
    model: 'private-model-name',
    ...extra,
  });
  const chat = (...candidates: ModelProfile[string]['candidates']) => ({
    task: 'chat' as const,
    created: 0,
    candidates,
  });
  const local = (folder: string) => ({
    engine: 'transformers' as const,
    model: folder,
    dtype: 'fp32' as const,
    device: 'cpu' as const,
  });
  const profile: ModelProfile = {
    answers: chat(remote('ok')),
    failing: chat(remote('boom', { apiKey: API_KEY, headers: { 'x-upstream-secret': HEADER_SECRET } })),
    'failing-streamed': chat(remote('boom', { apiKey: API_KEY, coolDownMs: 0 })),
    refusing: chat(remote('refuse', { apiKey: API_KEY })),
    midstream: chat(remote('midstream')),
    'token-user': chat({ engine: 'remote', baseURL: base('boom', `${TOKEN}@`), model: 'm' }),
    unreachable: chat({
      engine: 'remote',
      baseURL: `http://alice:${PASSWORD}@127.0.0.1:${refusedPort}/secret-route/gone/v1?key=${QUERY_KEY}`,
      model: 'm',
      apiKey: API_KEY,
    }),
    missing: chat(local(join(models, 'no-such-model'))),
    partial: chat(local(partial)),
    // Both kinds in one chain: the local model fails to load, then the server does.
    both: chat(local(join(models, 'no-such-model')), remote('boom', { apiKey: API_KEY })),
  };
  keys = new KeyRing();
  keyA = (await keys.issue('hostile')).key;
  keyB = (await keys.issue('another')).key;
  const inner = createHandler({
    engine: createEngine({ profile }),
    keys,
    onServerError: (error) => void logs.push(inspect(error, { depth: 20 })),
  });
  handler = async (request) => {
    const response = await inner(request);
    answers.push(JSON.stringify([...response.headers]), await response.clone().text());
    return response;
  };
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(models, { recursive: true, force: true });
});

function readBundled(file: string): string {
  return readFileSync(join(BUNDLED_MODELS, 'tiny-chat', file), 'utf8');
}

const post = (path: string, body: object, key = keyA) =>
  handler(
    new Request(`http://lantern.test/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
const get = (path: string, key = keyA) =>
  handler(new Request(`http://lantern.test/v1${path}`, { headers: { authorization: `Bearer ${key}` } }));
const chatWith = (model: string, extra: object = {}, key = keyA) =>
  post('/chat/completions', { model, messages: [{ role: 'user', content: 'Hello' }], ...extra }, key);

/** Fails naming the first forbidden string found in `texts`. */
function expectNone(texts: string[], forbidden: string[]) {
  for (const text of texts) for (const word of forbidden) expect(text, `${word} in ${text}`).not.toContain(word);
}

/** What the answers since `from` held: no credential, no server address or path, no local path. */
function expectNothingShown(from: number) {
  const shown = answers.slice(from);
  expect(shown.length).toBeGreaterThan(0);
  expectNone(shown, [...CREDENTIALS, ...locations(), models, BUNDLED_MODELS, 'private-model-name']);
}

const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { message: string; code: string } }).error;

/** Everything the console is told while `run` runs, into `logs`. */
async function capturingConsole(run: () => Promise<void>) {
  const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((name) =>
    vi.spyOn(console, name).mockImplementation((...args: unknown[]) => void logs.push(inspect(args, { depth: 20 }))),
  );
  try {
    await run();
  } finally {
    spies.forEach((spy) => spy.mockRestore());
  }
}

describe('what a key holder is told of a remote candidate', () => {
  it('an unreachable server whose baseURL holds a user, a password and a query key: a 503 naming no secret', async () => {
    const from = answers.length;
    const response = await chatWith('unreachable');
    expectNothingShown(from);
    expect(response.status).toBe(503);
    const error = await errorOf(response);
    expect(error.code).toBe('upstream_unavailable');
    expect(error.message).toMatch(/^The model server \(remote:\d+\) could not be reached \(ECONNREFUSED\)\.$/);
    expect(response.headers.get('x-lantern-backend')).toMatch(/^remote:\d+$/);
  });

  it('servers that echo their URL and the credentials they were sent: 502 and 503 naming neither', async () => {
    const from = answers.length;
    expect((await chatWith('failing')).status).toBe(502);
    expect((await chatWith('refusing')).status).toBe(502);
    expect((await chatWith('token-user')).status).toBe(502);
    expect((await chatWith('failing-streamed', { stream: true })).status).toBe(502);
    // Cooling down after its failure, the server is named too.
    const cooling = await chatWith('failing');
    expect(cooling.status).toBe(503);
    expect((await errorOf(cooling)).message).toMatch(/^The model server \(remote:\d+\) failed recently/);
    // A failure after the first token: the stream's error event.
    const cut = await chatWith('midstream', { stream: true });
    expect(cut.status).toBe(200);
    expect(await cut.text()).toMatch(/data: \{"error".*failed mid-answer/);
    expectNothingShown(from);
  });

  it('/v1/models says that a server serves an ID, not where it is', async () => {
    const from = answers.length;
    const list = (await (await get('/models')).json()) as { data: { id: string; candidates: string[] }[] };
    await get('/models/both');
    expectNothingShown(from);
    const byId = Object.fromEntries(list.data.map((m) => [m.id, m.candidates]));
    expect(byId.answers).toEqual([expect.stringMatching(/^remote:\d+$/)]);
    expect(byId.both).toEqual(['transformers:no-such-model@fp32/cpu', expect.stringMatching(/^remote:\d+$/)]);
  });

  it("another key's ordinary request right after is answered, through the credentials of the URL", async () => {
    const from = answers.length;
    const fine = await chatWith('answers', {}, keyB);
    expect(fine.status).toBe(200);
    expect(((await fine.json()) as { model: string }).model).toBe('answers');
    expect(fine.headers.get('x-lantern-backend')).toMatch(/^remote:\d+$/);
    expectNothingShown(from);
  });
});

describe('what a key holder is told of a local model that cannot load', () => {
  it('names the public ID, the candidate and why, without the absolute path', async () => {
    for (const model of ['missing', 'partial']) {
      const from = answers.length;
      const failed = await chatWith(model);
      expectNothingShown(from);
      expect(failed.status).toBe(500);
      const error = await errorOf(failed);
      expect(error.code).toBe('model_load_failed');
      expect(error.message).toContain(`Model \`${model}\` could not be loaded`);
      expect(error.message).toMatch(/transformers:[\w-]+@fp32\/cpu: its files are missing/);
    }
    const from = answers.length;
    const both = await errorOf(await chatWith('both'));
    expectNothingShown(from);
    expect(both.message).toMatch(/transformers:no-such-model@fp32\/cpu: its files are missing.*remote:\d+/);
    const list = (await (await get('/models')).json()) as { data: { id: string; candidates: string[] }[] };
    expect(list.data.find((m) => m.id === 'partial')!.candidates).toEqual(['transformers:partial-chat@fp32/cpu']);
  });
});

describe("the operator's log", () => {
  it('holds no credential (it keeps where the candidates live, for the operator)', async () => {
    await capturingConsole(async () => {
      for (const model of ['unreachable', 'refusing', 'token-user', 'missing']) await chatWith(model);
      await chatWith('midstream', { stream: true }).then((r) => r.text());
    });
    expect(logs.length).toBeGreaterThan(0);
    expectNone([...logs, ...answers], CREDENTIALS);
  });
});
