/**
 * Speech to text (`POST /v1/audio/transcriptions`) on the bundled tiny-whisper (`teal-finch-4`, called `whisper-1`
 * through /v1), on the held-out clips of test/fixtures/speech: the real-time factor (seconds of audio transcribed per
 * second of compute) of the short clips and of long.wav (several of the model's windows), and what the /v1 path costs
 * over the engine called directly, as a ratio of wall times. In Node: the engine against the openai SDK calling the
 * handler through its `fetch` option, in one process. In Chromium on WebAssembly (no WebGPU): the engine in a worker
 * of the bench page (bench/browser/direct-worker.ts) against the SDK in the page sending a `File` made there, through
 * the service worker and the engine worker.
 *
 * Each round transcribes every clip directly, then through /v1, in turn, after one warm-up of each way (the model's
 * load); the ratios are medians over those pairs, which share the machine's drift. Rounds stop at the plan's time
 * budget once one is done, so a model that loops to its token limit cannot hold the bench up for minutes. The transcripts' word error rate against the
 * manifest says whether the model transcribed or looped to its token limit (which sets the figures more than the
 * path does). A section of `npm run bench` and of its smoke pass (bench/run.ts).
 */
import { chromium } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { toFile } from 'openai';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { startServer } from '../test/e2e/servers.ts';
import { openaiClient } from '../test/support/lantern.ts';
import { wordErrors } from '../test/support/word-error-rate.ts';
import type { DeviceInfo } from '../src/worker/protocol.ts';
import type { Bench } from './browser/bench-page.ts';
import { CHROMIUM_ARGS } from './cold-start.ts';
import { benchProfile } from './models.ts';
import { median, round } from './stats.ts';

/** The bundled speech model, and the name a client of /v1 calls it by. */
export const SPEECH = 'teal-finch-4';
const ALIAS = 'whisper-1';

const FIXTURES = fileURLToPath(new URL('../test/fixtures/speech/', import.meta.url));
const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
const MANIFEST: { file: string; text: string }[] = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, 'utf8'));
/** The short held-out phrases (clip00.wav …), a few seconds each. */
const CLIPS = MANIFEST.map((clip) => clip.file).filter((file) => /^clip\d+\.wav$/.test(file));
const LONG = 'long.wav';

export interface TranscriptionPlan {
  /** The short clips, each transcribed once a round. */
  clips: readonly string[];
  /** Whether a round also transcribes long.wav, once. */
  long: boolean;
  /** Rounds at most: after the first, no round starts once the measure has run `budgetSeconds`. */
  rounds: number;
  budgetSeconds: number;
  /** Whether one transcription each way goes first, untimed (the model's load, onnxruntime's first passes). */
  warmUp: boolean;
}

export const TRANSCRIPTION_PLAN: TranscriptionPlan = {
  clips: CLIPS,
  long: true,
  rounds: 3,
  budgetSeconds: 20,
  warmUp: true,
};
/** The smoke pass: one clip once each way, its load timed with it. */
export const TRANSCRIPTION_SMOKE_PLAN: TranscriptionPlan = {
  clips: CLIPS.slice(0, 1),
  long: false,
  rounds: 1,
  budgetSeconds: 0,
  warmUp: false,
};

/** One transcription: its wall time in ms, its text, and the audio's length in seconds (the direct call's). */
interface Run {
  ms: number;
  text: string;
}
interface DirectRun extends Run {
  duration: number;
}

/** What an environment offers the measure: the same clip transcribed directly, and through /v1 with the SDK. */
interface TranscriptionRunner {
  direct(file: string): Promise<DirectRun>;
  path(file: string): Promise<Run>;
}

/** Pairs of one set of clips: the direct run, then the /v1 run of the same clip. */
interface Pair {
  file: string;
  direct: DirectRun;
  path: Run;
}

/** The figures of one set of clips. */
export interface TranscriptionFigures {
  clips: number;
  runs: number;
  /** The set's audio, seconds (each clip once). */
  audioSeconds: number;
  /** Audio seconds over compute seconds, over all the pairs: direct, and through /v1. */
  realTimeFactor: { direct: number; path: number };
  /** Median ms of one transcription, direct and through /v1. */
  ms: { direct: number; path: number };
  /** Wall time through /v1 ÷ direct, median over pairs (1 = the path costs nothing); the ms it adds, median. */
  ratio: number;
  addedMs: number;
  /** Word error rate of the direct transcripts against the manifest (all words together). */
  wordErrorRate: number;
  /** Pairs whose two transcripts are the same text. */
  sameText: string;
}

