import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { replyRoomAt } from './context.ts';
import {
  batchingRows,
  measureBatching,
  type BatchingFigures,
  type BatchingPlan,
  type BatchingRunner,
} from './batching.ts';
import { decode, delivery, firstToken, type ChatSamples } from './measures.ts';
import { nodeBench } from './node-bench.ts';
import { prepareRealisticModel, REALISTIC, singleModelProfile, type RealisticModel } from './realistic-model.ts';
import { ENDLESS_MESSAGES } from './requests.ts';
import { reuseBench, type ReuseResult } from './reuse-bench.ts';

/**
 * The benchmark at the scale of real models: the /v1 path against the direct engine on the realistic model (decode,
 * first token, delivery), and concurrent requests on it (bench/batching.ts: aggregate tokens/s at 1, 2, 4 and 8
 * streams, a new request's first token under load, `n: 4` against four requests), in Node and in Chromium on
 * WebAssembly; and second-turn time to first token with prefix reuse against full recompute in Node, on a 1,000-token
 * history there and on a 900-token one on the bundled chat model (its window is 1,024 tokens; each history is sized
 * with the model's own tokenizer and clamped to its window).
 */
export interface RealisticPlan {
  /** [tokens, runs] of the decode measure, and of the time to first token, in Node; then in Chromium. */
  decode: readonly [number, number];
  ttft: readonly [number, number];
  browserDecode: readonly [number, number];
  browserTtft: readonly [number, number];
  reuseSamples: number;
  /** The concurrency measures in Node, then in Chromium. */
  batching: BatchingPlan;
  browserBatching: BatchingPlan;
  /** History lengths in tokens: on the realistic model, and on the bundled chat model. */
  historyTokens: number;
  bundledHistoryTokens: number;
}

export const REALISTIC_PLAN: RealisticPlan = {
  decode: [128, 15],
  ttft: [2, 20],
  browserDecode: [64, 8],
  browserTtft: [2, 10],
  reuseSamples: 6,
  batching: {
    streams: [1, 2, 4, 8],
    streamTokens: 64,
    rounds: 3,
    load: { streams: 4, tokens: 64, probes: 5 },
    choices: { n: 4, tokens: 32, pairs: 5 },
  },
  browserBatching: {
    streams: [1, 2, 4, 8],
    streamTokens: 32,
    rounds: 2,
    load: { streams: 4, tokens: 48, probes: 4 },
    choices: { n: 4, tokens: 24, pairs: 3 },
  },
  historyTokens: 1000,
  bundledHistoryTokens: 900,
};

/** The concurrency measures of the smoke pass: each once, on a few tokens. */
const SMOKE_BATCHING: BatchingPlan = {
  streams: [1, 4],
  streamTokens: 2,
  rounds: 1,
  load: { streams: 2, tokens: 8, probes: 1 },
  choices: { n: 4, tokens: 2, pairs: 1 },
};

/** The smoke pass: every measure once, on histories as long as the full run's (the window is what can break). */
export const REALISTIC_SMOKE_PLAN: RealisticPlan = {
  decode: [4, 1],
  ttft: [2, 1],
  browserDecode: [4, 1],
  browserTtft: [2, 1],
  reuseSamples: 1,
  batching: SMOKE_BATCHING,
  browserBatching: SMOKE_BATCHING,
  historyTokens: 1000,
  bundledHistoryTokens: 900,
};

export const BUNDLED_CHAT = fileURLToPath(new URL('../public/models/tiny-chat', import.meta.url));
/**
 * The bundled hybrid (LFM2: short convolutions beside attention), whose state cannot be cut back: its second turn
 * reuses a checkpoint (the first turn's whole row, or its prompt's end) where tiny-chat's cuts its cache anywhere.
 */
export const BUNDLED_HYBRID = fileURLToPath(new URL('../public/models/tiny-hybrid', import.meta.url));

/** Plain English words for histories on the bundled model (its tokenizer splits them into a few tokens each). */
export const ENGLISH = (
  'once upon a time a small lantern lived on a shelf every night it glowed softly and the children read their ' +
  'books by its light one winter evening the power went out across the town the lantern kept shining warm and ' +
  'steady until morning came'
).split(' ');

export type ChatFigures = { decode: ReturnType<typeof decode>; firstToken: ReturnType<typeof firstToken> } & {
  delivery: ReturnType<typeof delivery>;
  batching: BatchingFigures;
};

