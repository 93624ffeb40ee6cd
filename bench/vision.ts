/**
 * Images in (`POST /v1/chat/completions` with an `image_url` part) on the bundled tiny-vision (`crimson-falcon-4`'s
 * candidate for requests with images), on held-out images of test/fixtures/vision: the time to the first token with
 * one image, through /v1 (the openai SDK, streamed) against the engine called directly; the vision encoder's own time
 * apart (the image decoded, processed and encoded, on a copy of the model loaded for it); and the first token of a
 * second turn about the same image, whose prefix (the image's positions included) is reused and whose encoder does
 * not run. In Node in one process; in Chromium on WebAssembly, the engine in a worker of the bench page against the SDK
 * in the page through the service worker and the engine worker. A section of `npm run bench` and its smoke pass.
 */
import { chromium } from '@playwright/test';
import { AutoImageProcessor, AutoModelForImageTextToText, RawImage, type Tensor } from '@huggingface/transformers';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type OpenAI from 'openai';
import { createEngine, createHandler, KeyRing, type ChatRequest } from '../src/index.ts';
import { imageChatRequest, imageMessages, streamedFirstToken } from './requests.ts';
import { startServer } from '../test/e2e/servers.ts';
import { openaiClient } from '../test/support/lantern.ts';
import type { Bench } from './browser/bench-page.ts';
import { benchProfile, CHAT } from './models.ts';
import { median, round } from './stats.ts';

const FIXTURES = fileURLToPath(new URL('../test/fixtures/vision/', import.meta.url));
const MODELS = fileURLToPath(new URL('../public/models', import.meta.url));
const VISION = 'tiny-vision';
const MANIFEST = JSON.parse(readFileSync(`${FIXTURES}manifest.json`, 'utf8')) as {
  file: string;
  kind: string;
  messages: { content: unknown }[];
}[];
/** Held-out images asked one question each, the image first ("What shape is this?" and the like). */
const ASKED = MANIFEST.filter((m) => m.kind === 'single').map((m) => {
  const parts = m.messages[0]!.content as { type: string; text?: string }[];
  return { file: m.file, question: parts.find((p) => p.type === 'text')!.text! };
});

export interface VisionPlan {
  /** Images, each asked once a round; a new image each time, so that nothing of it is cached. */
  images: number;
  rounds: number;
  warmUp: boolean;
}
export const VISION_PLAN: VisionPlan = { images: 12, rounds: 2, warmUp: true };
export const VISION_SMOKE_PLAN: VisionPlan = { images: 1, rounds: 1, warmUp: false };

/** What an environment offers: the three measures, on one image and its question. */
interface VisionRunner {
  /** ms to the first token, the engine called directly. */
  direct(file: string, question: string): Promise<number>;
  /** ms to the first token through /v1, streamed; and the prompt's tokens. */
  path(file: string, question: string): Promise<{ ms: number; promptTokens: number }>;
  /** ms to decode, process and encode the image with the vision encoder alone. */
  encoder(file: string): Promise<number>;
  /** ms to the first token of a second turn about the same image, through /v1 (its prefix cached). */
  nextTurn(file: string, question: string): Promise<{ ms: number; cachedTokens: number }>;
}

export interface VisionFigures {
  images: number;
  runs: number;
  /** Prompt tokens of one question with one image (the image's positions included). */
  promptTokens: number;
  /** Median ms to the first token: direct, through /v1; /v1 ÷ direct, median of pairs. */
  firstTokenMs: { direct: number; path: number };
  ratio: number;
  /** Median ms of the vision encoder alone (decode, process, encode), and its share of the direct first token. */
  encoderMs: number;
  encoderShare: number;
  /** Median ms to a second turn's first token through /v1, and the prompt tokens it found cached. */
  nextTurnMs: number;
  nextTurnCachedTokens: number;
}

const dataUrl = (file: string) => `data:image/png;base64,${readFileSync(`${FIXTURES}${file}`).toString('base64')}`;

/** An engine request with one image and a question, as the handler makes it of the wire's parts. */
function imageRequest(file: string, question: string): ChatRequest {
  return imageChatRequest(dataUrl(file), question);
}

