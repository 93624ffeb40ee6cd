/**
 * `npm run bench`: what the /v1 path costs over the engines it wraps. Each figure is measured against the direct
 * engine call in the same run, same model, same device: in Node (the handler, SSE and the SDK), in Chromium on
 * WebAssembly and on WebGPU (SwiftShader), and in Firefox and WebKit on WebAssembly (neither has WebGPU here), through
 * the service worker and the engine worker. In Node too, llama.cpp against transformers.js on the same weights
 * (bench/engines.ts). Prints a table and writes bench/results/latest.json; the README's performance section quotes it.
 *
 * `npm run bench:smoke` (`tsx bench/run.ts --smoke`, part of `npm test`): every section of the same run, each measure
 * once on a few tokens, and the scripts of bench/ that run alone on a few schemas, so that a bench broken by a change
 * fails the tests rather than the next `npm run bench`. Code that one measure runs for several models or devices runs
 * for one there (the cold start and memory measures on wasm, not WebGPU; the browser engines on one model). It asserts no timing, writes nothing, and uses the dist-e2e
 * build that `npm run test:e2e` made. Any section that throws, or a figure that comes out as no number (NaN), fails
 * either run with a non-zero exit.
 */
import { chromium, type Browser, type Page } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Tab } from '../test/e2e/browsers.ts';
import { firefoxTab, startFirefox } from '../test/e2e/firefox-driver.ts';
import { startServer } from '../test/e2e/servers.ts';
import { launchWebKitDriver, webkitTab } from '../test/e2e/webkit-driver.ts';
import type { Harness } from '../test/e2e/harness.ts';
import { HAS_STORIES_260K, STORIES_260K } from '../test/support/lantern.ts';
import type { Bench } from './browser/bench-page.ts';
import { replyRoomAt } from './context.ts';
import { batchingRows, measureBatching, type BatchingPlan, type BatchingRunner } from './batching.ts';
import {
  CONSTRAINED_OUTPUT_PLAN,
  CONSTRAINED_OUTPUT_SMOKE_PLAN,
  constrainedOutputBench,
  constrainedOutputTable,
} from './constrained-output.ts';
import {
  BROWSER_ENGINES_PLAN,
  BROWSER_ENGINES_SMOKE_PLAN,
  browserEnginesBench,
  browserEnginesTable,
} from './browser-engines.ts';
import { enginesBench, enginesTable, ENGINES_PLAN, ENGINES_SMOKE_PLAN } from './engines.ts';
import {
  FILE_SEARCH_PLAN,
  FILE_SEARCH_SMOKE_PLAN,
  fileSearchBrowser,
  fileSearchNode,
  fileSearchTable,
} from './file-search.ts';
import { SPECULATION_PLAN, SPECULATION_SMOKE_PLAN, speculationBench, speculationTable } from './speculation.ts';
import { decode, delivery, embeddings, firstToken, type ChatSamples, type EmbeddingSamples } from './measures.ts';
import { coldStartBench, coldStartTable, visit } from './cold-start.ts';
import { CHAT, REALISTIC, STORIES } from './models.ts';
import { nodeBench } from './node-bench.ts';
import {
  BUNDLED_CHAT,
  type ChatFigures,
  type RealisticPlan,
  REALISTIC_PLAN,
  REALISTIC_SMOKE_PLAN,
  realisticBench,
  realisticInBrowser,
  realisticTable,
} from './realistic-bench.ts';
import { REALISTIC_URL } from './realistic-model.ts';
import { REMOTE_PLAN, REMOTE_SMOKE_PLAN, remoteBench, remoteTable } from './remote-bench.ts';
import { ENDLESS_MESSAGES } from './requests.ts';
import { RESPONSES_PLAN, RESPONSES_SMOKE_PLAN, responsesBench } from './responses.ts';
import { SCHEMA_CORPUS_PLAN, SCHEMA_CORPUS_SMOKE_PLAN, schemaCorpusBench, schemaCorpusTable } from './schema-corpus.ts';
import { STRUCTURED_OUTPUT_PLAN, STRUCTURED_OUTPUT_SMOKE_PLAN, structuredOutputBench } from './structured-output.ts';
import { TOOL_CALLING_PLAN, TOOL_CALLING_SMOKE_PLAN, toolCallingBench } from './tool-calling.ts';
import { SPEECH_PLAN, SPEECH_SMOKE_PLAN, speechBrowser, speechNode, speechTable } from './speech.ts';
import { REALTIME_PLAN, REALTIME_SMOKE_PLAN, realtimeNode, realtimeTable } from './realtime.ts';
import {
  TRANSCRIPTION_PLAN,
  TRANSCRIPTION_SMOKE_PLAN,
  transcriptionBrowser,
  transcriptionNode,
  transcriptionTable,
} from './transcription.ts';
import { VISION_PLAN, VISION_SMOKE_PLAN, visionBrowser, visionNode, visionTable } from './vision.ts';
import { decodeRate, median, round } from './stats.ts';

/** `--smoke`: the smoke pass (see above). */
const SMOKE = process.argv.includes('--smoke');

declare global {
  interface Window {
    bench: Bench;
  }
}

/**
 * How much work each environment gets: [tokens, runs] of the decode and first-token measures, [inputs, runs] of the
 * embeddings, the concurrency measures (bench/batching.ts), and refused requests timed for the service worker's round
 * trip. SwiftShader runs the same model about ten times slower than WebAssembly.
 */
