import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { E2E_ORIGIN } from '../../playwright.config.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';
import { HELLO_REPLY, issueKey, openHarness, sayHello } from './harness-page.ts';

/**
 * A public ID whose local candidates cannot run on this browser (web-llm in half precision: no WebGPU on the wasm
 * path, no shader-f16 on SwiftShader) is answered by its remote candidate: Lantern's own Node server, in another
 * process, on another origin (it allows this one). The service worker forwards with `fetch`; the engine worker runs
 * nothing. Needs both projects: on WebGPU the local candidate is ruled out by its features, on wasm by the device.
 */
interface ChatReference {
  messages: { role: 'user'; content: string }[];
  greedy_text: string;
}
const refs: ChatReference[] = JSON.parse(readFileSync('public/models/tiny-chat/reference.json', 'utf8'));
const count = refs.find((r) => r.messages.at(-1)!.content === 'Count to 10.')!;

let upstream: Upstream;
test.beforeAll(async () => {
  upstream = await startUpstream({ mode: 'lantern', corsOrigin: E2E_ORIGIN });
});
test.afterAll(() => upstream?.kill());

const remoteQuery = (baseURL: string) =>
  `remote=far-falcon&upstream=${encodeURIComponent(baseURL)}&upstreamKey=${upstream.key}`;

test('a model this device cannot run streams token by token from the server, through the service worker', async ({
  page,
}) => {
  await openHarness(page, remoteQuery(upstream.baseURL));
  const key = await issueKey(page);
  const result = await page.evaluate(
    async ({ k, messages }) => {
      const { data: stream, response } = await window.harness
        .client(k)
        .chat.completions.create({ model: 'far-falcon', messages, temperature: 0, stream: true })
        .withResponse();
      const chunks: { content: string; model: string; at: number }[] = [];
      for await (const chunk of stream) {
        chunks.push({ content: chunk.choices[0]?.delta.content ?? '', model: chunk.model, at: performance.now() });
      }
      return { chunks, backend: response.headers.get('x-lantern-backend') };
    },
    { k: key, messages: count.messages },
  );
  expect(result.chunks.map((c) => c.content).join('')).toBe(count.greedy_text);
  expect(result.chunks.filter((c) => c.content).length).toBeGreaterThan(10); // token by token, not one block
  expect(new Set(result.chunks.map((c) => c.model))).toEqual(new Set(['far-falcon']));
  // A key holder learns that a server answered, not where it is; the page, which configured it, keeps its key (below).
  expect(result.backend).toMatch(/^remote:\d+$/);
  await upstream.waitFor('request', (m) => m.path === '/v1/chat/completions');

  // The engine worker ran nothing, and the page knows which candidate answers the ID.
  expect(await page.evaluate(() => window.harness.runs.length)).toBe(0);
  await expect
    .poll(() =>
      page.evaluate(async () => (await window.harness.lantern.models()).find((m) => m.id === 'far-falcon')!.servedBy),
    )
    .toBe(`remote:crimson-falcon-4@${upstream.baseURL}`);
  const chain = await page.evaluate(async () =>
    (await window.harness.lantern.models()).find((m) => m.id === 'far-falcon')!.candidates.map((c) => c.engine),
  );
  expect(chain).toEqual(['remote']);
});

test('a server that cannot be reached is a 503 the SDK sees; the other models answer the next request', async ({
  page,
}, info) => {
  test.skip(
    info.project.name === 'webgpu',
    'the 503 is the service worker’s, the same on either device: runs on wasm; the test above rules out WebGPU’s candidate',
  );
  // A port where nothing listens: the server is gone.
  await openHarness(page, remoteQuery('http://127.0.0.1:9/v1'));
  const key = await issueKey(page);
  const outcome = await page.evaluate(async (k) => {
    try {
      await window.harness.client(k).chat.completions.create({
        model: 'far-falcon',
        messages: [{ role: 'user', content: 'Hello' }],
      });
      return 'answered';
    } catch (error) {
      const status = (error as { status?: number }).status;
      const retry = (error as { headers?: Headers }).headers?.get('x-should-retry');
      return `${window.harness.describeError(error)} ${status} retry=${retry}`;
    }
  }, key);
  expect(outcome).toBe('InternalServerError upstream_unavailable 503 retry=true');
  expect(await sayHello(page, key)).toBe(HELLO_REPLY);
});