export interface TranscriptionResults {
  short: TranscriptionFigures;
  long?: TranscriptionFigures;
}

const textOf = (file: string) => MANIFEST.find((clip) => clip.file === file)!.text;
/** A real-time factor to about two significant digits. */
const factor = (value: number) => round(value, value < 10 ? 2 : 1);
/** Milliseconds with their sign: the path can come out faster than the direct call on a noisy machine. */
const signed = (ms: number) => `${ms < 0 ? '−' : '+'}${Math.abs(ms)} ms`;

function figures(pairs: Pair[]): TranscriptionFigures {
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const audio = sum(pairs.map((p) => p.direct.duration));
  const scores = pairs.map((p) => wordErrors(textOf(p.file), p.direct.text));
  const files = new Set(pairs.map((p) => p.file));
  return {
    clips: files.size,
    runs: pairs.length / files.size,
    audioSeconds: round(audio / (pairs.length / files.size), 2),
    realTimeFactor: {
      direct: factor(audio / (sum(pairs.map((p) => p.direct.ms)) / 1000)),
      path: factor(audio / (sum(pairs.map((p) => p.path.ms)) / 1000)),
    },
    ms: {
      direct: round(median(pairs.map((p) => p.direct.ms)), 1),
      path: round(median(pairs.map((p) => p.path.ms)), 1),
    },
    ratio: round(median(pairs.map((p) => p.path.ms / p.direct.ms)), 3),
    addedMs: round(median(pairs.map((p) => p.path.ms - p.direct.ms)), 1),
    wordErrorRate: round(sum(scores.map((s) => s.errors)) / sum(scores.map((s) => s.words)), 3),
    sameText: `${pairs.filter((p) => p.direct.text.trim() === p.path.text.trim()).length}/${pairs.length}`,
  };
}

/** The plan's pairs on `runner`, after its warm-up. */
async function measure(
  name: string,
  plan: TranscriptionPlan,
  runner: TranscriptionRunner,
  log: (message: string) => void,
): Promise<TranscriptionResults> {
  if (plan.warmUp) {
    log(`${name}: transcription, warm-up (the model's load)`);
    await runner.direct(plan.clips[0]!);
    await runner.path(plan.clips[0]!);
  }
  const pair = async (file: string): Promise<Pair> => ({
    file,
    direct: await runner.direct(file),
    path: await runner.path(file),
  });
  const short: Pair[] = [];
  const long: Pair[] = [];
  const started = performance.now();
  for (let round = 0; round < plan.rounds; round++) {
    const spent = (performance.now() - started) / 1000;
    if (round > 0 && spent > plan.budgetSeconds) {
      log(
        `${name}: transcription, ${round} rounds of ${plan.rounds}: ${Math.round(spent)} s spent of ${plan.budgetSeconds}`,
      );
      break;
    }
    const what = `${plan.clips.length} short clips${plan.long ? ` and ${LONG}` : ''}`;
    log(`${name}: transcription, ${what}, round ${round + 1}/${plan.rounds}`);
    for (const file of plan.clips) short.push(await pair(file));
    if (plan.long) long.push(await pair(LONG));
  }
  const results = { short: figures(short), ...(long.length && { long: figures(long) }) };
  for (const [set, f] of Object.entries(results)) {
    log(
      `${name}: ${set}: real-time factor ${f.realTimeFactor.direct}× direct, ${f.realTimeFactor.path}× /v1; ` +
        `/v1 ÷ direct ${f.ratio} (${signed(f.addedMs)}); word error rate ${f.wordErrorRate}`,
    );
  }
  return results;
}

const bytesOf = (file: string) => new Uint8Array(readFileSync(`${FIXTURES}${file}`));

/** In Node: the engine, and the openai SDK calling the handler over the same engine. */
export async function transcriptionNode(
  plan: TranscriptionPlan,
  log: (message: string) => void,
): Promise<TranscriptionResults> {
  const engine = createEngine({ profile: benchProfile(MODELS) });
  const keys = new KeyRing();
  const handler = createHandler({ engine, keys, rateLimits: { requestsPerMinute: 1e6 } });
  const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
  return measure(
    'node',
    plan,
    {
      async direct(file) {
        const audio = { bytes: bytesOf(file), name: file, type: 'audio/wav' };
        const started = performance.now();
        const result = await engine.transcribe(SPEECH, { audio, task: 'transcribe', temperature: 0, words: false });
        return { ms: performance.now() - started, text: result.text, duration: result.duration };
      },
      async path(file) {
        const bytes = bytesOf(file);
        const started = performance.now();
        const result = await client.audio.transcriptions.create({ file: await toFile(bytes, file), model: ALIAS });
        return { ms: performance.now() - started, text: result.text };
      },
    },
    log,
  );
}

