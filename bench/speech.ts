/**
 * Text to speech (`POST /v1/audio/speech`) on the bundled tiny-speech (`ochre-lark-4`, called `tts-1` through /v1):
 *
 * - the real-time factor (seconds of audio made per second of compute, as bench/transcription.ts counts it) and the
 *   time to the first audio byte, of the engine's `speak` called directly and of the openai SDK through /v1 (the body
 *   read as it arrives), on four sentences and on twenty, in `pcm` and in a compressed format (`opus`); and the time
 *   to the first `speech.audio.delta` of `stream_format: "sse"`;
 * - each format's encoder alone: ms per second of audio, pushed a sentence at a time as the route pushes it (mp3 and
 *   aac through the optional packages, installed here as devDependencies);
 * - intelligibility: held-out phrases (test/fixtures/speech's clip texts, which neither tiny-whisper's training nor
 *   tiny-speech's saw) said through /v1 as `wav` in a voice that rotates, then written down through
 *   `/v1/audio/transcriptions` by the bundled tiny-whisper (`whisper-1`): the transcripts' word error rate.
 *
 * In Node: the engine against the SDK calling the handler through its `fetch` option, in one process. In Chromium on
 * WebAssembly (no WebGPU): the engine in a worker of the bench page (bench/browser/direct-worker.ts), which encodes
 * as the engine worker does, against the SDK in the page through the service worker and the engine worker.
 *
 * Each round says every input in every format directly, then through /v1 (and, in `pcm`, once more as SSE), after one
 * warm-up of each way (the model's load, each encoder's); the /v1 ÷ direct ratios are medians over those pairs, which
 * share the machine's drift. Rounds stop at the plan's time budget once one is done. A section of `npm run bench` and
 * of its smoke pass (bench/run.ts); alone: `npx tsx bench/speech.ts [--smoke] [--node]`.
 */
import { chromium } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { toFile } from 'openai';
import { probeEncoders, SPEECH_FORMATS, type SpeechFormat } from '../src/audio/index.ts';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { startServer } from '../test/e2e/servers.ts';
import { openaiClient } from '../test/support/lantern.ts';
import { wordErrors } from '../test/support/word-error-rate.ts';
import type { DeviceInfo } from '../src/worker/protocol.ts';
import type { Bench } from './browser/bench-page.ts';
import { pcmToFloat, readSpeech, timeEncoder, type SpeechReading } from './browser/speech-measures.ts';
import { CHROMIUM_ARGS } from './cold-start.ts';
import { benchProfile } from './models.ts';
import { median, round } from './stats.ts';

/** The bundled text-to-speech model, and the name a client of /v1 calls it by; the speech-to-text one's. */
const SPEECH = 'ochre-lark-4';
const ALIAS = 'tts-1';
const WHISPER = 'whisper-1';
/** The voice of the timed measures (an OpenAI name: `us_female` on tiny-speech); the round trip's rotate. */
const VOICE = 'alloy';
const VOICES = ['us_female', 'us_male', 'gb_female', 'gb_male'];

const FIXTURES = fileURLToPath(new URL('../test/fixtures/speech/', import.meta.url));
const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
const MANIFEST: { file: string; text: string }[] = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, 'utf8'));
/** tiny-whisper's held-out phrases (clip00.wav …): neither fixture was trained on them. */
const PHRASES = MANIFEST.filter((clip) => /^clip\d+\.wav$/.test(clip.file)).map((clip) => clip.text);
/** The inputs' sentences: the phrases, then long.wav's other sentences (held out as well). */
const SENTENCES = [
  ...new Set([...PHRASES, ...MANIFEST.find((clip) => clip.file === 'long.wav')!.text.split(/(?<=\.)\s+/)]),
];

/** What the timed measures say: two sentences (the smoke pass), four, and twenty. */
const INPUTS = {
  short: SENTENCES.slice(0, 2).join(' '),
  four: SENTENCES.slice(0, 4).join(' '),
  long: SENTENCES.slice(0, 20).join(' '),
} as const;
type InputName = keyof typeof INPUTS;
const LABELS: Record<InputName, string> = { short: 'Two sentences', four: 'Four sentences', long: 'Twenty sentences' };