interface Plan {
  decode: readonly [number, number];
  ttft: readonly [number, number];
  embed: readonly (readonly [number, number])[];
  batching: BatchingPlan;
  roundTrips: number;
}

/** The stream counts of every plan: 1, 2, 4 and 8 concurrent streams. */
const STREAMS = [1, 2, 4, 8];

const FULL_PLANS: Record<'node' | 'wasm' | 'webgpu', Plan> = {
  node: {
    decode: [128, 25],
    ttft: [2, 30],
    embed: [
      [1, 20],
      [16, 10],
      [256, 3],
    ],
    batching: {
      streams: STREAMS,
      streamTokens: 64,
      rounds: 3,
      load: { streams: 4, tokens: 256, probes: 5 },
      choices: { n: 4, tokens: 64, pairs: 5 },
    },
    roundTrips: 50,
  },
  wasm: {
    decode: [128, 15],
    ttft: [2, 20],
    embed: [
      [1, 10],
      [16, 5],
      [256, 2],
    ],
    batching: {
      streams: STREAMS,
      streamTokens: 32,
      rounds: 3,
      load: { streams: 4, tokens: 128, probes: 5 },
      choices: { n: 4, tokens: 32, pairs: 5 },
    },
    roundTrips: 50,
  },
  webgpu: {
    decode: [48, 4],
    ttft: [2, 10],
    embed: [
      [1, 5],
      [16, 3],
      [256, 1],
    ],
    batching: {
      streams: STREAMS,
      streamTokens: 8,
      rounds: 1,
      load: { streams: 4, tokens: 16, probes: 2 },
      choices: { n: 4, tokens: 8, pairs: 1 },
    },
    roundTrips: 50,
  },
};

/** The smoke pass: every measure of every environment once, on a few tokens and inputs. */
const SMOKE_PLAN: Plan = {
  decode: [4, 1],
  ttft: [2, 1],
  embed: [
    [1, 1],
    [4, 1],
  ],
  batching: {
    streams: [1, 4],
    streamTokens: 2,
    rounds: 1,
    load: { streams: 2, tokens: 8, probes: 1 },
    choices: { n: 4, tokens: 2, pairs: 1 },
  },
  roundTrips: 2,
};
const PLANS = SMOKE ? { node: SMOKE_PLAN, wasm: SMOKE_PLAN, webgpu: SMOKE_PLAN } : FULL_PLANS;

type Runner = BatchingRunner & {
  chat(model: string, tokens: number, count: number): Promise<ChatSamples>;
  embeddings(size: number, count: number): Promise<EmbeddingSamples>;
};

/** Where the benchmark server serves stories260K (../shared/models) to the browser, when this machine has it. */
const STORIES_URL = '/shared-models/stories260K';

const log = (message: string) => console.log(`[bench] ${message}`);

/**
 * The most tokens a reply to the benchmarks' prompt can have on each chat model (its window less the prompt, read
 * from its own files): no measure asks a model for more than its window.
 */
const ROOM: Record<string, number> = {
  [CHAT]: await replyRoomAt(BUNDLED_CHAT, ENDLESS_MESSAGES),
  ...(HAS_STORIES_260K && { [STORIES]: await replyRoomAt(STORIES_260K, ENDLESS_MESSAGES) }),
};
/** `tokens`, or fewer when `model`'s window has no room for that many (said in the log). */
function fit(model: string, tokens: number): number {
  const room = ROOM[model];
  if (room === undefined) throw new Error(`No context window known for ${model}.`);
  if (tokens <= room) return tokens;
  log(`${model}: ${tokens} tokens cut to the ${room} its window leaves after the prompt`);
  return room;
}

/** `tokens`, or fewer when one of the chat models' windows has no room for that many. */
const fitAll = (tokens: number) => Math.min(...Object.keys(ROOM).map((model) => fit(model, tokens)));

/** The Node sections' plans. */
const STRUCTURED = SMOKE ? STRUCTURED_OUTPUT_SMOKE_PLAN : STRUCTURED_OUTPUT_PLAN;
const SCHEMA_KINDS = SMOKE ? SCHEMA_CORPUS_SMOKE_PLAN : SCHEMA_CORPUS_PLAN;
const RESPONSES = SMOKE ? RESPONSES_SMOKE_PLAN : RESPONSES_PLAN;
const REMOTE = SMOKE ? REMOTE_SMOKE_PLAN : REMOTE_PLAN;
const TOOL_CALLING = SMOKE ? TOOL_CALLING_SMOKE_PLAN : TOOL_CALLING_PLAN;
const REALISTIC_SECTION = SMOKE ? REALISTIC_SMOKE_PLAN : REALISTIC_PLAN;
const CONSTRAINED = SMOKE ? CONSTRAINED_OUTPUT_SMOKE_PLAN : CONSTRAINED_OUTPUT_PLAN;
const TRANSCRIPTION = SMOKE ? TRANSCRIPTION_SMOKE_PLAN : TRANSCRIPTION_PLAN;
const SPEECH = SMOKE ? SPEECH_SMOKE_PLAN : SPEECH_PLAN;
const REALTIME = SMOKE ? REALTIME_SMOKE_PLAN : REALTIME_PLAN;
const VISION = SMOKE ? VISION_SMOKE_PLAN : VISION_PLAN;
const FILE_SEARCH = SMOKE ? FILE_SEARCH_SMOKE_PLAN : FILE_SEARCH_PLAN;
const ENGINES = SMOKE ? ENGINES_SMOKE_PLAN : ENGINES_PLAN;