const wire = (file: string, question: string) => imageMessages(dataUrl(file), question);

async function measure(
  name: string,
  plan: VisionPlan,
  runner: VisionRunner,
  log: (message: string) => void,
): Promise<VisionFigures> {
  const asked = ASKED.slice(0, plan.images);
  if (plan.warmUp) {
    log(`${name}: images, warm-up (the model's load)`);
    const other = ASKED.at(-1)!;
    await runner.direct(other.file, other.question);
    await runner.path(other.file, other.question);
    await runner.encoder(other.file);
  }
  const direct: number[] = [];
  const path: number[] = [];
  const ratios: number[] = [];
  const encoder: number[] = [];
  const next: number[] = [];
  let promptTokens = 0;
  let cachedTokens = 0;
  for (let r = 0; r < plan.rounds; r++) {
    log(`${name}: images, ${asked.length} held-out images, round ${r + 1}/${plan.rounds}`);
    for (const { file, question } of asked) {
      // Two engines, each with a prefix cache of its own: the image is new to each (the same question on another
      // image shares only the template's first tokens).
      const viaPath = await runner.path(file, question);
      const alone = await runner.direct(file, question);
      path.push(viaPath.ms);
      direct.push(alone);
      ratios.push(viaPath.ms / alone);
      promptTokens = viaPath.promptTokens;
      encoder.push(await runner.encoder(file));
      const turn = await runner.nextTurn(file, question);
      next.push(turn.ms);
      cachedTokens = turn.cachedTokens;
    }
  }
  const figures: VisionFigures = {
    images: asked.length,
    runs: plan.rounds,
    promptTokens,
    firstTokenMs: { direct: round(median(direct), 1), path: round(median(path), 1) },
    ratio: round(median(ratios), 3),
    encoderMs: round(median(encoder), 1),
    encoderShare: round(median(encoder) / median(direct), 3),
    nextTurnMs: round(median(next), 1),
    nextTurnCachedTokens: cachedTokens,
  };
  log(
    `${name}: first token with one image ${figures.firstTokenMs.direct} ms direct, ${figures.firstTokenMs.path} ms /v1 ` +
      `(${figures.ratio}); encoder ${figures.encoderMs} ms; next turn ${figures.nextTurnMs} ms`,
  );
  return figures;
}

const firstToken = (client: OpenAI, messages: OpenAI.ChatCompletionMessageParam[]) =>
  streamedFirstToken(client, CHAT, messages);

/** The vision encoder alone, on a copy of the model: decode, process, encode one image, in ms. */
async function encoderAlone(folder: string, device: 'cpu' | 'wasm') {
  const [model, processor] = await Promise.all([
    AutoModelForImageTextToText.from_pretrained(folder, { dtype: 'fp32', device }),
    AutoImageProcessor.from_pretrained(folder),
  ]);
  const encode = (model as unknown as { encode_image(i: { pixel_values: Tensor }): Promise<Tensor> }).encode_image;
  return async (bytes: Uint8Array) => {
    const started = performance.now();
    const image = await RawImage.fromBlob(new Blob([bytes as BlobPart], { type: 'image/png' }));
    const { pixel_values } = (await processor(image)) as { pixel_values: Tensor };
    await encode.call(model, { pixel_values });
    return performance.now() - started;
  };
}

/** In Node: the engine, and the openai SDK calling the handler over another engine (each its own prefix cache). */
export async function visionNode(plan: VisionPlan, log: (message: string) => void): Promise<VisionFigures> {
  const engine = createEngine({ profile: benchProfile(MODELS) });
  const keys = new KeyRing();
  const handler = createHandler({
    engine: createEngine({ profile: benchProfile(MODELS) }),
    keys,
    rateLimits: { requestsPerMinute: 1e6 },
  });
  const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
  const encode = await encoderAlone(`${MODELS}/${VISION}`, 'cpu');
  return measure(
    'node',
    plan,
    {
      async direct(file, question) {
        const started = performance.now();
        let ms = 0;
        await engine.chat(CHAT, imageRequest(file, question), {
          onEvent: (event) => {
            if (!ms && event.type === 'delta') ms = performance.now() - started;
          },
        });
        return ms;
      },
      async path(file, question) {
        const { ms, usage } = await firstToken(client, wire(file, question));
        return { ms, promptTokens: usage.prompt_tokens };
      },
      encoder: (file) => encode(new Uint8Array(readFileSync(`${FIXTURES}${file}`))),
      async nextTurn(file, question) {
        const first = await firstToken(client, wire(file, question));
        const messages = [
          ...wire(file, question),
          { role: 'assistant' as const, content: first.reply },
          { role: 'user' as const, content: 'How many shapes are there?' },
        ];
        const { ms, usage } = await firstToken(client, messages);
        return { ms, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 };
      },
    },
    log,
  );
}

