/**
 * llama.cpp against transformers.js in Chromium (WebAssembly, the CPU), on the same weights, in one run, as
 * bench/engines.ts measures them in Node: each model's ONNX export on transformers.js and its GGUF on llama.cpp (wllama
 * 2, in the engine worker), both under Lantern's generation core, each measured through `/v1` with the openai SDK on a
 * page that serves that one model (bench/browser/engines-page.ts), in a fresh browser context:
 *
 * - load: ms from the first request to its first token on a fresh page (the model loads then), median of pages;
 * - first token: ms to the first token of a prompt of a few dozen tokens on the loaded model, median;
 * - decode: tokens/s after the first token of a long reply whose end tokens are banned (`logit_bias`: on
 *   transformers.js the generation core applies it to each token's logits; on llama.cpp wllama's sampler draws it,
 *   and the token alone crosses to the core), median; plain: the same without the ban, a greedy request;
 * - 4 streams: tokens/s of four such requests at once, all of them together (wllama holds one sequence: they queue);
 * - constrained ÷ free: whole requests under a `json_schema` against the same prompt free, as many tokens.
 *
 * And on llama.cpp the comparator the issue names: wllama called directly in the same page on the same GGUF, as an app
 * that uses wllama alone decodes the same prompt: its own greedy sampler (`createCompletion`), without and with the
 * ban as its `logit_bias`, and for `logprobs: true` its most probable token with that token's probability each step
 * (`getLogits(1)`, its cheapest way to a probability). Each of its runs is paired with a `/v1` run of the same kind,
 * half of the pairs on a page that loaded Lantern's copy of the model first and half on one that loaded wllama's first.
 * `/v1 ÷ wllama direct` is what Lantern's whole path (service worker, engine worker, generation core, SSE, SDK) costs
 * over the runtime. No JSON-schema pair: wllama 2.3.7's sampler never advances its grammar (see WLLAMA2_SAMPLING in
 * src/engines/llama-cpp/wllama-sampler.ts), so wllama alone cannot constrain a reply to compare with.
 *
 * Part of `npm run bench` (after `vite build --mode e2e`); also alone: `npx tsx bench/browser-engines.ts [--smoke]`.
 */
import { chromium, type Browser, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer } from '../test/e2e/servers.ts';
import { CHROMIUM_ARGS } from './cold-start.ts';
import { contextWindowOf, DEFAULT_CONTEXT_WINDOW } from '../src/engines/llama-cpp/llama-cpp-engine.ts';
import { loadTokenizer } from './context.ts';
import { benchModels, fitPlan, promptOf, type BenchModel, type EnginesPlan } from './engines.ts';
import { prepareRealisticModel } from './realistic-model.ts';
import { ENDLESS_MESSAGES } from './requests.ts';
import { spoiled, SpeculationTally, type SpeculationRow } from './speculation.ts';
import { median, round } from './stats.ts';

/** The browser's plan: fewer runs than Node's, since each is a page and a service worker away. */
export const BROWSER_ENGINES_PLAN: EnginesPlan = {
  loads: 2,
  firstToken: [32, 8],
  decode: [128, 16],
  streams: { streams: 4, tokens: 64, rounds: 2 },
  constrained: [128, 3],
};

export const BROWSER_ENGINES_SMOKE_PLAN: EnginesPlan = {
  loads: 1,
  firstToken: [32, 1],
  decode: [16, 1],
  streams: { streams: 4, tokens: 2, rounds: 1 },
  constrained: [4, 1],
};

type EngineName = 'transformers' | 'llama.cpp';
const PORT = 4211; // not 4196: the quick-start test's, which may run beside the bench
const BANNED = { 0: -100, 1: -100, 2: -100 };

interface Chat {
  started: number;
  ended: number;
  chunks: number[];
  tokens: number;
  text: string;
  accepted: number;
  rejected: number;
}

export interface BrowserEngineFigures {
  loadMs: number;
  firstTokenMs: number;
  decodeTokensPerSecond: number;
  plainDecodeTokensPerSecond: number;
  streamsTokensPerSecond: number;
  constrained: { constrainedTokensPerSecond: number; freeTokensPerSecond: number; ratio: number };
}