async function measureChat(name: string, plan: Plan, runner: Runner, model: string) {
  log(`${name}: decode`);
  const chat = await runner.chat(model, fit(model, plan.decode[0]), plan.decode[1]);
  log(`${name}: time to first token`);
  const first = await runner.chat(model, fit(model, plan.ttft[0]), plan.ttft[1]);
  const batching = await measureBatching(log, name, runner, model, plan.batching, (tokens) => fit(model, tokens));
  return { decode: decode(chat), delivery: delivery(chat), firstToken: firstToken(first), batching };
}

async function measureEmbeddings(name: string, plan: Plan, runner: Runner) {
  const embed: Record<string, ReturnType<typeof embeddings>> = {};
  for (const [size, count] of plan.embed) {
    log(`${name}: embeddings × ${size}`);
    embed[size] = embeddings(await runner.embeddings(size, count));
  }
  return embed;
}

/** Everything on the bundled models; the chat measures again on stories260K when this machine has it. */
async function measure(name: string, plan: Plan, runner: Runner) {
  const bundled = {
    ...(await measureChat(name, plan, runner, CHAT)),
    embeddings: await measureEmbeddings(name, plan, runner),
  };
  const stories = HAS_STORIES_260K ? await measureChat(`${name}, stories260K`, plan, runner, STORIES) : undefined;
  return { bundled, stories };
}

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--enable-blink-features=ForceEagerMeasureMemory',
];

async function launch(webgpu: boolean): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: webgpu ? [...CHROMIUM_ARGS, '--enable-unsafe-webgpu'] : CHROMIUM_ARGS,
  });
}

async function open(page: Page, url: string, ready: string) {
  page.on('pageerror', (error) => log(`page error: ${error.message}`));
  await page.goto(url);
  await page.waitForFunction(ready, undefined, { timeout: 120_000 });
}

/** Page load to the first /v1/models answer and to the first token: on a first visit, then after a reload. */
async function coldStart(browser: Browser, origin: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const firstAnswers = async () => {
    const { modelsMs, firstTokenMs } = await visit(page);
    return { modelsMs: round(modelsMs, 0), firstTokenMs: round(firstTokenMs, 0) };
  };
  await page.goto(`${origin}/test/e2e/harness.html`);
  const uncached = await firstAnswers();
  await page.reload();
  const cached = await firstAnswers();
  await context.close();
  return { uncached, cached };
}

/** All memory of the tabs (and the one engine worker) with one tab open, then two. */
async function memory(browser: Browser, origin: string) {
  const context = await browser.newContext();
  const warm = (page: Page) =>
    page.evaluate(async () => {
      const { harness } = window as unknown as { harness: Harness };
      const client = harness.client((await harness.lantern.keys.issue('memory')).key);
      await client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Hello' }],
      });
      await client.embeddings.create({ model: 'jade-mole-4', input: 'warm' });
      return harness.memory();
    });
  const first = await context.newPage();
  await open(first, `${origin}/test/e2e/harness.html`, 'window.harness !== undefined');
  const one = (await warm(first))!;
  const second = await context.newPage();
  await open(second, `${origin}/test/e2e/harness.html`, 'window.harness !== undefined');
  const secondTab = (await warm(second))!;
  const firstTab = (await first.evaluate(() =>
    (window as unknown as { harness: { memory(): Promise<number> } }).harness.memory(),
  ))!;
  await context.close();
  return {
    oneTabMB: round(one / 1e6, 1),
    twoTabsMB: round((firstTab + secondTab) / 1e6, 1),
    ratio: round((firstTab + secondTab) / one, 2),
  };
}

/** The measures, run in the bench page of `tab` (a Playwright page, or Firefox's or WebKit's portable tab). */
function benchRunner(tab: Tab): Runner {
  return {
    chat: (model, tokens, count) =>
      tab.evaluate((a) => window.bench.chat(a.model, a.tokens, a.count), { model, tokens, count }),
    embeddings: (size, count) => tab.evaluate(([s, c]) => window.bench.embeddings(s!, c!), [size, count]),
    concurrent: (model, streams, tokens) =>
      tab.evaluate((a) => window.bench.concurrent(a.model, a.streams, a.tokens), { model, streams, tokens }),
    underLoad: (model, streams, tokens) =>
      tab.evaluate((a) => window.bench.underLoad(a.model, a.streams, a.tokens), { model, streams, tokens }),
    choices: (model, n, tokens) =>
      tab.evaluate((a) => window.bench.choices(a.model, a.n, a.tokens), { model, n, tokens }),
  };
}

/** The bench page's address on `path`, with stories260K and the realistic model where asked. */
function benchURL(origin: string, path: 'wasm' | 'webgpu', realistic?: RealisticPlan): string {
  const stories = HAS_STORIES_260K ? `&stories=${STORIES_URL}` : '';
  const query = `device=${path}${stories}${realistic ? `&realistic=${REALISTIC_URL}` : ''}` + (SMOKE ? '&smoke=1' : '');
  return `${origin}/bench/browser/bench.html?${query}`;
}

/** A tab of Firefox (puppeteer-core) or WebKit (WebKitGTK over WebDriver), as the browser suite drives them. */
async function otherBrowser(
  name: 'firefox' | 'webkit',
): Promise<{ tab: Tab; version: string; close(): Promise<void> }> {
  if (name === 'firefox') {
    const firefox = await startFirefox();
    const tab = firefoxTab(await firefox.newPage(), undefined);
    return { tab, version: await firefox.version(), close: () => firefox.close() };
  }
  const driver = await launchWebKitDriver();
  const session = await driver.newSession().catch(async (error: unknown) => {
    await driver.close();
    throw error;
  });
  const close = async () => {
    await session.quit();
    await driver.close();
  };
  return { tab: await webkitTab(session, undefined), version: session.version, close };
}

