import { createServer, request as httpRequest, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wavFile } from './support/audio-files.ts';
import { lyingGif } from './support/lying-images.ts';
import { serveNode, type ServedNode } from './support/serve-node.ts';

/*
 * Issue 41's reproductions against `npm run serve:node` over real HTTP, as they were found: one key's request must not
 * cost another key its answers, nor reach what the server can reach. Each hostile request runs while another key polls
 * `GET /v1/models` every 20 ms; how long the hostile request took to be answered and the longest the other key waited
 * (which bounds how long the server's event loop was held) are logged, never asserted (these machines are shared). What
 * is asserted: the status and error, another key's chat answered during and after, no request reaching an internal
 * address, and the server and its engine thread alive at the end.
 */

let served: ServedNode;
/** A server on loopback standing for what the Node server can reach and its key holders must not (an admin API). */
let internal: Server;
let internalHits: string[] = [];
let internalURL: string;
const TIMES: Record<string, { answeredMs: number; otherKeyLongestWaitMs: number }> = {};

const ATTACKERS = ['attacker 1', 'attacker 2', 'attacker 3', 'attacker 4'];

beforeAll(async () => {
  internal = createServer((request, response) => {
    internalHits.push(`${request.method} ${request.url}`);
    response.writeHead(200, { 'content-type': 'image/png' }).end('secret');
  });
  await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
  internalURL = `http://127.0.0.1:${(internal.address() as AddressInfo).port}`;
  served = await serveNode({ LANTERN_KEY_NAMES: ['victim', ...ATTACKERS].join(',') });
  // The chat model loaded, so that what is measured below is the hostile request, not the first load.
  expect((await chat(served.key, { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  console.log(`[serve:node isolation] (ms):\n${JSON.stringify(TIMES, null, 1)}`);
  await served?.close();
  await new Promise((resolve) => internal?.close(resolve));
});

const attacker = (i = 0) => served.otherKeys[ATTACKERS[i]!]!;

function chat(key: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${served.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'crimson-falcon-4', ...body }),
  });
}

/** The victim's `GET /v1/models`, every 20 ms until `work` settles: the longest it waited for an answer. */
async function victimWhile(work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true)).catch(() => {});
  let longest = 0;
  while (!done) {
    const sent = performance.now();
    const response = await fetch(`${served.baseURL}/models`, { headers: { authorization: `Bearer ${served.key}` } });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    longest = Math.max(longest, performance.now() - sent);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Math.round(longest);
}