export interface BrowserEnginesResults {
  chromium: string;
  models: Record<
    string,
    {
      transformers: BrowserEngineFigures;
      'llama.cpp': BrowserEngineFigures;
      /**
       * wllama called directly: its greedy decode alone, with the ban, and with each token's probability
       * (getLogits(1)); each /v1 decode of the same kind ÷ it, median of the pairs.
       */
      wllamaDirect: {
        decodeTokensPerSecond: number;
        biasTokensPerSecond: number;
        logprobsTokensPerSecond: number;
        lanternLogprobsTokensPerSecond: number;
        plainRatio: number;
        biasRatio: number;
        logprobsRatio: number;
      };
    }
  >;
  /** Speculation through /v1 on transformers.js (the realistic model): with a prediction ÷ without. */
  speculation: SpeculationRow[];
  skipped: Record<string, string>;
}

/**
 * Tokens/s after the first chunk, counted from usage (a chunk may carry several tokens: one character's, or what the
 * stream held when the page read it). A reply that came in one chunk is timed whole.
 */
const decodeRate = (chat: Chat) =>
  chat.chunks.length < 2
    ? (chat.tokens * 1000) / (chat.ended - chat.started)
    : ((chat.tokens - 1) * 1000) / (chat.chunks.at(-1)! - chat.chunks[0]!);

const endless = (tokens: number, banned = true) => ({
  messages: ENDLESS_MESSAGES.map((message) => ({ ...message })),
  temperature: 0,
  max_tokens: tokens,
  ...(banned && { logit_bias: BANNED }),
});

const constrained = (tokens: number) => ({
  ...endless(tokens),
  response_format: {
    type: 'json_schema',
    json_schema: {
      name: 'story',
      strict: true,
      schema: {
        type: 'object',
        properties: { story: { type: 'string', minLength: 64 * tokens } },
        required: ['story'],
        additionalProperties: false,
      },
    },
  },
});

async function openPage(browser: Browser, url: string): Promise<{ page: Page; close(): Promise<void> }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('pageerror', (error) => console.log(`[bench] page error: ${error.message}`));
  await page.goto(url);
  await page.waitForFunction(() => (window as { engines?: unknown }).engines !== undefined, undefined, {
    timeout: 120_000,
  });
  return { page, close: () => context.close() };
}

const chat = (page: Page, body: Record<string, unknown>) => page.evaluate((b) => window.engines.chat(b), body);

/** What a `/v1` decode is paired with wllama's own for: greedy alone, with the ban, with each token's logprob. */
type DirectKind = 'plain' | 'bias' | 'logprobs';

/** The `/v1` request of each kind, `tokens` long. */
const directRequest = (kind: DirectKind, tokens: number) =>
  kind === 'logprobs' ? { ...endless(tokens, false), logprobs: true } : endless(tokens, kind === 'bias');

/**
 * A `/v1` decode of `kind` and wllama's own of the same prompt (`text`, the chat template written out), `tokens` long,
 * on a page whose wllama is loaded: its sampler greedy (with the ban for `bias`), or for `logprobs` its most probable
 * token and that token's probability read each step (`getLogits(1)`). Which goes first alternates with `i`, so that
 * neither always follows the other.
 */
async function directPair(page: Page, text: string, tokens: number, i: number, kind: DirectKind) {
  const directRate = async () => {
    const times = await page.evaluate(
      ([t, n, k, banned]) =>
        k === 'logprobs'
          ? window.engines.wllama.runWithProbabilities(t, n)
          : window.engines.wllama.run(t, n, k === 'bias' ? banned : {}),
      [text, tokens, kind, BANNED] as const,
    );
    return times.length < 2 ? NaN : ((times.length - 1) * 1000) / (times.at(-1)! - times[0]!);
  };
  const before = i % 2 === 1 ? await directRate() : undefined;
  const lantern = decodeRate(await chat(page, directRequest(kind, tokens)));
  return { kind, lantern, direct: before ?? (await directRate()) };
}

/** Each kind's pairs in turn, `pairs` of each. */
async function directPairs(page: Page, text: string, tokens: number, pairs: number) {
  const all: Awaited<ReturnType<typeof directPair>>[] = [];
  for (let i = 0; i < pairs; i++) {
    for (const kind of ['plain', 'bias', 'logprobs'] as const) all.push(await directPair(page, text, tokens, i, kind));
  }
  return all;
}