/**
 * The bench in Firefox or WebKit, on WebAssembly: the chat, embeddings and concurrency measures and the service
 * worker's round trip, against the engine in a worker of the same page, as in Chromium.
 */
async function otherBrowserBench(name: 'firefox' | 'webkit', origin: string, realistic?: RealisticPlan) {
  const browser = await otherBrowser(name);
  try {
    const { tab } = browser;
    await tab.goto(benchURL(origin, 'wasm', realistic));
    await tab.waitForFunction(() => window.bench !== undefined, undefined, { timeout: 120_000 });
    const device = await tab.evaluate(() => window.bench.device() ?? null);
    const results = await measure(`${name}, wasm`, PLANS.wasm, benchRunner(tab));
    log(`${name}: the service worker's round trip`);
    const trips = await tab.evaluate((n) => window.bench.roundTrip(n), PLANS.wasm.roundTrips);
    const decodeBreakdown = await whereDecodeTimeGoes(name, tab, PLANS.wasm, results.bundled.decode);
    // The path's cost per token against a token that costs what a real model's does.
    let realisticDecode: Pick<ChatFigures, 'decode' | 'delivery'> | undefined;
    if (realistic) {
      log(`${name}: the realistic model's decode, the whole path against the engine in a worker`);
      const chat = await benchRunner(tab).chat(REALISTIC, ...realistic.browserDecode);
      realisticDecode = { decode: decode(chat), delivery: delivery(chat) };
    }
    return {
      device,
      version: browser.version,
      bundled: { ...results.bundled, roundTripP50: round(median(trips)), decodeBreakdown },
      stories: results.stories,
      realisticDecode,
    };
  } finally {
    await browser.close();
  }
}

/**
 * Where the decode cost of the path goes: the engine's pace during /v1 against its pace called directly, when the
 * page does not read the stream until it is over, when it reads its raw bytes, and through the SDK.
 */
async function whereDecodeTimeGoes(name: string, tab: Tab, plan: Plan, decoded: ReturnType<typeof decode>) {
  log(`${name}: where decode time goes`);
  const paces = { raw: [] as number[], unread: [] as number[] };
  for (let i = 0; i < plan.decode[1]; i++) {
    for (const mode of ['raw', 'unread'] as const) {
      const run = await tab.evaluate(
        ([t, m]) => window.bench.variant(t as number, m as 'raw' | 'unread'),
        [fit(CHAT, plan.decode[0]), mode],
      );
      paces[mode].push(decodeRate(run.generated));
    }
  }
  const direct = decoded.directTokensPerSecond;
  return {
    unread: round(median(paces.unread) / direct, 3),
    raw: round(median(paces.raw) / direct, 3),
    sdk: round(decoded.generatedTokensPerSecond / direct, 3),
  };
}

/** The bench in one Chromium, on `path`; with `realistic` (its plan), the realistic model's chat measures too. */
async function browserBench(path: 'wasm' | 'webgpu', origin: string, realistic?: RealisticPlan) {
  const browser = await launch(path === 'webgpu');
  try {
    const page = await browser.newPage();
    await open(page, benchURL(origin, path, realistic), 'window.bench !== undefined');
    const device = await page.evaluate(() => window.bench.device());
    const runner = benchRunner(page);
    const results = await measure(path, PLANS[path], runner);
    const realisticWasm = realistic && (await realisticInBrowser(log, runner, realistic));
    log(`${path}: the service worker's round trip, and the key check`);
    const trips = await page.evaluate((n) => window.bench.roundTrip(n), PLANS[path].roundTrips);
    const roundTripP50 = round(median(trips));
    const unknownKey = `lt_${'x'.repeat(43)}`;
    const keyCheckP50 = round(
      median(
        await page.evaluate(
          ([n, key]) => window.bench.roundTrip(n as number, key as string),
          [PLANS[path].roundTrips, unknownKey],
        ),
      ) - roundTripP50,
    );
    const decodeBreakdown = await whereDecodeTimeGoes(path, page, PLANS[path], results.bundled.decode);
    await page.close();
    // The smoke pass runs these two once, on wasm: the same code in a fresh context, where SwiftShader would compile
    // every shader again (about a minute).
    const again = SMOKE && path === 'webgpu';
    if (again) log(`${path}: cold start and memory left to the wasm path (smoke pass: the same code)`);
    else log(`${path}: cold start`);
    const cold = again ? undefined : await coldStart(browser, origin);
    if (!again) log(`${path}: memory, one tab and two`);
    const mem = again ? undefined : await memory(browser, origin);
    return {
      device,
      chromium: browser.version(),
      bundled: { ...results.bundled, roundTripP50, keyCheckP50, decodeBreakdown, coldStart: cold, memory: mem },
      stories: results.stories,
      realisticWasm,
    };
  } finally {
    await browser.close();
  }
}

type Results = Awaited<ReturnType<typeof measureChat>> & {
  embeddings?: Awaited<ReturnType<typeof measureEmbeddings>>;
  roundTripP50?: number;
  keyCheckP50?: number;
  decodeBreakdown?: { unread: number; raw: number; sdk: number };
  coldStart?: Awaited<ReturnType<typeof coldStart>>;
  memory?: Awaited<ReturnType<typeof memory>>;
};