/** The server of this section's bench page: of its own, cross-origin isolated as bench/run.ts serves it. */
const PORT = 4194;
const HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/** In Chromium without WebGPU: the engine in a worker of the bench page, and the SDK through the service worker. */
export async function visionBrowser(plan: VisionPlan, log: (message: string) => void): Promise<VisionFigures> {
  const server = await startServer(PORT, HEADERS);
  try {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
    try {
      const page = await browser.newPage();
      page.on('pageerror', (error) => log(`images: page error: ${error.message}`));
      await page.goto(`${server.origin}/bench/browser/bench.html?device=wasm`);
      await page.waitForFunction(() => (window as { bench?: Bench }).bench !== undefined, undefined, {
        timeout: 120_000,
      });
      const call = <T>(method: keyof Bench, ...args: unknown[]) =>
        page.evaluate(
          ([m, a]) => (window as unknown as { bench: Record<string, (...x: unknown[]) => Promise<T>> }).bench[m]!(...a),
          [method, args] as const,
        ) as Promise<T>;
      return await measure(
        'wasm',
        plan,
        {
          direct: (file, question) => call('imageDirect', CHAT, dataUrl(file), question),
          path: (file, question) => call('imagePath', CHAT, dataUrl(file), question),
          encoder: (file) => call('imageEncoder', `/models/${VISION}`, dataUrl(file)),
          nextTurn: (file, question) => call('imageNextTurn', CHAT, dataUrl(file), question),
        },
        log,
      );
    } finally {
      await browser.close();
    }
  } finally {
    await server.close();
  }
}

/** The section's table for the bench's markdown: one column an environment. */
export function visionTable(columns: Record<string, VisionFigures>): string {
  const names = Object.keys(columns);
  const row = (label: string, cell: (f: VisionFigures) => string | number) =>
    `| ${label} | ${names.map((n) => cell(columns[n]!)).join(' | ')} |`;
  const any = columns[names[0]!]!;
  return [
    `| Measure (bundled tiny-vision, \`${CHAT}\` with an image; ${any.images} held-out images ×${any.runs}) | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    row('Prompt tokens of one question with one image (the image takes 16)', (f) => f.promptTokens),
    row(
      'Time to first token with one image, ms: direct → /v1 (median)',
      (f) => `${f.firstTokenMs.direct} → ${f.firstTokenMs.path}`,
    ),
    row('/v1 ÷ direct, median of pairs', (f) => f.ratio),
    row(
      'Vision encoder alone (decode, resize, encode), ms; share of the direct first token',
      (f) => `${f.encoderMs}; ${f.encoderShare}`,
    ),
    row(
      'Second turn about the same image: first token ms through /v1; prompt tokens cached',
      (f) => `${f.nextTurnMs}; ${f.nextTurnCachedTokens}`,
    ),
  ].join('\n');
}

// Alone: `tsx bench/vision.ts [--smoke] [--node]` (on the dist-e2e build; `--node`: Node only).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const plan = process.argv.includes('--smoke') ? VISION_SMOKE_PLAN : VISION_PLAN;
  const log = (message: string) => console.log(`[bench] ${message}`);
  const columns: Record<string, VisionFigures> = { Node: await visionNode(plan, log) };
  if (!process.argv.includes('--node')) columns['Chromium, wasm'] = await visionBrowser(plan, log);
  console.log(`\n${visionTable(columns)}\n\n${JSON.stringify(columns)}`);
}