export interface RealisticResults {
  /** Why the realistic model was not measured, if it was not. */
  skipped?: string;
  /** In the smoke pass without the generator's Python modules: the model that ran the section in its place. */
  standIn?: string;
  /** In the smoke pass: the generator's small variant ran the section (bench_llama.py --smoke). */
  smokeVariant?: boolean;
  realistic?: ChatFigures & { reuse: ReuseResult };
  /** The same /v1 figures in Chromium on WebAssembly (the whole path: service worker, engine worker). */
  realisticWasm?: ChatFigures;
  /** Decode through the whole path in the other browsers (Firefox, WebKit; wasm), by column name. */
  realisticOther?: Record<string, Pick<ChatFigures, 'decode' | 'delivery'>>;
  bundledReuse: ReuseResult;
  /** The same on the bundled hybrid, beside it (absent where the fixture is not built). */
  hybridReuse?: ReuseResult;
}

/**
 * What the browser benchmark's runner offers: a chat measure in the page, /v1 against the direct engine, and the
 * concurrency measures.
 */
type ChatRunner = BatchingRunner & { chat(model: string, tokens: number, count: number): Promise<ChatSamples> };

/** The plan with its replies cut to what the window of the model at `folder` leaves after the prompt. */
export async function fitPlan(
  log: (message: string) => void,
  plan: RealisticPlan,
  folder: string,
): Promise<RealisticPlan> {
  const room = await replyRoomAt(folder, ENDLESS_MESSAGES);
  const cut = (tokens: number, what: string) => {
    if (tokens > room) log(`realistic model, ${what}: ${tokens} tokens cut to the ${room} its window leaves`);
    return Math.min(tokens, room);
  };
  const fit = ([tokens, runs]: readonly [number, number], what: string): [number, number] => [cut(tokens, what), runs];
  const fitBatching = (b: BatchingPlan, where: string): BatchingPlan => ({
    ...b,
    streamTokens: cut(b.streamTokens, `concurrent streams${where}`),
    load: { ...b.load, tokens: cut(b.load.tokens, `load${where}`) },
    choices: { ...b.choices, tokens: cut(b.choices.tokens, `choices${where}`) },
  });
  return {
    ...plan,
    decode: fit(plan.decode, 'decode'),
    ttft: fit(plan.ttft, 'first token'),
    browserDecode: fit(plan.browserDecode, 'decode in Chromium'),
    browserTtft: fit(plan.browserTtft, 'first token in Chromium'),
    batching: fitBatching(plan.batching, ''),
    browserBatching: fitBatching(plan.browserBatching, ' in Chromium'),
  };
}

/** The realistic model in Chromium on WebAssembly (fewer runs: its tokens are slower there). */
export async function realisticInBrowser(
  log: (message: string) => void,
  runner: ChatRunner,
  plan: RealisticPlan = REALISTIC_PLAN,
): Promise<ChatFigures> {
  log('wasm, realistic model: decode');
  const chat = await runner.chat(REALISTIC, ...plan.browserDecode);
  log('wasm, realistic model: time to first token');
  const first = await runner.chat(REALISTIC, ...plan.browserTtft);
  const batching = await measureBatching(log, 'wasm, realistic model', runner, REALISTIC, plan.browserBatching);
  return { decode: decode(chat), firstToken: firstToken(first), delivery: delivery(chat), batching };
}

/**
 * Runs the section, building the realistic model first if it is not there yet. Returns the figures, the model it ran
 * (for the browser's part) if any, and the plan as that model's window allows it.
 */
export async function realisticBench(
  log: (message: string) => void,
  plan: RealisticPlan = REALISTIC_PLAN,
  smoke = false,
): Promise<{ results: RealisticResults; model: RealisticModel | undefined; plan: RealisticPlan }> {
  log('node, bundled model: second-turn first token, reuse against recompute');
  const bundledReuse = await reuseBench(BUNDLED_CHAT, ENGLISH, plan.bundledHistoryTokens, plan.reuseSamples);
  let hybridReuse: ReuseResult | undefined;
  if (existsSync(BUNDLED_HYBRID)) {
    log('node, bundled hybrid: second-turn first token, reuse (checkpoints) against recompute');
    hybridReuse = await reuseBench(BUNDLED_HYBRID, ENGLISH, plan.bundledHistoryTokens, plan.reuseSamples);
  }
  const { model, skipped } = prepareRealisticModel(log, {
    smoke,
    ...(smoke && { standIn: { dir: BUNDLED_CHAT, words: ENGLISH } }),
  });
  if (skipped) log(`realistic model skipped: ${skipped}`);
  if (!model) return { results: { skipped: skipped!, bundledReuse, hybridReuse }, model, plan };
  if (model.standIn) log(`smoke pass: the bundled tiny-chat runs the realistic section in its place`);
  plan = await fitPlan(log, plan, model.dir);
  const runner = await nodeBench(singleModelProfile(REALISTIC, model.dir));
  log('node, realistic model: decode');
  const chat = await runner.chat(REALISTIC, ...plan.decode);
  log('node, realistic model: time to first token');
  const first = await runner.chat(REALISTIC, ...plan.ttft);
  const batching = await measureBatching(log, 'node, realistic model', runner, REALISTIC, plan.batching);
  log('node, realistic model: second-turn first token, reuse against recompute');
  const reuse = await reuseBench(model.dir, model.words, plan.historyTokens, plan.reuseSamples);
  return {
    results: {
      ...(skipped ? { skipped, standIn: 'public/models/tiny-chat' } : smoke && { smokeVariant: true }),
      realistic: { decode: decode(chat), firstToken: firstToken(first), delivery: delivery(chat), batching, reuse },
      bundledReuse,
      hybridReuse,
    },
    model,
    plan,
  };
}

