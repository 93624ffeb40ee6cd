import { CLOSED_PORT } from './support/closed-port.ts';
import { inspect } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEngine,
  createHandler,
  KeyRing,
  type Handler,
  type LocalCandidate,
  type ModelProfile,
  type RemoteCandidate,
} from '../src/index.ts';
import { BUNDLED_MODELS, openaiClient, reference, type ChatReference } from './support/lantern.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

/**
 * What a client sees when the server behind a remote candidate fails, over real HTTP to Lantern's own server in
 * other processes: the server's errors in OpenAI's shape (and its retry headers), 502 / 503 with a truthful
 * `x-should-retry`, timeouts, aborts that reach the server, a server killed mid-stream, a server that never answers,
 * and the next request succeeding each time. No configured key ever shows, in an answer or in a log.
 */
const hello = [{ role: 'user' as const, content: 'Hello' }];
const helloReply = reference<ChatReference[]>('tiny-chat').find((r) => r.messages.at(-1)!.content === 'Hello')!;
/** Cannot end by itself (the end-of-reply tokens banned): only its length or an abort stops it. */
const endless = { messages: hello, max_tokens: 800, logit_bias: { 0: -100, 1: -100, 2: -100 } };
const WRONG_KEY = `lt_${'W'.repeat(43)}`;
const SHORT = { connect: 300, firstByte: 300, idle: 300 };
const LOCAL: LocalCandidate = {
  engine: 'transformers',
  model: `${BUNDLED_MODELS}/tiny-chat`,
  dtype: 'fp32',
  device: 'cpu',
};

let main: Upstream; // answers
let busy: Upstream; // one generation at a time: a second is 429
let failing: Upstream; // its model cannot load: 500
let silent: Upstream; // accepts connections, never answers
let victim: Upstream; // sends one event, then waits: killed mid-stream by a test
let refusedURL: string;

/** Every answer's headers and body text, and every server error reported: where a key must never show. */
const seen: string[] = [];
const record =
  (handler: Handler): Handler =>
  async (request) => {
    const response = await handler(request);
    const copy = response.clone();
    void copy.text().then(
      (text) => seen.push(JSON.stringify([...copy.headers]), text),
      () => {},
    );
    return response;
  };
const onServerError = (error: unknown) => void seen.push(inspect(error, { depth: 20 }));

let keys: KeyRing;
let key: string;
let firstHandler: Handler; // local-first: each ID's only candidate is a server
let remoteFirst: Handler; // remote-first, the bundled model behind each server
const sdk = (handler: Handler, maxRetries = 0) => openaiClient(handler, key, { maxRetries });

const only = (candidate: RemoteCandidate) => ({ task: 'chat' as const, created: 0, candidates: [candidate] });
const orLocal = (candidate: RemoteCandidate) => ({ task: 'chat' as const, created: 0, candidates: [candidate, LOCAL] });

beforeAll(async () => {
  [main, busy, failing, silent, victim] = await Promise.all([
    startUpstream({ mode: 'lantern' }),
    startUpstream({ mode: 'lantern', concurrentGenerations: 1 }),
    startUpstream({ mode: 'lantern', broken: 'broken-chat' }),
    startUpstream({ mode: 'silent' }),
    startUpstream({ mode: 'lantern', gated: true }),
  ]);
  refusedURL = `http://127.0.0.1:${CLOSED_PORT}/v1`;

  const first: ModelProfile = {
    'far-falcon': only(main.candidate('crimson-falcon-4')),
    'busy-falcon': only(busy.candidate('crimson-falcon-4')),
    'wrong-key': only(main.candidate('crimson-falcon-4', { apiKey: WRONG_KEY })),
    'wrong-model': only(main.candidate('no-such-model')),
    failing: only(failing.candidate('broken-chat')),
    refused: only({ engine: 'remote', baseURL: refusedURL, model: 'x' }),
    // No cool-down: each request tries it again (and waits out its timeout).
    silent: only(silent.candidate('x', { timeouts: SHORT, coolDownMs: 0 })),
    // Lantern's server sends its headers with the first token, after loading the model: give it time for that.
    stalling: only(
      victim.candidate('crimson-falcon-4', { timeouts: { connect: 30_000, firstByte: 30_000, idle: 300 } }),
    ),
  };
  const second: ModelProfile = {
    'silent-or-local': orLocal(silent.candidate('x', { timeouts: SHORT })),
    'victim-or-local': orLocal(victim.candidate('crimson-falcon-4')),
  };
  keys = new KeyRing();
  key = (await keys.issue('fault tests')).key;
  firstHandler = record(createHandler({ engine: createEngine({ profile: first }), keys, onServerError }));
  remoteFirst = record(
    createHandler({ engine: createEngine({ profile: second, policy: 'remote-first' }), keys, onServerError }),
  );
});
afterAll(() => Promise.all([main, busy, failing, silent, victim].map((u) => u?.kill())));

