import { expect, test } from '@playwright/test';
import { E2E_ORIGIN } from '../../playwright.config.ts';
import { HELLO_REPLY, issueKey, openHarness, sayHello } from './harness-page.ts';
import { startServer, workerPort } from './servers.ts';

/** Keys never logged, /v1 only for this origin's own pages, and no remote code: a strict CSP works. */

test('no key is ever logged or echoed, even on errors', async ({ page, context }, info) => {
  test.skip(info.project.name === 'webgpu', 'the service worker’s logs are the same on either device: runs on wasm');
  const logged: string[] = [];
  page.on('console', (message) => logged.push(message.text()));
  page.on('worker', (worker) => worker.on('console', (message) => logged.push(message.text())));
  context.on('serviceworker', (worker) => worker.on('console', (message) => logged.push(message.text())));

  await openHarness(page, 'broken=amber-phoenix-4');
  const key = await issueKey(page);
  const { key: revoked, id } = await page.evaluate(async () => {
    const issued = await window.harness.lantern.keys.issue('to revoke');
    return { key: issued.key, id: issued.info.id };
  });
  await page.evaluate((keyId) => window.harness.lantern.keys.revoke(keyId), id);

  const bodies = await page.evaluate(
    async ({ good, bad }) => {
      const call = async (authorization: string, body: unknown) => {
        const response = await fetch('/v1/chat/completions', {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return `${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`;
      };
      const hello = { model: 'crimson-falcon-4', messages: [{ role: 'user', content: 'Hello' }] };
      return [
        await call(`Bearer ${good}`, hello),
        await call(`Bearer ${bad}`, hello), // revoked
        await call(`Bearer ${good}x`, hello), // unknown
        await call(`Bearer ${good}`, { ...hello, model: 'amber-phoenix-4' }), // a 500, logged by the service worker
        await call(`Bearer ${good}`, { ...hello, temperature: 9 }),
      ];
    },
    { good: key, bad: revoked },
  );
  expect(bodies.map((b) => b.slice(0, 3))).toEqual(['200', '401', '401', '500', '400']);
  expect(logged.some((line) => /could not be loaded/.test(line))).toBe(true); // the 500 was logged
  for (const secret of [key, revoked]) {
    const material = secret.slice(3, 20);
    expect(bodies.filter((b) => b.includes(material))).toEqual([]);
    expect(logged.filter((line) => line.includes(material))).toEqual([]);
  }
});

test('a page of another origin cannot reach /v1', async ({ page, context }, info) => {
  test.skip(info.project.name === 'webgpu', 'the service worker’s scope is the same on either device: runs on wasm');
  await openHarness(page);
  const key = await issueKey(page);
  // localhost and 127.0.0.1 are different origins: this page is not a client of Lantern's service worker.
  const stranger = await context.newPage();
  await stranger.goto(E2E_ORIGIN.replace('127.0.0.1', 'localhost') + '/models/tiny-chat/config.json');
  const outcome = await stranger.evaluate(
    async ({ origin, k }) => {
      try {
        const response = await fetch(`${origin}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'crimson-falcon-4', messages: [{ role: 'user', content: 'Hello' }] }),
        });
        // Lantern answers every request with an x-request-id; the static server behind it does not.
        return response.headers.has('x-request-id') ? `Lantern answered ${response.status}` : 'the network answered';
      } catch (error) {
        return `refused: ${(error as Error).name}`;
      }
    },
    { origin: E2E_ORIGIN, k: key },
  );
  // The request went past Lantern to the static server (or was refused outright): the service worker never saw it.
  expect(['the network answered', 'refused: TypeError']).toContain(outcome);
  expect(await page.evaluate(() => window.harness.runs.length)).toBe(0); // and no model ran for it
});

test('everything runs under a strict Content-Security-Policy: no remote code, no inline script', async ({
  page,
}, info) => {
  const csp = [
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "worker-src 'self'",
    "connect-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
  ].join('; ');
  const server = await startServer(workerPort(info.project.name === 'wasm' ? 4188 : 4189), {
    'Content-Security-Policy': csp,
  });
  const violations: string[] = [];
  page.on(
    'console',
    (message) => /Content[- ]Security[- ]Policy|Refused to/i.test(message.text()) && violations.push(message.text()),
  );
  page.on('worker', (worker) =>
    worker.on(
      'console',
      (message) => /Content[- ]Security[- ]Policy|Refused to/i.test(message.text()) && violations.push(message.text()),
    ),
  );
  try {
    await openHarness(page, '', server.origin);
    const key = await issueKey(page);
    expect(await sayHello(page, key)).toBe(HELLO_REPLY);
    const dimensions = await page.evaluate(
      async (k) =>
        (await window.harness.client(k).embeddings.create({ model: 'jade-mole-4', input: 'csp' })).data[0]!.embedding
          .length,
      key,
    );
    expect(dimensions).toBe(64);
    // Structured output runs XGrammar's WebAssembly in the engine worker: no eval, no new Function.
    const json = await page.evaluate(async (k) => {
      const completion = await window.harness.client(k).chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Hello' }],
        temperature: 0,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'csp',
            schema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          },
        },
      });
      return JSON.parse(completion.choices[0]!.message.content!) as unknown;
    }, key);
    expect(json).toEqual({ ok: expect.any(Boolean) });
    expect(violations).toEqual([]);
  } finally {
    await server.close();
  }
});

test('site data cleared under the service worker: the old keys are refused (401, not 500), a new key works', async ({
  page,
  context,
}, info) => {
  test.skip(info.project.name !== 'wasm', 'IndexedDB is the same on either project: runs once');
  await openHarness(page);
  const old = await issueKey(page);
  expect(await sayHello(page, old)).toBe(HELLO_REPLY);
  // What "Clear site data" does: Chromium closes every connection to the origin's databases (their `close` event).
  const cdp = await context.newCDPSession(page);
  await cdp.send('Storage.clearDataForOrigin', { origin: E2E_ORIGIN, storageTypes: 'indexeddb' });
  expect(await sayHello(page, old)).toBe('AuthenticationError invalid_api_key');
  const fresh = await issueKey(page, 'after clearing');
  expect(await sayHello(page, fresh)).toBe(HELLO_REPLY);
});