/** The server of this section's bench page: of its own, cross-origin isolated as bench/run.ts serves it. */
const PORT = 4193;
const HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/** In Chromium without WebGPU: the engine in a worker of the bench page, and the SDK through the service worker. */
export async function transcriptionBrowser(
  plan: TranscriptionPlan,
  log: (message: string) => void,
): Promise<TranscriptionResults & { device: DeviceInfo | null; chromium: string }> {
  const server = await startServer(PORT, HEADERS);
  try {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
    });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (error) => log(`transcription: page error: ${error.message}`));
      await page.goto(`${server.origin}/bench/browser/bench.html?device=wasm`);
      await page.waitForFunction(() => (window as { bench?: Bench }).bench !== undefined, undefined, {
        timeout: 120_000,
      });
      const device = (await page.evaluate(() => (window as unknown as { bench: Bench }).bench.device())) ?? null;
      // The clips' bytes go to the page once; each run then makes its own copy there (a `File`, or the worker's).
      for (const file of new Set([...plan.clips, ...(plan.long ? [LONG] : [])])) {
        const data = readFileSync(`${FIXTURES}${file}`).toString('base64');
        await page.evaluate(([f, d]) => (window as unknown as { bench: Bench }).bench.audio(f!, d!), [file, data]);
      }
      const results = await measure(
        'wasm',
        plan,
        {
          direct: (file) =>
            page.evaluate(
              ([m, f]) => (window as unknown as { bench: Bench }).bench.transcribeDirect(m!, f!),
              [SPEECH, file],
            ),
          path: (file) =>
            page.evaluate(
              ([m, f]) => (window as unknown as { bench: Bench }).bench.transcribePath(m!, f!),
              [ALIAS, file],
            ),
        },
        log,
      );
      return { ...results, device, chromium: browser.version() };
    } finally {
      await browser.close();
    }
  } finally {
    await server.close();
  }
}

/** The section's table for the bench's markdown: one column an environment. */
export function transcriptionTable(columns: Record<string, TranscriptionResults>): string {
  const names = Object.keys(columns);
  const row = (label: string, cell: (r: TranscriptionResults) => string | number | undefined) =>
    `| ${label} | ${names.map((n) => cell(columns[n]!) ?? '–').join(' | ')} |`;
  const sets = (['short', 'long'] as const).filter((set) => names.some((n) => columns[n]![set]));
  return [
    `| Measure (bundled tiny-whisper, \`${SPEECH}\`) | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    ...sets.flatMap((set) => {
      const of = (r: TranscriptionResults) => r[set];
      const any = names.map((n) => of(columns[n]!)).find(Boolean)!;
      const what =
        set === 'short'
          ? `Short clips (${any.clips}, ${any.audioSeconds} s of audio), ×${any.runs}`
          : `${LONG} (${any.audioSeconds} s), ×${any.runs}`;
      return [
        row(`${what}: real-time factor, direct → /v1 (audio s per compute s)`, (r) => {
          const f = of(r);
          return f && `${f.realTimeFactor.direct}× → ${f.realTimeFactor.path}×`;
        }),
        row(`${what}: ms a transcription, direct → /v1, median`, (r) => {
          const f = of(r);
          return f && `${f.ms.direct} → ${f.ms.path}`;
        }),
        row(`${what}: wall time /v1 ÷ direct, median of pairs (time added)`, (r) => {
          const f = of(r);
          return f && `${f.ratio} (${signed(f.addedMs)})`;
        }),
        row(`${what}: word error rate (direct); same text both ways`, (r) => {
          const f = of(r);
          return f && `${f.wordErrorRate}; ${f.sameText}`;
        }),
      ];
    }),
  ].join('\n');
}

// Alone: `tsx bench/transcription.ts [--smoke] [--node]` (on the dist-e2e build; `--node`: Node only).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = process.argv.includes('--smoke') ? TRANSCRIPTION_SMOKE_PLAN : TRANSCRIPTION_PLAN;
  const log = (message: string) => console.log(`[bench] ${message}`);
  const started = performance.now();
  const columns: Record<string, TranscriptionResults> = { Node: await transcriptionNode(plan, log) };
  if (!process.argv.includes('--node')) {
    const { device: _, chromium: __, ...wasm } = await transcriptionBrowser(plan, log);
    columns['Chromium, wasm'] = wasm;
  }
  console.log(`\n${transcriptionTable(columns)}\n\n${JSON.stringify(columns)}`);
  log(`transcription: ${round((performance.now() - started) / 1000, 1)} s`);
}
