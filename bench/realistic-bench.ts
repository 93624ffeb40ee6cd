import { fileURLToPath } from 'node:url';
import { decode, delivery, firstToken, type ChatSamples } from './measures.ts';
import { nodeBench } from './node-bench.ts';
import {
  ensureRealisticModel,
  REALISTIC,
  REALISTIC_DIR,
  realisticWords,
  singleModelProfile,
} from './realistic-model.ts';
import { reuseBench, type ReuseResult } from './reuse-bench.ts';

/**
 * The benchmark at the scale of real models: the /v1 path against the direct engine on the realistic model (decode,
 * first token, delivery) in Node and in Chromium on WebAssembly, and second-turn time to first token with prefix reuse
 * against full recompute in Node, on a 1,000-token history there and on a 900-token one on the bundled chat model (its
 * window is 1,024 tokens).
 */
const PLAN = { decode: [128, 15], ttft: [2, 20], reuseSamples: 6 } as const;
const BROWSER_PLAN = { decode: [64, 8], ttft: [2, 10] } as const;
const HISTORY_TOKENS = 1000;
const BUNDLED_HISTORY_TOKENS = 900;
const BUNDLED_CHAT = fileURLToPath(new URL('../public/models/tiny-chat', import.meta.url));

/** Plain English words for histories on the bundled model (its tokenizer splits them into a few tokens each). */
const ENGLISH = (
  'once upon a time a small lantern lived on a shelf every night it glowed softly and the children read their ' +
  'books by its light one winter evening the power went out across the town the lantern kept shining warm and ' +
  'steady until morning came'
).split(' ');

type ChatFigures = { decode: ReturnType<typeof decode>; firstToken: ReturnType<typeof firstToken> } & {
  delivery: ReturnType<typeof delivery>;
};

export interface RealisticResults {
  /** Why the realistic model was not measured, if it was not. */
  skipped?: string;
  realistic?: ChatFigures & { reuse: ReuseResult };
  /** The same /v1 figures in Chromium on WebAssembly (the whole path: service worker, engine worker). */
  realisticWasm?: ChatFigures;
  bundledReuse: ReuseResult;
}

/** What the browser benchmark's runner offers: a chat measure in the page, /v1 against the direct engine. */
type ChatRunner = { chat(model: string, tokens: number, count: number): Promise<ChatSamples> };

/** The realistic model in Chromium on WebAssembly (fewer runs: its tokens are slower there). */
export async function realisticInBrowser(log: (message: string) => void, runner: ChatRunner): Promise<ChatFigures> {
  log('wasm, realistic model: decode');
  const chat = await runner.chat(REALISTIC, BROWSER_PLAN.decode[0], BROWSER_PLAN.decode[1]);
  log('wasm, realistic model: time to first token');
  const first = await runner.chat(REALISTIC, BROWSER_PLAN.ttft[0], BROWSER_PLAN.ttft[1]);
  return { decode: decode(chat), firstToken: firstToken(first), delivery: delivery(chat) };
}

/** Runs the section, building the realistic model first if it is not there yet. */
export async function realisticBench(log: (message: string) => void): Promise<RealisticResults> {
  log('node, bundled model: second-turn first token, reuse against recompute');
  const bundledReuse = await reuseBench(BUNDLED_CHAT, ENGLISH, BUNDLED_HISTORY_TOKENS, PLAN.reuseSamples);
  const skipped = ensureRealisticModel(log);
  if (skipped) {
    log(`realistic model skipped: ${skipped}`);
    return { skipped, bundledReuse };
  }
  const runner = await nodeBench(singleModelProfile(REALISTIC, REALISTIC_DIR));
  log('node, realistic model: decode');
  const chat = await runner.chat(REALISTIC, PLAN.decode[0], PLAN.decode[1]);
  log('node, realistic model: time to first token');
  const first = await runner.chat(REALISTIC, PLAN.ttft[0], PLAN.ttft[1]);
  log('node, realistic model: second-turn first token, reuse against recompute');
  const reuse = await reuseBench(REALISTIC_DIR, realisticWords(), HISTORY_TOKENS, PLAN.reuseSamples);
  return {
    realistic: { decode: decode(chat), firstToken: firstToken(first), delivery: delivery(chat), reuse },
    bundledReuse,
  };
}

/** The section's table: the realistic model beside the Node figures of the tiny models from the same run. */
export function realisticTable(
  results: RealisticResults,
  tiny: { bundled: Partial<ChatFigures>; stories?: Partial<ChatFigures> | undefined },
): string {
  type Column = [string, Partial<ChatFigures> & { reuse?: ReuseResult }];
  const columns: Column[] = [['bundled tiny-chat', { ...tiny.bundled, reuse: results.bundledReuse }]];
  if (tiny.stories) columns.push(['stories260K', tiny.stories]);
  if (results.realistic) columns.push(['realistic (random-weight LLaMA, 44M, 32k vocabulary)', results.realistic]);
  if (results.realisticWasm) columns.push(['realistic, Chromium wasm (whole path)', results.realisticWasm]);
  const ok = (pass: boolean) => (pass ? '✓' : '✗');
  const row = (label: string, cell: (c: Partial<ChatFigures> & { reuse?: ReuseResult }) => string | undefined) =>
    `| ${label} | ${columns.map(([, c]) => cell(c) ?? '–').join(' | ')} |`;
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