const of = <P extends { kind: DirectKind }>(pairs: readonly P[], kind: DirectKind) =>
  pairs.filter((p) => p.kind === kind);

async function measureEngine(
  log: (message: string) => void,
  browser: Browser,
  url: string,
  label: string,
  prompt: string,
  plan: EnginesPlan,
  direct?: { text: string; window: number },
) {
  log(`${label}: load (${plan.loads} fresh pages)`);
  const loads: number[] = [];
  let opened: Awaited<ReturnType<typeof openPage>> | undefined;
  for (let i = 0; i < plan.loads; i++) {
    await opened?.close();
    opened = await openPage(browser, url);
    const first = await chat(opened.page, { ...endless(1), messages: [{ role: 'user', content: prompt }] });
    loads.push(first.chunks[0]! - first.started);
  }
  const { page } = opened!;
  try {
    log(`${label}: first token, decode, 4 streams, constrained`);
    const firstTokens: number[] = [];
    for (let i = 0; i < plan.firstToken[1]; i++) {
      // Another start each time, so that no request continues the last one's cache.
      const run = await chat(page, { ...endless(1), messages: [{ role: 'user', content: `${i} ${prompt}` }] });
      firstTokens.push(run.chunks[0]! - run.started);
    }
    const [tokens, runs] = plan.decode;
    const decodes: number[] = [];
    const plains: number[] = [];
    const pairs: Awaited<ReturnType<typeof directPair>>[] = [];
    if (direct) await page.evaluate((n) => window.engines.wllama.load(n), direct.window);
    // The banned decodes first, then the plain ones paired with wllama's: a distribution run leaves a vocabulary's
    // worth of objects a token for the collector, which should not land in the runs compared with wllama's.
    for (let i = 0; i < runs; i++) decodes.push(decodeRate(await chat(page, endless(tokens))));
    // With wllama directly, half the pairs here (Lantern's model loaded first) and half on a page that loads wllama's
    // first (see directPairs).
    if (direct) pairs.push(...(await directPairs(page, direct.text, tokens, runs / 2)));
    plains.push(...of(pairs, 'plain').map((p) => p.lantern));
    for (let i = 0; i < (direct ? 0 : runs); i++) plains.push(decodeRate(await chat(page, endless(tokens, false))));
    const rounds: number[] = [];
    for (let i = 0; i < plan.streams.rounds; i++) {
      const bodies = Array.from({ length: plan.streams.streams }, () => endless(plan.streams.tokens));
      const all = await page.evaluate((b) => window.engines.together(b), bodies);
      const first = Math.min(...all.map((run) => run.started));
      const last = Math.max(...all.map((run) => run.ended));
      rounds.push((all.reduce((sum, run) => sum + run.tokens, 0) * 1000) / (last - first));
    }
    const ratios: { constrained: number; free: number }[] = [];
    const [ctokens, cpairs] = plan.constrained;
    const whole = (run: Chat) => (run.tokens * 1000) / (run.ended - run.started);
    for (let i = 0; i < cpairs; i++) {
      const order = i % 2 === 0 ? ['constrained', 'free'] : ['free', 'constrained'];
      const rates: Record<string, number> = {};
      for (const kind of order) {
        rates[kind] = whole(await chat(page, kind === 'constrained' ? constrained(ctokens) : endless(ctokens)));
      }
      ratios.push({ constrained: rates.constrained!, free: rates.free! });
    }
    const figures: BrowserEngineFigures = {
      loadMs: round(median(loads), 0),
      firstTokenMs: round(median(firstTokens), 1),
      decodeTokensPerSecond: round(median(decodes), 1),
      plainDecodeTokensPerSecond: round(median(plains), 1),
      streamsTokensPerSecond: round(median(rounds), 1),
      constrained: {
        constrainedTokensPerSecond: round(median(ratios.map((r) => r.constrained)), 1),
        freeTokensPerSecond: round(median(ratios.map((r) => r.free)), 1),
        ratio: round(median(ratios.map((r) => r.constrained / r.free)), 3),
      },
    };
    if (direct) {
      // The other half, on a fresh page where wllama's copy loads before Lantern's: which of two copies of a model
      // loads first decodes a few percent faster here (about 1.03 against 0.96 in one run), so each order gets half.
      await opened!.close();
      opened = await openPage(browser, url);
      await opened.page.evaluate((n) => window.engines.wllama.load(n), direct.window);
      await chat(opened.page, { ...endless(1), messages: [{ role: 'user', content: prompt }] });
      pairs.push(...(await directPairs(opened.page, direct.text, tokens, runs / 2)));
    }
    const ratio = (kind: DirectKind) => round(median(of(pairs, kind).map((p) => p.lantern / p.direct)), 3);
    const directFigures = direct && {
      decodeTokensPerSecond: round(median(of(pairs, 'plain').map((p) => p.direct)), 1),
      biasTokensPerSecond: round(median(of(pairs, 'bias').map((p) => p.direct)), 1),
      logprobsTokensPerSecond: round(median(of(pairs, 'logprobs').map((p) => p.direct)), 1),
      lanternLogprobsTokensPerSecond: round(median(of(pairs, 'logprobs').map((p) => p.lantern)), 1),
      plainRatio: ratio('plain'),
      biasRatio: ratio('bias'),
      logprobsRatio: ratio('logprobs'),
    };
    return { figures, direct: directFigures };
  } finally {
    await opened!.close();
  }
}