/**
 * The section's table: the realistic model beside the Node figures of the tiny models from the same run; its
 * concurrency rows name the stream counts of `batching`, the plan that ran.
 */
export function realisticTable(
  results: RealisticResults,
  tiny: { bundled: Partial<ChatFigures>; stories?: Partial<ChatFigures> | undefined },
  batching: BatchingPlan = REALISTIC_PLAN.batching,
): string {
  // The third element marks the realistic model's columns: the concurrency target is set on it.
  type Column = [string, Partial<ChatFigures> & { reuse?: ReuseResult }, boolean?];
  const columns: Column[] = [['bundled tiny-chat', { ...tiny.bundled, reuse: results.bundledReuse }]];
  if (results.hybridReuse) columns.push(['bundled tiny-hybrid (LFM2, checkpoints)', { reuse: results.hybridReuse }]);
  if (tiny.stories) columns.push(['stories260K', tiny.stories]);
  // In the smoke pass, another model runs the section: the columns say which.
  const [name, short] = results.standIn
    ? ['tiny-chat, in place of the realistic model', 'tiny-chat']
    : results.smokeVariant
      ? ["the realistic model's smoke variant (0.6M, 4k vocabulary)", 'realistic (smoke variant)']
      : ['realistic (random-weight LLaMA, 44M, 32k vocabulary)', 'realistic'];
  if (results.realistic) columns.push([name, results.realistic, true]);
  if (results.realisticWasm) columns.push([`${short}, Chromium wasm (whole path)`, results.realisticWasm, true]);
  for (const [browser, figures] of Object.entries(results.realisticOther ?? {})) {
    columns.push([`${short}, ${browser} (whole path)`, figures, true]);
  }
  const ok = (pass: boolean) => (pass ? '✓' : '✗');
  const row = (
    label: string,
    cell: (c: Partial<ChatFigures> & { reuse?: ReuseResult }, realistic: boolean) => string | undefined,
  ) => `| ${label} | ${columns.map(([, c, realistic]) => cell(c, realistic === true) ?? '–').join(' | ')} |`;
  return [
    `| Measure (Node, handler, unless said) | ${columns.map(([name]) => name).join(' | ')} |`,
    `| --- | ${columns.map(() => '---').join(' | ')} |`,
    row(
      'Decode, direct: tokens/s (ms a token)',
      (c) => c.decode && `${c.decode.directTokensPerSecond} (${(1000 / c.decode.directTokensPerSecond).toFixed(1)})`,
    ),
    row(
      'Decode throughput, /v1 ÷ direct (target ≥ 0.97)',
      (c) => c.decode && `${c.decode.ratio} ${ok(c.decode.ratio >= 0.97)}`,
    ),
    row('Decode time added by /v1, ms per token', (c) => c.decode && `${c.decode.addedMsPerToken}`),
    row(
      'First token, ms added by /v1, p50 (target ≤ 5) / p95',
      (c) => c.firstToken && `${c.firstToken.addedP50} ${ok(c.firstToken.addedP50 <= 5)} / ${c.firstToken.addedP95}`,
    ),
    row(
      'Token generated → received by the SDK, ms p50 / p95',
      (c) => c.delivery && `${c.delivery.delayP50} / ${c.delivery.delayP95}`,
    ),
    ...batchingRows(batching).map(([label, cell]) => row(label, (c, realistic) => cell(c.batching, realistic))),
    row(
      'Second turn: history / prompt / cached tokens',
      (c) => c.reuse && `${c.reuse.historyTokens} / ${c.reuse.promptTokens} / ${c.reuse.cachedTokens}`,
    ),
    row(
      'Second turn, first token: reuse / recompute, ms p50 (speedup, target ≥ 3×)',
      (c) =>
        c.reuse &&
        `${c.reuse.reuseTtftP50} / ${c.reuse.recomputeTtftP50} (${c.reuse.speedup}× ${ok(c.reuse.speedup >= 3)})`,
    ),
  ].join('\n');
}