function table(columns: Record<string, Results>): string {
  const names = Object.keys(columns);
  // A row none of the columns measured (embeddings on stories260K, say) is left out.
  const row = (label: string, cell: (r: Results) => string | number | null | undefined) => {
    const cells = names.map((n) => cell(columns[n]!) ?? '–');
    return cells.every((c) => c === '–') ? [] : [`| ${label} | ${cells.join(' | ')} |`];
  };
  const target = (ok: boolean) => (ok ? '✓' : '✗');
  // The sizes measured: every plan has the same ones.
  const sizes = PLANS.node.embed.map(([size]) => size);
  const largest = String(Math.max(...sizes));
  return [
    `| Measure | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    ...row(
      'Decode throughput, /v1 ÷ direct (target ≥ 0.97)',
      (r) => `${r.decode.ratio} ${target(r.decode.ratio >= 0.97)}`,
    ),
    ...row('Decode time added by /v1, ms per token', (r) => r.decode.addedMsPerToken),
    ...row(
      'Decode tokens/s: direct → /v1 (the engine during /v1)',
      (r) =>
        `${r.decode.directTokensPerSecond} → ${r.decode.pathTokensPerSecond} (${r.decode.generatedTokensPerSecond})`,
    ),
    ...row(
      'First token, ms added by /v1, p50 (target ≤ 5) / p95',
      (r) => `${r.firstToken.addedP50} ${target(r.firstToken.addedP50 <= 5)} / ${r.firstToken.addedP95}`,
    ),
    ...row('First token, direct, ms p50', (r) => r.firstToken.directP50),
    ...row("The browser's own service-worker round trip (a refused request), ms p50", (r) => r.roundTripP50),
    ...row('First token, ms added beyond that round trip, p50', (r) =>
      r.roundTripP50 === undefined ? null : round(r.firstToken.addedP50 - r.roundTripP50),
    ),
    ...row('Of which the key check (SHA-256, IndexedDB read in the service worker), ms p50', (r) => r.keyCheckP50),
    ...row('Engine pace during /v1 ÷ direct: page not reading / reading raw bytes / through the SDK', (r) =>
      r.decodeBreakdown ? `${r.decodeBreakdown.unread} / ${r.decodeBreakdown.raw} / ${r.decodeBreakdown.sdk}` : null,
    ),
    ...row('Events per token', (r) => r.delivery.eventsPerToken),
    ...row(
      'Token generated → received by the SDK, ms p50 / p95',
      (r) => `${r.delivery.delayP50} / ${r.delivery.delayP95}`,
    ),
    ...sizes
      .map(String)
      .flatMap((size) =>
        row(
          `Embeddings × ${size}, /v1 ÷ direct speed`,
          (r) => r.embeddings?.[size] && `${r.embeddings[size].ratio} (${r.embeddings[size].pathMs} ms)`,
        ),
      ),
    ...row(
      `Embeddings × ${largest}, one request ÷ ${largest} requests`,
      (r) => r.embeddings?.[largest] && `${r.embeddings[largest].batchedSpeedup}× faster`,
    ),
    ...batchingRows(PLANS.node.batching).flatMap(([label, cell]) => row(label, (r) => cell(r.batching))),
    ...row('Cold start, first visit: /v1/models, first token (ms from page load)', (r) =>
      r.coldStart ? `${r.coldStart.uncached.modelsMs}, ${r.coldStart.uncached.firstTokenMs}` : null,
    ),
    ...row('Cold start, cached: /v1/models, first token (ms from page load)', (r) =>
      r.coldStart ? `${r.coldStart.cached.modelsMs}, ${r.coldStart.cached.firstTokenMs}` : null,
    ),
    ...row('Memory, two tabs ÷ one tab (MB)', (r) =>
      r.memory ? `${r.memory.ratio} (${r.memory.twoTabsMB} ÷ ${r.memory.oneTabMB})` : null,
    ),
  ].join('\n');
}

const machine = {
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memoryGB: round(os.totalmem() / 1e9, 1),
  os: `${os.type()} ${os.release()}`,
  node: process.version,
};
log(`machine: ${JSON.stringify(machine)}`);
if (SMOKE) log('smoke pass: every section once, on a few tokens; no figure of it means anything, nothing is written');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = `${ROOT}dist-e2e/bench/browser/bench.html`;
if (!existsSync(DIST)) {
  throw new Error(`${DIST} is missing: build it first (vite build --mode e2e; npm run bench and npm run test:e2e do).`);
}

/** Each section's name and seconds, in order. */
const timings: { section: string; seconds: number }[] = [];
/** Runs one section of the bench, saying when it starts, how long it took, and (then rethrowing) that it failed. */
async function section<T>(name: string, run: () => Promise<T>): Promise<T> {
  log(`── ${name}`);
  const started = performance.now();
  try {
    const result = await run();
    timings.push({ section: name, seconds: round((performance.now() - started) / 1000, 1) });
    return result;
  } catch (error) {
    log(`section failed: ${name}`);
    throw error;
  }
}

const bundled: Record<string, Results> = {};
const stories: Record<string, Results> = {};
const NODE = 'Node (handler)';
const COLUMNS = {
  wasm: 'Chromium, wasm',
  webgpu: 'Chromium, WebGPU (SwiftShader)',
  firefox: 'Firefox, wasm',
  webkit: 'WebKit, wasm',
} as const;
const node = await section('node: the handler in-process', async () => measure('node', PLANS.node, await nodeBench()));
bundled[NODE] = node.bundled;
if (node.stories) stories[NODE] = node.stories;
const structured = await section(
  'node: structured output (constrained against unconstrained decoding; schema compile time over the corpus)',
  () => structuredOutputBench({ ...STRUCTURED, tokens: fit(CHAT, STRUCTURED.tokens) }),
);
const schemaCorpus = await section(
  'node: structured output by kind of schema (the corpus and real-world schemas: compiled, refused, compliant, cut)',
  () => schemaCorpusBench({ ...SCHEMA_KINDS, maxTokens: fit(CHAT, SCHEMA_KINDS.maxTokens) }, log),
);
const toolCalling = await section(
  'node: tool calling (tool grammars compiled, the mask per token, prompt tokens of a tool)',
  () => toolCallingBench(TOOL_CALLING),
);
const responses = await section('node: the Responses API against chat completions; the response store', () =>
  responsesBench({ ...RESPONSES, tokens: fit(CHAT, RESPONSES.tokens) }),
);
const {
  results: realistic,
  model: realisticModel,
  plan: realisticPlan,
} = await section('node: prefix reuse, and a model at the scale of real ones', () =>
  realisticBench(log, REALISTIC_SECTION, SMOKE),
);
const constrained = await section(
  'node: constrained against free output on schemas with fixed keys; forward passes jump-forward saves',
  () =>
    constrainedOutputBench(
      log,
      CONSTRAINED,
      // The realistic model where it ran; a stand-in for it is tiny-chat, measured already.
      realisticModel && !realisticModel.standIn
        ? { dir: realisticModel.dir, name: realistic.smokeVariant ? 'realistic (smoke variant)' : 'realistic' }
        : undefined,
    ),
);
const engines = await section(
  'node: llama.cpp against transformers.js, same weights (load, first token, decode, streams; bench/engines.ts)',
  () => enginesBench(log, ENGINES, SMOKE),
);
const speculation = await section(
  'node: speculation (prompt lookup, prediction) against decoding without it (bench/speculation.ts)',
  () => speculationBench(log, SMOKE ? SPECULATION_SMOKE_PLAN : SPECULATION_PLAN, SMOKE),
);
const remote = await section('node: the remote path (Lantern forwarding to its own server in another process)', () =>
  remoteBench({ ...REMOTE, chunks: [fitAll(REMOTE.chunks[0]), REMOTE.chunks[1]] }),
);

if (SMOKE) {
  // The scripts of bench/ that run alone rather than in `npm run bench`, each on a few schemas: they must still run.
  await section('node: the scripts that run alone (structured-output libraries, their bugs)', async () => {
    for (const args of [
      ['bench/structured-output-libraries.ts', '--walks', '1', '--schemas', '2'],
      ['bench/structured-output-library-bugs.ts'],
    ]) {
      const run = spawnSync(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, encoding: 'utf8' });
      if (run.status !== 0) {
        throw new Error(`${args.join(' ')} failed (${run.error?.message ?? `exit ${run.status}`}):\n${run.stderr}`);
      }
    }
  });
}

const server = await startServer(
  4191,
  { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
  {
    ...(HAS_STORIES_260K && { [STORIES_URL]: STORIES_260K }),
    ...(realisticModel && { [REALISTIC_URL]: realisticModel.dir }),
  },
);
const browsers: Record<string, unknown> = {};
try {
  for (const path of ['wasm', 'webgpu'] as const) {
    // The realistic model on WebAssembly only: SwiftShader would take minutes a token.
    const withRealistic = path === 'wasm' && realisticModel ? realisticPlan : undefined;
    const result = await section(`Chromium, ${path}: the whole path against the engine in a worker`, () =>
      browserBench(path, server.origin, withRealistic),
    );
    browsers[path] = { device: result.device, chromium: result.chromium };
    bundled[COLUMNS[path]] = result.bundled;
    if (result.stories) stories[COLUMNS[path]] = result.stories;
    if (result.realisticWasm) realistic.realisticWasm = result.realisticWasm;
  }
  for (const name of ['firefox', 'webkit'] as const) {
    const result = await section(`${COLUMNS[name]}: the whole path against the engine in a worker`, () =>
      otherBrowserBench(name, server.origin, realisticModel ? realisticPlan : undefined),
    );
    browsers[name] = { device: result.device, version: result.version };
    bundled[COLUMNS[name]] = result.bundled;
    if (result.stories) stories[COLUMNS[name]] = result.stories;
    if (result.realisticDecode) (realistic.realisticOther ??= {})[COLUMNS[name]] = result.realisticDecode;
  }
} finally {
  await server.close();
}
const browserEngines = await section(
  'Chromium, wasm: llama.cpp against transformers.js; /v1 on llama.cpp against wllama directly (bench/browser-engines.ts)',
  () => browserEnginesBench(log, SMOKE ? BROWSER_ENGINES_SMOKE_PLAN : BROWSER_ENGINES_PLAN, SMOKE),
);
const coldStarts = await section('Chromium, wasm: cold start, first visit and cached (bench/cold-start.ts)', () =>
  coldStartBench(SMOKE ? 1 : 5, log),
);
const transcription = {
  node: await section('node: transcription (real-time factor; /v1 against the engine)', () =>
    transcriptionNode(TRANSCRIPTION, log),
  ),
  wasm: await section(
    'Chromium, wasm: transcription (real-time factor; /v1 against the engine in a worker; bench/transcription.ts)',
    async () => {
      const { device, chromium, ...figures } = await transcriptionBrowser(TRANSCRIPTION, log);
      browsers.transcription = { device, chromium };
      return figures;
    },
  ),
};

const speech = {
  node: await section('node: text to speech (real-time factor, first audio; /v1 against the engine; round trip)', () =>
    speechNode(SPEECH, log),
  ),
  wasm: await section(
    'Chromium, wasm: text to speech (the engine in a worker against /v1; encoders; round trip; bench/speech.ts)',
    async () => {
      const { device, chromium, ...figures } = await speechBrowser(SPEECH, log);
      browsers.speech = { device, chromium };
      return figures;
    },
  ),
};

const realtime = await section(
  'node: a Realtime voice turn over the WebSocket (end of speech to first audio, and its parts; bench/realtime.ts)',
  () => realtimeNode(REALTIME, log),
);

const vision = {
  node: await section('node: images in (first token with one image; the vision encoder apart)', () =>
    visionNode(VISION, log),
  ),
  wasm: await section('Chromium, wasm: images in (the engine in a worker against /v1; bench/vision.ts)', () =>
    visionBrowser(VISION, log),
  ),
};

const fileSearch = {
  node: await section(
    'node: files and vector stores (indexing, search latency, storage, recall@5; the index alone; bench/file-search.ts)',
    () => fileSearchNode(FILE_SEARCH, log),
  ),
  wasm: await section(
    'Chromium, wasm: files and vector stores (the service worker, the engine worker, IndexedDB; bench/file-search.ts)',
    async () => {
      const { device, chromium, ...figures } = await fileSearchBrowser(FILE_SEARCH, log);
      browsers.fileSearch = { device, chromium };
      return figures;
    },
  ),
};

const { decodeTokensPerSecond: d, compileMs: c } = structured;
const structuredTable = [
  '| Measure (Node, bundled tiny-chat) | Figure |',
  '| --- | --- |',
  `| Decode tokens/s, unconstrained → constrained (JSON schema) | ${d.unconstrained} → ${d.constrained} |`,
  `| Constrained ÷ unconstrained (target ≥ 0.9) | ${d.ratio} ${d.ratio >= 0.9 ? '✓' : '✗'} |`,
  `| Schema compile ms over the corpus (${structured.schemas} schemas), cold p50 / p95 (target ≤ 50) / max | ${c.cold.p50} / ${c.cold.p95} ${c.cold.p95 <= 50 ? '✓' : '✗'} / ${c.cold.max} |`,
  `| Schema compile ms, cached p50 / p95 | ${c.cached.p50} / ${c.cached.p95} |`,
].join('\n');
const t = toolCalling;
const toolSets = Object.keys(t.compileMs);
const toolTable = [
  '| Measure (Node, bundled tiny-chat) | Figure |',
  '| --- | --- |',
  `| Tool grammar compile ms, cold p50 / p95: ${toolSets.join(', ')} | ${toolSets.map((k) => `${t.compileMs[k]!.cold.p50} / ${t.compileMs[k]!.cold.p95}`).join(', ')} |`,
  `| Tool grammar compile ms, cached p50 / p95: ${toolSets.join(', ')} | ${toolSets.map((k) => `${t.compileMs[k]!.cached.p50} / ${t.compileMs[k]!.cached.p95}`).join(', ')} |`,
  `| Mask ms per token, p50 / p95: free text; inside a call | ${t.maskMsPerToken.freeText.p50} / ${t.maskMsPerToken.freeText.p95}; ${t.maskMsPerToken.insideCall.p50} / ${t.maskMsPerToken.insideCall.p95} |`,
  `| Prompt tokens: no tools; one tool (get_weather) | ${t.promptTokens.none}; ${t.promptTokens.get_weather} |`,
].join('\n');
const r = responses;
const responsesTable = [
  `| Measure (Node, bundled tiny-chat, ${fit(CHAT, RESPONSES.tokens)} tokens streamed) | Chat completions | Responses API |`,
  '| --- | --- | --- |',
  `| Time to first token, ms (median) | ${r.firstTokenMs.chat} | ${r.firstTokenMs.responses} |`,
  `| Whole request, ms (median); responses ÷ chat, median of pairs | ${r.wholeRequestMs.chat} | ${r.wholeRequestMs.responses} (${r.ratio}) |`,
  `| Memory store: put / get ms, p50 (p95) | | ${r.store.putMs.p50} (${r.store.putMs.p95}) / ${r.store.getMs.p50} (${r.store.getMs.p95}) |`,
].join('\n');
const realisticNote = realistic.standIn
  ? `; the bundled tiny-chat stood in for the realistic model: ${realistic.skipped}`
  : realistic.skipped
    ? `; realistic model skipped: ${realistic.skipped}`
    : '';
const markdown = [
  `On the bundled models (public/models):\n\n${table(bundled)}`,
  `Structured output:\n\n${structuredTable}`,
  `Structured output by kind of schema (the project's corpus, then public schemas of test/fixtures/schemas; one ` +
    `choice a schema; refusal reasons count the schemas naming each):\n\n${schemaCorpusTable(schemaCorpus)}`,
  `Tool calling:\n\n${toolTable}`,
  `The Responses API:\n\n${responsesTable}`,
  ...(HAS_STORIES_260K
    ? [`Chat on stories260K, a real trained model (optional: see test/support/lantern.ts):\n\n${table(stories)}`]
    : []),
  `Prefix reuse, and a model at the scale of real ones (Node${realisticNote}):\n\n` +
    realisticTable(realistic, { bundled: bundled[NODE]!, stories: stories[NODE] }, realisticPlan.batching),
  `Constrained against free output (jump-forward: the tokens a grammar forces appended in one forward pass), in Node; ` +
    `each free reply, its end tokens banned, as long as the constrained one to the same prompt:\n\n` +
    constrainedOutputTable(constrained),
  `llama.cpp against transformers.js in Node (bench/engines.ts): the same weights (each model's ONNX export and its ` +
    `GGUF, f32), each engine called directly under Lantern's generation core; llama.cpp on ${engines.threads} of ` +
    `${engines.cores} cores (half), and node-llama-cpp alone on the same GGUF, threads and window, greedy:\n\n` +
    enginesTable(engines),
  `Speculation (bench/speculation.ts): in Node, transformers.js (CPU, fp32) loaded with prompt lookup on and off, ` +
    `llama.cpp with a prediction and without, and each with a draft model and without; in Chromium ` +
    `${browserEngines.chromium} on WebAssembly (bench/browser-engines.ts), through /v1 and the openai SDK, a prediction ` +
    `and none; the same greedy requests (the same text, checked), pairs alternating; tokens/s after the first token:\n\n` +
    speculationTable({ ...speculation, rows: [...speculation.rows, ...browserEngines.speculation] }),
  `llama.cpp against transformers.js in Chromium ${browserEngines.chromium}, WebAssembly (bench/browser-engines.ts): ` +
    `the same weights, each engine alone in a fresh profile through /v1 and the openai SDK; wllama called directly ` +
    `in the same page on the same GGUF, greedy, paired with the plain /v1 runs:\n\n` +
    browserEnginesTable(browserEngines),
  `Cold start (Chromium without WebGPU, each run a fresh profile):\n\n${coldStartTable(coldStarts)}`,
  `Speech to text (bench/transcription.ts; \`POST /v1/audio/transcriptions\`, the openai SDK sending a WAV file, ` +
    `against the engine's \`transcribe\` called directly; Chromium without WebGPU):\n\n` +
    transcriptionTable({ Node: transcription.node, 'Chromium, wasm': transcription.wasm }),
  `Text to speech (bench/speech.ts; \`POST /v1/audio/speech\` through the openai SDK, its body read as it arrives, ` +
    `against the engine's \`speak\` called directly; each format's encoder alone; the round trip through ` +
    `\`/v1/audio/transcriptions\`; Chromium without WebGPU):\n\n` +
    speechTable({ Node: speech.node, 'Chromium, wasm': speech.wasm }),
  `A Realtime voice turn in Node (bench/realtime.ts; \`GET /v1/realtime\`'s WebSocket over the handler in process, a ` +
    `held-out clip streamed in real time, server VAD; tiny-whisper, tiny-chat, tiny-speech; each milestone as the ` +
    `client's events arrive, from the end of the speech):\n\n` +
    realtimeTable(realtime),
  `Images in (bench/vision.ts; \`POST /v1/chat/completions\` with one \`image_url\` part, streamed, against the ` +
    `engine called directly; Chromium without WebGPU):\n\n` +
    visionTable({ Node: vision.node, 'Chromium, wasm': vision.wasm }),
  `Files, vector stores and retrieval (bench/file-search.ts; the openai SDK through /v1, on the bundled tiny-embed, ` +
    `trained on synthetic paraphrases of everyday sentences (not on such text as SQuAD's); pages of 3,000 characters; Node on a ` +
    `directory storage, Chromium without WebGPU through the service worker on IndexedDB; recall@5 (@1) and nDCG@10 ` +
    `of the paragraph that answers each SQuAD question of bench/data/squad-retrieval.json):\n\n` +
    fileSearchTable({ Node: fileSearch.node, 'Chromium, wasm': fileSearch.wasm }),
  `A remote candidate in Node: Lantern's handler forwarding to Lantern's own server in another process over HTTP, ` +
    `against the SDK calling that server directly:\n\n${remoteTable(remote)}`,
].join('\n\n');
console.log(`\n${markdown}\n`);
const results = {
  bundled,
  coldStart: coldStarts,
  stories,
  structured,
  schemaCorpus,
  toolCalling,
  responses,
  realistic,
  constrained,
  engines,
  speculation,
  browserEngines,
  remote,
  transcription,
  speech,
  realtime,
  vision,
  fileSearch,
};
log(`sections: ${timings.map(({ section, seconds }) => `${section.split(' (')[0]}: ${seconds} s`).join(' | ')}`);
if (!SMOKE) {
  const out = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(out, { recursive: true });
  const report = { date: new Date().toISOString(), machine, browsers, results, markdown };
  writeFileSync(`${out}latest.json`, JSON.stringify(report, null, 2) + '\n');
  log(`wrote bench/results/latest.json`);
}

/** Where a figure came out as no number: a measure that saw no tokens, say. JSON would hide it as null. */
function notNumbers(value: unknown, at = 'results'): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [`${at} = ${value}`];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => notNumbers(inner, `${at}.${key}`));
}
const broken = notNumbers(results);
if (broken.length) throw new Error(`The bench measured no number for ${broken.length} figures: ${broken.join(', ')}`);
log(SMOKE ? `smoke pass: all ${timings.length} sections ran` : 'done');