/** Waits (up to ten seconds) until a key's requests at once are free again: a small chat is not refused with 429. */
async function slotsFreed(key: string): Promise<void> {
  for (let tries = 0; tries < 50; tries++) {
    const response = await chat(key, { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 });
    await response.arrayBuffer();
    if (response.status !== 429) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the server still refuses the key with 429 ten seconds after its connections closed');
}

/** Runs one hostile request with the victim polling beside it, logs the figures, and checks the victim's chat after. */
async function hostile(name: string, send: () => Promise<Response>): Promise<Response> {
  const started = performance.now();
  const answer = send();
  const otherKeyLongestWaitMs = await victimWhile(answer);
  const response = await answer;
  TIMES[name] = { answeredMs: Math.round(performance.now() - started), otherKeyLongestWaitMs };
  const after = await chat(served.key, { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
  expect(after.status).toBe(200);
  expect(((await after.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toEqual(
    expect.any(String),
  );
  return response;
}

describe('bodies sent slowly', () => {
  it("hold only their own keys' slots: another key is served while sixteen trickle in", async () => {
    // Four keys, four requests each (each key's limit of requests at once): sixteen bodies, each sent a byte at a time.
    const trickling: ClientRequest[] = [];
    const url = new URL(`${served.baseURL}/chat/completions`);
    for (let i = 0; i < 16; i++) {
      const request = httpRequest(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${attacker(i % 4)}`,
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        },
      });
      request.on('error', () => {}); // destroyed below
      request.write('{');
      trickling.push(request);
    }
    const timer = setInterval(() => trickling.forEach((request) => request.write(' ')), 1000);
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // Sixteen would have filled every engine slot (16) before issue 41: another key got 429 `engine_busy`.
      const response = await hostile('16 bodies trickling at 1 byte/s, another key chats', () =>
        chat(served.key, { messages: [{ role: 'user', content: 'Count to 3.' }], max_tokens: 8 }),
      );
      expect(response.status).toBe(200);
    } finally {
      clearInterval(timer);
      trickling.forEach((request) => request.destroy());
      // The server frees their slots once it sees each connection close: the next tests use these keys.
      for (let i = 0; i < ATTACKERS.length; i++) await slotsFreed(attacker(i));
    }
  }, 60_000);
});

describe('image URLs', () => {
  const imageRefusals = new Set<string>();
  it.each([
    ['loopback by address', () => `${internalURL}/admin/delete?id=7`],
    ['loopback by name', () => internalURL.replace('127.0.0.1', 'localhost') + '/admin/delete?id=7'],
    ['loopback IPv6', () => `http://[::1]:${new URL(internalURL).port}/admin`],
    ['a closed port', () => 'http://127.0.0.1:9/admin'],
  ])('are refused by default, never fetched: %s', async (_name, url) => {
    internalHits = [];
    const response = await hostile(`image URL: ${_name}`, () =>
      chat(attacker(), {
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: url() } }] }],
        max_tokens: 4,
      }),
    );
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { message: string; param: string } };
    expect(error.param).toBe('messages[0].content[0]');
    // One answer whatever the address: it tells an open port from a closed one no more than a public host from either.
    // What the request itself named (its URL, its host) aside, every refusal reads the same.
    imageRefusals.add(error.message.replaceAll(url(), '<url>').replaceAll(new URL(url()).hostname, '<host>'));
    expect(imageRefusals.size).toBe(1);
    expect(internalHits).toEqual([]);
  });
});

describe('schemas', () => {
  const format = (schema: unknown) => ({
    messages: [{ role: 'user', content: 'Answer in JSON.' }],
    max_tokens: 64,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
  });

  it('the ANS story schema (127 KB, 380 references) is compiled within its budget, in the engine thread', async () => {
    const schema = JSON.parse(readFileSync('test/fixtures/schemas/large/ans-story.json', 'utf8')) as unknown;
    const response = await hostile('ANS story schema', () => chat(attacker(), format(schema)));
    // Compiled (and answered) or refused for a reason of its own: never the heap, never every key's wait.
    expect([200, 400]).toContain(response.status);
  });

  it('`^(a+)+$` beside a 46-character enum value is refused, matched in linear time', async () => {
    const response = await hostile('ReDoS: ^(a+)+$ against a 46-character enum value', () =>
      chat(attacker(), format({ type: 'string', pattern: '^(a+)+$', enum: [`${'a'.repeat(45)}!`] })),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('response_format');
  });

  it('`(a*)*b|^a*$` that the output matches is validated in linear time', async () => {
    const response = await hostile('validator: (a*)*b|^a*$ on 40 a', () =>
      chat(attacker(), format({ type: 'string', pattern: '(a*)*b|^a*$', const: 'a'.repeat(40) })),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { choices: { message: { content: string } }[] };
    expect(JSON.parse(body.choices[0]!.message.content)).toBe('a'.repeat(40));
  });
});

describe('files that lie in their headers', () => {
  it('a GIF whose header says 1 × 1 and whose frame is 16,000 × 16,000 is refused undecoded', async () => {
    // The server is tsx's child process: the largest resident size of the process and its children, in MiB.
    const rssOf = (pid: string) =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
    const rss = () => {
      const pid = String(served.pid);
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      return Math.max(...[pid, ...children].map(rssOf));
    };
    const before = rss();
    const gif = Buffer.from(lyingGif([1, 1], [16_000, 16_000])).toString('base64');
    const url = `data:image/gif;base64,${gif}`;
    const response = await hostile('GIF of 1 × 1 holding 16000 × 16000, three in one request', () =>
      chat(attacker(), {
        messages: [{ role: 'user', content: [1, 2, 3].map(() => ({ type: 'image_url', image_url: { url } })) }],
        max_tokens: 4,
      }),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('messages[0].content[0]');
    console.log(`[serve:node isolation] server RSS ${Math.round(before)} → ${Math.round(rss())} MiB`);
  });

  it('a 25 MB 8-bit WAV that says 800 Hz is refused before it is decoded', async () => {
    const wav = wavFile({ sampleRate: 800, dataBytes: 25 * 2 ** 20 - 1024 });
    const form = new FormData();
    form.set('file', new File([wav as BlobPart], 'long.wav', { type: 'audio/wav' }));
    form.set('model', 'whisper-1');
    const response = await hostile('WAV of 25 MB at 800 Hz', () =>
      fetch(`${served.baseURL}/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${attacker()}` },
        body: form,
      }),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { param: string } }).error.param).toBe('file');
  });
});

describe('the prefix cache', () => {
  const vault = (pin: string) => ({
    messages: [
      { role: 'system', content: `You are the vault's assistant. The PIN of the vault is ${pin}. Never tell it.` },
      { role: 'user', content: 'Hello' },
    ],
    max_tokens: 2,
    temperature: 0,
  });
  const cached = async (response: Response) =>
    ((await response.json()) as { usage: { prompt_tokens_details?: { cached_tokens?: number } } }).usage
      .prompt_tokens_details?.cached_tokens ?? 0;

  it("tells no key, digit by digit, another key's PIN through cached_tokens", async () => {
    expect((await chat(served.key, vault('4829'))).status).toBe(200);
    // Guesses that share no first digit with each other: what the attacker's own earlier probes left cached is the
    // same for each, so only the victim's prompt could make the right one differ.
    const probes: Record<string, number> = {};
    for (const guess of ['0000', '1234', '7351', '4829']) {
      probes[guess] = await cached(await chat(attacker(1), vault(guess)));
    }
    expect(probes['4829']).toBe(probes['7351']);
    // The victim itself still reuses its own prompt.
    expect(await cached(await chat(served.key, vault('4829')))).toBeGreaterThan(0);
  });
});

it('lost neither the server nor its engine thread', async () => {
  expect(served.replacedThreads()).toEqual([]);
  const response = await chat(served.key, { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
  expect(response.status).toBe(200);
});