export async function browserEnginesBench(
  log: (message: string) => void,
  plan: EnginesPlan = BROWSER_ENGINES_PLAN,
  smoke = false,
): Promise<BrowserEnginesResults> {
  const { models, skipped } = benchModels(log, smoke);
  for (const [name, why] of Object.entries(skipped)) log(`${name} skipped: ${why}`);
  const mounts: Record<string, string> = {};
  const urls = (model: BenchModel, i: number) => {
    mounts[`/engines-bench/${i}/onnx`] = model.dir;
    mounts[`/engines-bench/${i}/gguf`] = path.dirname(model.gguf);
    return { model: `/engines-bench/${i}/onnx`, gguf: `/engines-bench/${i}/gguf/${path.basename(model.gguf)}` };
  };
  const served = models.map(urls);
  const server = await startServer(PORT, {}, mounts);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  });
  const results: BrowserEnginesResults['models'] = {};
  const speculation: SpeculationRow[] = [];
  const realisticDir = prepareRealisticModel(log, { smoke }).model?.dir;
  // The smoke pass measures one model, the same code for each: the realistic one (which the speculation measure
  // needs) where it was built, else the bundled tiny-chat.
  const measured = smoke ? [models.find((model) => model.dir === realisticDir) ?? models.at(-1)!] : models;
  if (smoke) log(`smoke pass: ${measured[0]!.name} alone (each model runs the same measures)`);
  try {
    for (const model of measured) {
      const i = models.indexOf(model);
      const fitted = await fitPlan(log, plan, model);
      const prompt = await promptOf(model.dir, model.words, plan.firstToken[0]);
      const tokenizer = await loadTokenizer(model.dir);
      const text = tokenizer.apply_chat_template(ENDLESS_MESSAGES as never, {
        tokenize: false,
        add_generation_prompt: true,
      }) as string;
      const url = (engine: EngineName) =>
        `${server.origin}/bench/browser/engines.html?engine=${engine}&model=${served[i]!.model}&gguf=${served[i]!.gguf}`;
      const transformers = await measureEngine(
        log,
        browser,
        url('transformers'),
        `${model.name}, transformers.js`,
        prompt,
        fitted,
      );
      // The window Lantern's runtime gives the model, from its training context (the GGUF's, from config.json).
      const trained = (
        JSON.parse(readFileSync(path.join(model.dir, 'config.json'), 'utf8')) as {
          max_position_embeddings?: number;
        }
      ).max_position_embeddings;
      const window = contextWindowOf({}, trained ?? DEFAULT_CONTEXT_WINDOW);
      const llamaCpp = await measureEngine(log, browser, url('llama.cpp'), `${model.name}, llama.cpp`, prompt, fitted, {
        text,
        window,
      });
      if (model.dir === realisticDir) {
        speculation.push(...(await measureSpeculation(log, browser, url('transformers'), model.name, fitted)));
      }
      results[model.name] = {
        transformers: transformers.figures,
        'llama.cpp': llamaCpp.figures,
        wllamaDirect: llamaCpp.direct!,
      };
    }
  } finally {
    await browser.close();
    await server.close();
  }
  return { chromium: browser.version(), models: results, speculation, skipped };
}