export interface SpeechPlan {
  /** The inputs, each said once a round in each format, directly and through /v1. */
  inputs: readonly InputName[];
  formats: readonly SpeechFormat[];
  /** Whether each input in `pcm` goes through /v1 once more a round as server-sent events. */
  sse: boolean;
  /** Rounds at most: after the first, no round starts once the measure has run `budgetSeconds`. */
  rounds: number;
  budgetSeconds: number;
  /** Whether one synthesis each way, and one run of each encoder, go first, untimed (loads, first passes). */
  warmUp: boolean;
  /** The encoders timed, each on `input`'s speech `runs` times. */
  encoders: { formats: readonly SpeechFormat[]; input: InputName; runs: number };
  /** The round trip: the first `phrases` held-out phrases, at each speed. */
  roundTrip: { phrases: number; speeds: readonly number[] };
}

export const SPEECH_PLAN: SpeechPlan = {
  inputs: ['four', 'long'],
  formats: ['pcm', 'opus'],
  sse: true,
  rounds: 4,
  budgetSeconds: 40,
  warmUp: true,
  encoders: { formats: SPEECH_FORMATS, input: 'long', runs: 3 },
  roundTrip: { phrases: PHRASES.length, speeds: [1, 0.75, 1.5] },
};
/** The smoke pass: each measure once on two sentences, the loads timed with them. */
export const SPEECH_SMOKE_PLAN: SpeechPlan = {
  inputs: ['short'],
  formats: ['pcm', 'opus'],
  sse: true,
  rounds: 1,
  budgetSeconds: 0,
  warmUp: false,
  encoders: { formats: SPEECH_FORMATS, input: 'short', runs: 1 },
  roundTrip: { phrases: 1, speeds: [1] },
};

/** One synthesis by the engine: ms to its first audio bytes and to its end, the audio's seconds and bytes. */
interface Spoken extends SpeechReading {
  seconds: number;
}

/** What an environment offers the measures. */
interface SpeechRunner {
  direct(input: string, format: SpeechFormat): Promise<Spoken>;
  path(input: string, format: SpeechFormat, stream: 'audio' | 'sse'): Promise<SpeechReading>;
  /** ms to encode `input`'s speech into `format`, its seconds, and the encoder the format takes there. */
  encode(input: string, format: SpeechFormat): Promise<{ ms: number; seconds: number; path: string }>;
  /** What tiny-whisper writes down of `input` said through /v1. */
  roundTrip(input: string, voice: string, speed: number): Promise<string>;
}

/** The direct synthesis, then the same through /v1. */
interface Pair {
  direct: Spoken;
  path: SpeechReading;
}

/** The figures of one input in one format. */
export interface SpeechFigures {
  runs: number;
  sentences: number;
  /** Seconds of audio of one synthesis. */
  audioSeconds: number;
  /** Audio seconds over compute seconds, over all the pairs: direct, and through /v1. */
  realTimeFactor: { direct: number; path: number };
  /** Median ms to the first audio byte, direct and through /v1. */
  firstAudioMs: { direct: number; path: number };
  /** Median ms of the whole synthesis, direct and through /v1. */
  ms: { direct: number; path: number };
  /** The direct first audio ÷ the direct whole, median: how soon the first sentence is there to be played. */
  firstAudioShare: number;
  /** Wall time through /v1 ÷ direct, median over pairs (1 = the path costs nothing); the ms it adds, median. */
  ratio: number;
  addedMs: number;
  /** The first audio through /v1 ÷ direct, median over pairs. */
  firstAudioRatio: number;
  /** Pairs whose two answers held as many bytes of audio. */
  sameBytes: string;
}

/** `stream_format: "sse"` in `pcm`, paired with the direct `pcm` synthesis of the same round. */
export interface SseFigures {
  runs: number;
  /** Median ms to the first `speech.audio.delta`, and to the end. */
  firstDeltaMs: number;
  ms: number;
  /** The first delta ÷ the direct first audio, median over pairs. */
  firstAudioRatio: number;
  /** Pairs whose deltas, decoded, held as many bytes as the direct audio. */
  sameBytes: string;
}