type APIError = InstanceType<typeof OpenAI.APIError>;
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('expected the request to fail'),
    (error: unknown) => {
      expect(error).toBeInstanceOf(OpenAI.APIError);
      return error as APIError;
    },
  );
const ask = (handler: Handler, model: string, extra: object = {}) =>
  sdk(handler).chat.completions.create({ model, messages: hello, temperature: 0, ...extra });

describe("the server's own errors", () => {
  it("a request the server refuses is the client's 400, naming the parameter; the next succeeds", async () => {
    const tooLong = [{ role: 'user' as const, content: 'word '.repeat(3000) }];
    const error = await failure(sdk(firstHandler).chat.completions.create({ model: 'far-falcon', messages: tooLong }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(error.headers?.get('x-lantern-backend')).toMatch(/^remote:\d+$/); // a server, not where it is
    expect((await ask(firstHandler, 'far-falcon')).choices[0]!.message.content).toBe(helloReply.greedy_text);
  });

  it("a 429 keeps the server's retry headers, which the SDK honours", async () => {
    const running = await sdk(firstHandler).chat.completions.create({
      model: 'busy-falcon',
      ...endless,
      max_tokens: 200,
      stream: true,
    });
    const chunks = running[Symbol.asyncIterator]();
    await chunks.next();
    const refused = await failure(ask(firstHandler, 'busy-falcon'));
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect(refused.headers?.get('retry-after-ms')).toBe('1000');
    expect(refused.headers?.get('retry-after')).toBe('1');
    expect(refused.headers?.get('x-ratelimit-limit-requests')).toBeTruthy();
    expect(refused.message).toMatch(/Too many concurrent requests/);
    // With retries on, the SDK waits as told and gets through once the running stream is over.
    const statuses: number[] = [];
    const patient = openaiClient(firstHandler, key, { maxRetries: 5 });
    const retried = patient.chat.completions.create({ model: 'busy-falcon', messages: hello, temperature: 0 });
    retried.catch(() => {}); // awaited below, once the running stream is read
    for (let next = await chunks.next(); !next.done; next = await chunks.next());
    expect((await retried).choices[0]!.message.content).toBe(helloReply.greedy_text);
    statuses.push(...patient.statuses);
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
  });

  it('refused credentials (401) are a 502 that says not to retry, and the key is not in it', async () => {
    const client = openaiClient(firstHandler, key, { maxRetries: 2 });
    const error = await failure(client.chat.completions.create({ model: 'wrong-key', messages: hello }));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(error.message).toMatch(/refused Lantern's credentials \(401\)/);
    expect(client.statuses).toEqual([502]); // not retried
  });

  it('a model the server does not know (404) is a 502 that says not to retry', async () => {
    const error = await failure(ask(firstHandler, 'wrong-model'));
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(error.message).toMatch(/answered 404/);
  });

  it("a failing server (500) is a 502 with the server's own verdict on retrying", async () => {
    const error = await failure(ask(firstHandler, 'failing'));
    expect(error).toMatchObject({ status: 502, code: 'upstream_error' });
    // Lantern's server says a model that cannot load will not load on a retry.
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(error.message).toMatch(/failed \(500\).*could not be loaded/);
  });
});

describe('a server that is not there', () => {
  it('unreachable: a 503 to retry, then left alone for its cool-down with retry-after', async () => {
    const error = await failure(ask(firstHandler, 'refused'));
    expect(error).toMatchObject({ status: 503, code: 'upstream_unavailable' });
    expect(error.headers?.get('x-should-retry')).toBe('true');
    expect(error.message).toMatch(/could not be reached \(ECONNREFUSED\)/);
    const again = await failure(ask(firstHandler, 'refused', { stream: true }));
    expect(again).toMatchObject({ status: 503, code: 'upstream_unavailable' });
    expect(Number(again.headers?.get('retry-after-ms'))).toBeGreaterThan(20_000);
    expect(again.message).toMatch(/left alone for \d+ s more/);
  });

  it('never answering: 503 once the timeout passes, streamed or not, and never a hang', async () => {
    const streamed = await failure(ask(firstHandler, 'silent', { stream: true }));
    expect(streamed).toMatchObject({ status: 503, code: 'upstream_unavailable' });
    expect(streamed.message).toMatch(/did not start answering within 300 ms/);
    const whole = await failure(ask(firstHandler, 'silent'));
    expect(whole).toMatchObject({ status: 503, code: 'upstream_unavailable' });
    expect(whole.message).toMatch(/did not send its first token within 300 ms/);
  });

  it('remote-first: a dead server hands over to the local model, and is not tried on every request', async () => {
    const before = silent.messages.filter((m) => m.type === 'connection').length;
    for (let i = 0; i < 3; i++) {
      const { data, response } = await sdk(remoteFirst)
        .chat.completions.create({ model: 'silent-or-local', messages: hello, temperature: 0 })
        .withResponse();
      expect(data.choices[0]!.message.content).toBe(helloReply.greedy_text);
      expect(data.model).toBe('silent-or-local');
      expect(response.headers.get('x-lantern-backend')).toBe('transformers:tiny-chat@fp32/cpu'); // no folder path
    }
    expect(silent.messages.filter((m) => m.type === 'connection').length - before).toBe(1);
    const card = (await sdk(remoteFirst).models.retrieve('silent-or-local')) as unknown as Record<string, unknown>;
    expect(card.served_by).toBe('transformers:tiny-chat@fp32/cpu');
  });
});

describe('mid-answer', () => {
  it('a server that stalls mid-stream: the stream ends with an error event once the idle timeout passes', async () => {
    const stream = await sdk(firstHandler).chat.completions.create({
      model: 'stalling',
      messages: hello,
      stream: true,
    });
    const chunks = stream[Symbol.asyncIterator]();
    expect((await chunks.next()).value?.choices[0]?.delta.role).toBe('assistant');
    const stalled = await chunks.next().then(
      () => expect.fail('the stream went on'),
      (error: unknown) => error as APIError,
    );
    expect(stalled.message).toMatch(/did not send the next part of its answer within 300 ms/);
  });

  it('a server killed mid-stream ends the stream with an error event; the next request is answered locally', async () => {
    const stream = await sdk(remoteFirst).chat.completions.create({
      model: 'victim-or-local',
      messages: hello,
      stream: true,
    });
    const chunks = stream[Symbol.asyncIterator]();
    expect((await chunks.next()).value?.choices[0]?.delta.role).toBe('assistant');
    await victim.kill();
    const cut = await chunks.next().then(
      () => expect.fail('the stream went on'),
      (error: unknown) => error as APIError,
    );
    expect(cut).toBeInstanceOf(OpenAI.APIError);
    expect(cut.message).toMatch(/stopped in the middle of its answer/);

    const { data, response } = await sdk(remoteFirst)
      .chat.completions.create({ model: 'victim-or-local', messages: hello, temperature: 0 })
      .withResponse();
    expect(data.choices[0]!.message.content).toBe(helloReply.greedy_text);
    expect(response.headers.get('x-lantern-backend')).toMatch(/^transformers:/);
  });

  it("a client's abort closes the request to the server, which stops generating (streamed)", async () => {
    const from = main.messages.length;
    const controller = new AbortController();
    const stream = await sdk(firstHandler).chat.completions.create(
      { model: 'far-falcon', ...endless, stream: true },
      { signal: controller.signal },
    );
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    await chunks.next();
    controller.abort();
    await chunks.next().catch(() => {});
    await main.waitFor('run', (m) => m.outcome === 'aborted', from);
  });

  it("a client's abort closes the request to the server, which stops generating (not streamed)", async () => {
    const from = main.messages.length;
    const controller = new AbortController();
    const pending = sdk(firstHandler).chat.completions.create(
      { model: 'far-falcon', ...endless, user: 'to-abort' },
      { signal: controller.signal },
    );
    await main.waitFor('request', (m) => (m.body as { user?: string }).user === 'to-abort', from);
    controller.abort();
    await pending.catch(() => {});
    await main.waitFor('run', (m) => m.outcome === 'aborted', from);
    // And the next request is answered.
    expect((await ask(firstHandler, 'far-falcon')).choices[0]!.message.content).toBe(helloReply.greedy_text);
  });
});

describe('secrets', () => {
  it('no configured key appears in any answer, header or server-error report above', async () => {
    await new Promise((resolve) => setTimeout(resolve, 100)); // the last copies of bodies are read
    expect(seen.length).toBeGreaterThan(20);
    const everything = seen.join('\n');
    for (const secret of [main.key, busy.key, failing.key, victim.key, WRONG_KEY]) {
      expect(everything).not.toContain(secret);
    }
    // The reports were there to look at: the failures above were told, with what went wrong.
    expect(everything).toMatch(/refused Lantern's credentials/);
  });
});