/**
 * Speculation in Chromium on WebAssembly, through /v1 with the openai SDK on transformers.js: the realistic model's
 * greedy reply to the endless prompt without a prediction (its text never repeats, so prompt lookup proposes nothing:
 * decoding as without speculation), against the same request with OpenAI's `prediction` of the reply itself (every
 * proposal right: the bound of what speculation saves on this hardware) and of the reply with every 8th word changed.
 * Pairs alternate which goes first; the texts must be equal.
 */
async function measureSpeculation(
  log: (message: string) => void,
  browser: Browser,
  url: string,
  name: string,
  plan: EnginesPlan,
): Promise<SpeculationRow[]> {
  const { page, close } = await openPage(browser, url);
  try {
    const [tokens, pairs] = plan.decode;
    const free = endless(tokens);
    const reply = (await chat(page, free)).text;
    const rows: SpeculationRow[] = [];
    for (const [task, prediction] of [
      ['prediction: the reply itself', reply],
      ['prediction: every 8th word wrong', spoiled(reply, 8)],
    ] as const) {
      log(`${name}, Chromium wasm (/v1): ${task}`);
      const rates = { off: [] as number[], on: [] as number[] };
      const tally = new SpeculationTally();
      for (let i = 0; i < pairs; i++) {
        for (const side of i % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
          const run = await chat(
            page,
            side === 'off' ? free : { ...free, prediction: { type: 'content', content: prediction } },
          );
          if (run.text !== reply) throw new Error(`${name}, ${task}: the text differs with speculation`);
          rates[side].push(decodeRate(run));
          // Passes are not visible through /v1: each token after the first took one, less those accepted.
          if (side === 'on') tally.add({ ...run, passes: run.tokens - 1 - run.accepted });
        }
      }
      rows.push(tally.row(`${name}, Chromium wasm (/v1, openai SDK)`, task, median(rates.off), median(rates.on)));
    }
    return rows;
  } finally {
    await close();
  }
}

/** The section's table: per model, a row per engine, wllama's own, and the ratios. */
export function browserEnginesTable(results: BrowserEnginesResults): string {
  const rows = [
    '| Model | Engine (Chromium, wasm) | Load ms | First token ms | Decode tok/s (`logit_bias`) | Plain greedy tok/s | `logprobs` tok/s | 4 streams tok/s | Constrained ÷ free |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [name, model] of Object.entries(results.models)) {
    for (const engine of ['transformers', 'llama.cpp'] as const) {
      const f = model[engine];
      rows.push(
        `| ${name} | ${engine === 'transformers' ? 'transformers.js' : 'llama.cpp (wllama)'} | ${f.loadMs} | ${f.firstTokenMs} | ${f.decodeTokensPerSecond} | ${f.plainDecodeTokensPerSecond} | ${engine === 'transformers' ? '–' : model.wllamaDirect.lanternLogprobsTokensPerSecond} | ${f.streamsTokensPerSecond} | ${f.constrained.ratio} |`,
      );
    }
    const d = model.wllamaDirect;
    rows.push(
      `| ${name} | wllama directly | – | – | ${d.biasTokensPerSecond} | ${d.decodeTokensPerSecond} | ${d.logprobsTokensPerSecond} | – | – |`,
      `| ${name} | **/v1 on llama.cpp ÷ wllama direct** | | | **${d.biasRatio}** | **${d.plainRatio}** | **${d.logprobsRatio}** | | |`,
    );
  }
  return rows.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const smoke = process.argv.includes('--smoke');
  const log = (message: string) => console.log(`[bench] ${message}`);
  const results = await browserEnginesBench(log, smoke ? BROWSER_ENGINES_SMOKE_PLAN : BROWSER_ENGINES_PLAN, smoke);
  console.log(JSON.stringify(results, null, 1));
  console.log(browserEnginesTable(results));
}