export interface EncoderFigures {
  /** Which encoder the format takes there (encoder-paths.ts): container, webcodecs, wasm, optional-wasm. */
  path: string;
  runs: number;
  /** Median ms of one encoding ÷ the audio's seconds. */
  msPerAudioSecond: number;
}

export interface RoundTripFigures {
  phrases: number;
  words: number;
  wordErrorRate: number;
  /** The phrases not written down exactly: voice, what was heard, what was said. */
  misses: string[];
}

export interface SpeechResults {
  inputs: Partial<Record<InputName, { formats: Partial<Record<SpeechFormat, SpeechFigures>>; sse?: SseFigures }>>;
  encoders: Partial<Record<SpeechFormat, EncoderFigures>>;
  /** By speed (`1`, `0.75`, `1.5`). */
  roundTrip: Record<string, RoundTripFigures>;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
/** A real-time factor to about two significant digits. */
const factor = (value: number) => round(value, value < 10 ? 2 : 1);
/** Milliseconds with their sign: the path can come out faster than the direct call on a noisy machine. */
const signed = (ms: number) => `${ms < 0 ? '−' : '+'}${Math.abs(ms)} ms`;
const sentencesOf = (text: string) => text.split(/(?<=\.)\s+/).length;

function figures(input: InputName, pairs: Pair[]): SpeechFigures {
  const audio = sum(pairs.map((p) => p.direct.seconds));
  return {
    runs: pairs.length,
    sentences: sentencesOf(INPUTS[input]),
    audioSeconds: round(audio / pairs.length, 2),
    realTimeFactor: {
      direct: factor(audio / (sum(pairs.map((p) => p.direct.ms)) / 1000)),
      path: factor(audio / (sum(pairs.map((p) => p.path.ms)) / 1000)),
    },
    firstAudioMs: {
      direct: round(median(pairs.map((p) => p.direct.firstAudioMs)), 1),
      path: round(median(pairs.map((p) => p.path.firstAudioMs)), 1),
    },
    ms: {
      direct: round(median(pairs.map((p) => p.direct.ms)), 1),
      path: round(median(pairs.map((p) => p.path.ms)), 1),
    },
    firstAudioShare: round(median(pairs.map((p) => p.direct.firstAudioMs / p.direct.ms)), 2),
    ratio: round(median(pairs.map((p) => p.path.ms / p.direct.ms)), 3),
    addedMs: round(median(pairs.map((p) => p.path.ms - p.direct.ms)), 1),
    firstAudioRatio: round(median(pairs.map((p) => p.path.firstAudioMs / p.direct.firstAudioMs)), 3),
    sameBytes: `${pairs.filter((p) => p.path.bytes === p.direct.bytes).length}/${pairs.length}`,
  };
}

function sseFigures(pairs: Pair[]): SseFigures {
  return {
    runs: pairs.length,
    firstDeltaMs: round(median(pairs.map((p) => p.path.firstAudioMs)), 1),
    ms: round(median(pairs.map((p) => p.path.ms)), 1),
    firstAudioRatio: round(median(pairs.map((p) => p.path.firstAudioMs / p.direct.firstAudioMs)), 3),
    sameBytes: `${pairs.filter((p) => p.path.bytes === p.direct.bytes).length}/${pairs.length}`,
  };
}

/** The plan's measures on `runner`: the pairs, after their warm-up; the encoders; the round trip. */
async function measure(
  name: string,
  plan: SpeechPlan,
  runner: SpeechRunner,
  log: (message: string) => void,
): Promise<SpeechResults> {
  if (plan.warmUp) {
    log(`${name}: speech, warm-up (the model's load, the encoders')`);
    for (const format of plan.formats) {
      await runner.direct(INPUTS.short, format);
      await runner.path(INPUTS.short, format, 'audio');
    }
    if (plan.sse) await runner.path(INPUTS.short, 'pcm', 'sse');
  }
  const pairs = new Map<string, Pair[]>();
  const add = (key: string, pair: Pair) => pairs.set(key, [...(pairs.get(key) ?? []), pair]);
  const started = performance.now();
  for (let round = 0; round < plan.rounds; round++) {
    const spent = (performance.now() - started) / 1000;
    if (round > 0 && spent > plan.budgetSeconds) {
      log(`${name}: speech, ${round} rounds of ${plan.rounds}: ${Math.round(spent)} s spent of ${plan.budgetSeconds}`);
      break;
    }
    log(`${name}: speech, ${plan.inputs.join(', ')} in ${plan.formats.join(', ')}, round ${round + 1}/${plan.rounds}`);
    for (const input of plan.inputs) {
      for (const format of plan.formats) {
        const direct = await runner.direct(INPUTS[input], format);
        add(`${input} ${format}`, { direct, path: await runner.path(INPUTS[input], format, 'audio') });
        if (plan.sse && format === 'pcm')
          add(`${input} sse`, { direct, path: await runner.path(INPUTS[input], format, 'sse') });
      }
    }
  }
  const inputs: SpeechResults['inputs'] = {};
  for (const input of plan.inputs) {
    const formats: Partial<Record<SpeechFormat, SpeechFigures>> = {};
    for (const format of plan.formats) {
      const f = (formats[format] = figures(input, pairs.get(`${input} ${format}`)!));
      log(
        `${name}: ${input}, ${format}: real-time factor ${f.realTimeFactor.direct}× direct, ${f.realTimeFactor.path}× /v1; ` +
          `first audio ${f.firstAudioMs.direct} → ${f.firstAudioMs.path} ms; /v1 ÷ direct ${f.ratio} (${signed(f.addedMs)})`,
      );
    }
    const sse = pairs.get(`${input} sse`);
    inputs[input] = { formats, ...(sse && { sse: sseFigures(sse) }) };
  }

  log(`${name}: speech, encoders (${plan.encoders.formats.join(', ')}) on ${plan.encoders.input}`);
  const encoders: SpeechResults['encoders'] = {};
  for (const format of plan.encoders.formats) {
    const text = INPUTS[plan.encoders.input];
    if (plan.warmUp) await runner.encode(text, format);
    const runs = [];
    for (let i = 0; i < plan.encoders.runs; i++) runs.push(await runner.encode(text, format));
    encoders[format] = {
      path: runs[0]!.path,
      runs: runs.length,
      msPerAudioSecond: round(median(runs.map((r) => r.ms / r.seconds)), 3),
    };
  }

  const roundTrip: SpeechResults['roundTrip'] = {};
  for (const speed of plan.roundTrip.speeds) {
    log(
      `${name}: speech, round trip through /v1 (speech, then transcription), ${plan.roundTrip.phrases} phrases at ${speed}×`,
    );
    let errors = 0;
    let words = 0;
    const misses: string[] = [];
    for (const [index, text] of PHRASES.slice(0, plan.roundTrip.phrases).entries()) {
      const voice = VOICES[index % VOICES.length]!;
      const heard = await runner.roundTrip(text, voice, speed);
      const score = wordErrors(text, heard);
      errors += score.errors;
      words += score.words;
      if (score.errors > 0) misses.push(`${voice}: ${JSON.stringify(heard)} for ${JSON.stringify(text)}`);
    }
    roundTrip[speed] = { phrases: plan.roundTrip.phrases, words, wordErrorRate: round(errors / words, 3), misses };
    log(`${name}: round trip at ${speed}×: word error rate ${roundTrip[speed].wordErrorRate} (${errors}/${words})`);
  }
  return { inputs, encoders, roundTrip };
}

/** In Node: the engine, and the openai SDK calling the handler over the same engine. */
export async function speechNode(plan: SpeechPlan, log: (message: string) => void): Promise<SpeechResults> {
  const engine = createEngine({ profile: benchProfile(MODELS) });
  const keys = new KeyRing();
  const handler = createHandler({ engine, keys, rateLimits: { requestsPerMinute: 1e6 } });
  const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
  const direct = async (input: string, format: SpeechFormat, onAudio?: (bytes: Uint8Array) => void) => {
    let firstAudioMs = NaN;
    let bytes = 0;
    const started = performance.now();
    const result = await engine.speak(
      SPEECH,
      { input, voice: VOICE, speed: 1, format },
      {
        onEvent: (event) => {
          if (event.type !== 'audio') return;
          if (bytes === 0) firstAudioMs = performance.now() - started;
          bytes += event.bytes.byteLength;
          onAudio?.(event.bytes);
        },
      },
    );
    return { ms: performance.now() - started, firstAudioMs, seconds: result.seconds, bytes };
  };
  /** Each input's speech as `pcm`, one piece a sentence, synthesised once for the encoders. */
  const spoken = new Map<string, Promise<Float32Array[]>>();
  const { paths } = await probeEncoders();
  return measure(
    'node',
    plan,
    {
      direct: (input, format) => direct(input, format),
      async path(input, format, stream) {
        const started = performance.now();
        const response = await client.audio.speech.create({
          model: ALIAS,
          input,
          voice: VOICE,
          response_format: format,
          stream_format: stream,
        });
        return readSpeech(response, stream, started);
      },
      async encode(input, format) {
        if (!spoken.has(input)) {
          const pieces: Float32Array[] = [];
          spoken.set(
            input,
            direct(input, 'pcm', (bytes) => pieces.push(pcmToFloat(bytes))).then(() => pieces),
          );
        }
        const pieces = await spoken.get(input)!;
        const { ms } = await timeEncoder(format, pieces);
        return { ms, seconds: sum(pieces.map((piece) => piece.length)) / 24_000, path: paths[format] };
      },
      async roundTrip(input, voice, speed) {
        const said = await client.audio.speech.create({ model: ALIAS, input, voice, speed, response_format: 'wav' });
        const file = await toFile(new Uint8Array(await said.arrayBuffer()), 'speech.wav', { type: 'audio/wav' });
        return (await client.audio.transcriptions.create({ file, model: WHISPER })).text;
      },
    },
    log,
  );
}

/** The server of this section's bench page: of its own, cross-origin isolated as bench/run.ts serves it. */
const PORT = 4195;
const HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/** In Chromium without WebGPU: the engine in a worker of the bench page, and the SDK through the service worker. */
export async function speechBrowser(
  plan: SpeechPlan,
  log: (message: string) => void,
): Promise<SpeechResults & { device: DeviceInfo | null; chromium: string }> {
  const server = await startServer(PORT, HEADERS);
  try {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: CHROMIUM_ARGS,
    });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (error) => log(`speech: page error: ${error.message}`));
      await page.goto(`${server.origin}/bench/browser/bench.html?device=wasm`);
      await page.waitForFunction(() => (window as { bench?: Bench }).bench !== undefined, undefined, {
        timeout: 120_000,
      });
      const device = (await page.evaluate(() => (window as unknown as { bench: Bench }).bench.device())) ?? null;
      const results = await measure(
        'wasm',
        plan,
        {
          direct: (input, format) =>
            page.evaluate(
              (a) => (window as unknown as { bench: Bench }).bench.speakDirect(a.model, a.input, a.voice, a.format),
              { model: SPEECH, input, voice: VOICE, format },
            ),
          path: (input, format, stream) =>
            page.evaluate(
              (a) =>
                (window as unknown as { bench: Bench }).bench.speakPath(a.model, a.input, a.voice, a.format, a.stream),
              { model: ALIAS, input, voice: VOICE, format, stream },
            ),
          encode: (input, format) =>
            page.evaluate(
              (a) => (window as unknown as { bench: Bench }).bench.encodeSpeech(a.model, a.input, a.voice, a.format),
              { model: SPEECH, input, voice: VOICE, format },
            ),
          roundTrip: (input, voice, speed) =>
            page.evaluate(
              (a) =>
                (window as unknown as { bench: Bench }).bench.speechRoundTrip(
                  a.speech,
                  a.whisper,
                  a.input,
                  a.voice,
                  a.speed,
                ),
              { speech: ALIAS, whisper: WHISPER, input, voice, speed },
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
export function speechTable(columns: Record<string, SpeechResults>): string {
  const names = Object.keys(columns);
  const row = (label: string, cell: (r: SpeechResults) => string | number | undefined) =>
    `| ${label} | ${names.map((n) => cell(columns[n]!) ?? '–').join(' | ')} |`;
  const any = <T>(of: (r: SpeechResults) => T | undefined) =>
    names.map((n) => of(columns[n]!)).find((value) => value !== undefined);
  const inputs = (Object.keys(INPUTS) as InputName[]).filter((input) => any((r) => r.inputs[input]));
  const rows: string[] = [];
  for (const input of inputs) {
    // In the plan's order (pcm, then the compressed one), as any column holds them.
    const formats = [...new Set(names.flatMap((n) => Object.keys(columns[n]!.inputs[input]?.formats ?? {})))];
    for (const format of formats as SpeechFormat[]) {
      const of = (r: SpeechResults) => r.inputs[input]?.formats[format];
      const first = any(of)!;
      const what = `${LABELS[input]} (${first.audioSeconds} s of audio), ${format}, ×${first.runs}`;
      const cell = (text: (f: SpeechFigures) => string) => (r: SpeechResults) => {
        const f = of(r);
        return f && text(f);
      };
      rows.push(
        row(
          `${what}: real-time factor, direct → /v1 (audio s per compute s)`,
          cell((f) => `${f.realTimeFactor.direct}× → ${f.realTimeFactor.path}×`),
        ),
        row(
          `${what}: ms to the first audio, direct → /v1, median (its share of the direct whole)`,
          cell((f) => `${f.firstAudioMs.direct} → ${f.firstAudioMs.path} (${f.firstAudioShare})`),
        ),
        row(
          `${what}: ms the whole, direct → /v1, median; same bytes both ways`,
          cell((f) => `${f.ms.direct} → ${f.ms.path}; ${f.sameBytes}`),
        ),
        row(
          `${what}: /v1 ÷ direct, median of pairs: wall time (time added); first audio`,
          cell((f) => `${f.ratio} (${signed(f.addedMs)}); ${f.firstAudioRatio}`),
        ),
      );
    }
    if (any((r) => r.inputs[input]?.sse)) {
      rows.push(
        row(
          `${LABELS[input]}, pcm as SSE: ms to the first \`speech.audio.delta\` (÷ the direct first audio, median of pairs); same bytes`,
          (r) => {
            const s = r.inputs[input]?.sse;
            return s && `${s.firstDeltaMs} (${s.firstAudioRatio}); ${s.sameBytes}`;
          },
        ),
      );
    }
  }
  for (const format of SPEECH_FORMATS.filter((format) => any((r) => r.encoders[format]))) {
    const runs = any((r) => r.encoders[format])!.runs;
    rows.push(
      row(`Encoder alone, ${format}: ms per second of audio, median of ${runs} (the encoder there)`, (r) => {
        const e = r.encoders[format];
        return e && `${e.msPerAudioSecond} (${e.path})`;
      }),
    );
  }
  for (const speed of Object.keys(any((r) => r.roundTrip) ?? {})) {
    const first = any((r) => r.roundTrip[speed])!;
    rows.push(
      row(
        `Round trip (/v1 speech as wav → /v1 transcription, \`${WHISPER}\`), ${first.phrases} held-out phrases, ` +
          `4 voices, speed ${speed}: word error rate`,
        (r) => {
          const t = r.roundTrip[speed];
          return t && `${t.wordErrorRate} (${Math.round(t.wordErrorRate * t.words)}/${t.words})`;
        },
      ),
    );
  }
  return [
    `| Measure (bundled tiny-speech, \`${SPEECH}\`) | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    ...rows,
  ].join('\n');
}

// Alone: `tsx bench/speech.ts [--smoke] [--node]` (on the dist-e2e build; `--node`: Node only).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = process.argv.includes('--smoke') ? SPEECH_SMOKE_PLAN : SPEECH_PLAN;
  const log = (message: string) => console.log(`[bench] ${message}`);
  const started = performance.now();
  const columns: Record<string, SpeechResults> = { Node: await speechNode(plan, log) };
  if (!process.argv.includes('--node')) {
    const { device: _, chromium: __, ...wasm } = await speechBrowser(plan, log);
    columns['Chromium, wasm'] = wasm;
  }
  console.log(`\n${speechTable(columns)}\n\n${JSON.stringify(columns)}`);
  log(`speech: ${round((performance.now() - started) / 1000, 1)} s`);
}
