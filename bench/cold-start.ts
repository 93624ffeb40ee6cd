/**
 * Cold start in Chromium on WebAssembly: how long a page takes, from its navigation, until
 * `/v1/models` answers and until the first token of a chat completion on the bundled model arrives; on a first visit
 * (a fresh profile: no service worker, empty caches) and on the visit after it (a reload: everything cached). Each run
 * gets a fresh browser context, so every first visit is a real one. Also what the first visit left in Cache Storage
 * (the service worker's precache and the engine worker's onnxruntime-web build), which is what a visitor downloads.
 *
 * A section of `npm run bench` and of its smoke pass (bench/run.ts), on the dist-e2e build; it also runs alone.
 */
import { chromium, type Browser, type Page } from '@playwright/test';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Harness } from '../test/e2e/harness.ts';
import { startServer } from '../test/e2e/servers.ts';
import { CHAT } from './models.ts';
import { median, round } from './stats.ts';

/** The targets for a cached visit on WebAssembly, in ms from the page's navigation. */
export const COLD_START_TARGETS = { modelsMs: 300, firstTokenMs: 1500 } as const;

/**
 * One visit, in ms from navigation start: until the page's `startLocalAPI()` resolved (the service worker controls
 * the page), until `/v1/models` answered, and until the first token arrived.
 */
interface Visit {
  readyMs: number;
  modelsMs: number;
  firstTokenMs: number;
}

export interface ColdStartResults {
  runs: number;
  /** Medians over the runs. */
  firstVisit: Visit;
  cached: Visit;
  /** What the first visit left in Cache Storage, MB, by cache (the largest first) and in all. */
  storedMB: { total: number; byCache: Record<string, number> };
  /** Every run's visits, for the spread. */
  samples: { firstVisit: Visit; cached: Visit }[];
}

/** As the browser suite launches Debian's Chromium (playwright.config.ts), without WebGPU: the wasm path. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Waits for the harness (its `startLocalAPI` done), lists the models, then streams a short chat completion. */
export function visit(page: Page): Promise<Visit> {
  return page.evaluate(async (model) => {
    while (!(window as { harness?: unknown }).harness) await new Promise((r) => setTimeout(r, 5));
    const readyMs = performance.now();
    const { harness } = window as unknown as { harness: Harness };
    const client = harness.client((await harness.lantern.keys.issue('cold start')).key);
    await client.models.list();
    const modelsMs = performance.now(); // performance.now() counts from this document's navigation
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: 'Hello' }],
      stream: true,
      max_tokens: 4,
    });
    let firstTokenMs = NaN;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content && Number.isNaN(firstTokenMs)) firstTokenMs = performance.now();
    }
    return { readyMs, modelsMs, firstTokenMs };
  }, CHAT);
}

/** Bytes of every response in each of the origin's Cache Storage caches. */
function storedBytes(page: Page): Promise<Record<string, number>> {
  return page.evaluate(async () => {
    const byCache: Record<string, number> = {};
    for (const name of await caches.keys()) {
      const cache = await caches.open(name);
      let bytes = 0;
      for (const request of await cache.keys()) bytes += (await (await cache.match(request))!.blob()).size;
      byCache[name] = bytes;
    }
    return byCache;
  });
}

const medianVisit = (visits: Visit[]): Visit => ({
  readyMs: round(median(visits.map((v) => v.readyMs)), 0),
  modelsMs: round(median(visits.map((v) => v.modelsMs)), 0),
  firstTokenMs: round(median(visits.map((v) => v.firstTokenMs)), 0),
});

/** The server the bench serves the dist-e2e build from: of its own, cross-origin isolated as bench/run.ts serves it. */
const PORT = 4192;
const HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/**
 * `runs` first visits of the harness page, each followed by a reload, in one Chromium without WebGPU.
 *
 * @example
 * console.log(coldStartTable(await coldStartBench(5, console.log)));
 */
export async function coldStartBench(runs: number, log: (message: string) => void): Promise<ColdStartResults> {
  const server = await startServer(PORT, HEADERS);
  const browser: Browser = await chromium
    .launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
    .catch(async (error: unknown) => {
      await server.close();
      throw error;
    });
  const samples: ColdStartResults['samples'] = [];
  let stored: Record<string, number> = {};
  try {
    for (let run = 0; run < runs; run++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on('pageerror', (error) => log(`cold start: page error: ${error.message}`));
      await page.goto(`${server.origin}/test/e2e/harness.html`);
      const firstVisit = await visit(page);
      stored = await storedBytes(page);
      await page.reload();
      const cached = await visit(page);
      await context.close();
      samples.push({ firstVisit, cached });
      log(`cold start ${run + 1}/${runs}: first visit ${fmt(firstVisit)}; cached ${fmt(cached)}`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
  const mb = (bytes: number) => round(bytes / 1e6, 1);
  const byCache = Object.fromEntries(
    Object.entries(stored)
      .sort(([, a], [, b]) => b - a)
      .map(([name, bytes]) => [name, mb(bytes)]),
  );
  const total = mb(Object.values(stored).reduce((a, b) => a + b, 0));
  return {
    runs,
    firstVisit: medianVisit(samples.map((s) => s.firstVisit)),
    cached: medianVisit(samples.map((s) => s.cached)),
    storedMB: { total, byCache },
    samples: samples.map((s) => ({ firstVisit: medianVisit([s.firstVisit]), cached: medianVisit([s.cached]) })),
  };
}

const fmt = (v: Visit) =>
  `ready ${Math.round(v.readyMs)} ms, /v1/models ${Math.round(v.modelsMs)} ms, first token ${Math.round(v.firstTokenMs)} ms`;

/** The section's table for the bench's markdown. */
export function coldStartTable(results: ColdStartResults): string {
  const { firstVisit, cached, storedMB } = results;
  const target = (ok: boolean) => (ok ? '✓' : '✗');
  const { modelsMs, firstTokenMs } = COLD_START_TARGETS;
  const caches = Object.entries(storedMB.byCache)
    .map(([name, size]) => `${name} ${size}`)
    .join(', ');
  return [
    `| Measure (Chromium, wasm, bundled ${CHAT}; median of ${results.runs}) | First visit | Cached |`,
    '| --- | --- | --- |',
    `| The page's \`startLocalAPI()\` resolved, ms from navigation | ${firstVisit.readyMs} | ${cached.readyMs} |`,
    `| \`/v1/models\` answered, ms from navigation (target cached ≤ ${modelsMs}) | ${firstVisit.modelsMs} | ` +
      `${cached.modelsMs} ${target(cached.modelsMs <= modelsMs)} |`,
    `| First token, ms from navigation (target cached ≤ ${firstTokenMs}) | ${firstVisit.firstTokenMs} | ` +
      `${cached.firstTokenMs} ${target(cached.firstTokenMs <= firstTokenMs)} |`,
    `| Stored by the first visit, MB (${caches}) | ${storedMB.total} | |`,
  ].join('\n');
}

// Alone: `tsx bench/cold-start.ts [--runs N]` (default 5).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--runs');
  const started = performance.now();
  const results = await coldStartBench(at > 0 ? Number(process.argv[at + 1]) : 5, (m) => console.log(`[bench] ${m}`));
  console.log(`\n${coldStartTable(results)}\n\n${JSON.stringify(results)}`);
  console.log(`[bench] cold start: ${round((performance.now() - started) / 1000, 1)} s`);
}
