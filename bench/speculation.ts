/**
 * Speculation (prompt lookup, OpenAI's `prediction`): decode tokens/s with it ÷ without, on the same model and the same
 * requests in one run, in Node on transformers.js (CPU, fp32), each through `TransformersChatModel` loaded twice, with
 * `promptLookup` on and off; the pairs alternate which goes first.
 *
 * - stories260K, a real (tiny) story model: grounded continuations, where a story's prompt holds what its continuation
 *   repeats (names, phrases, a passage told again), and free continuations of short prompts;
 * - the realistic model (random weights at the cost of a real 0.5–1B model; it never repeats its input): free text,
 *   which shows what proposals that fail cost, and the same requests with a `prediction` of the reply itself (every
 *   proposal right: the bound of what speculation saves on this hardware) and of the reply with every 8th token
 *   changed; and on llama.cpp in Node (node-llama-cpp, its own greedy draws) the same predictions against the request
 *   without one (which proposes nothing on this model, so it runs as without speculation).
 * - draft models: the bundled tiny-chat with its draft (test/fixtures/tiny-chat-draft), and tiny-chat as the draft of a
 *   target four times its cost (test/fixtures/tiny-chat-target), on transformers.js and on llama.cpp in Node, against
 *   the target alone (see draftRows).
 *
 * Each row: tokens/s off and on (after the first token, greedy), the ratio, the share of proposed tokens the model
 * accepted, and tokens per forward pass. Part of `npm run bench`; also alone: `npx tsx bench/speculation.ts [--smoke]`.
 */
import { performance } from 'node:perf_hooks';
import type { ChatRequest } from '../src/engine-interface/index.ts';
import { TransformersChatModel } from '../src/engines/transformers/chat-model.ts';
import { chatRequest } from '../test/support/chat-request.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, STORIES_260K } from '../test/support/lantern.ts';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { TaskQueue } from '../src/engines/task-queue.ts';
import { loadChatModel as loadLlama } from '../src/engines/llama-cpp/node-llama-runtime.ts';
import { benchModels } from './engines.ts';
import { prepareRealisticModel } from './realistic-model.ts';
import { median, round } from './stats.ts';

export interface SpeculationPlan {
  /** Pairs (off, on) per task. */
  pairs: number;
  /** Tokens per reply. */
  tokens: number;
}

export const SPECULATION_PLAN: SpeculationPlan = { pairs: 7, tokens: 128 };
export const SPECULATION_SMOKE_PLAN: SpeculationPlan = { pairs: 1, tokens: 12 };

export interface SpeculationRow {
  model: string;
  task: string;
  offTokensPerSecond: number;
  onTokensPerSecond: number;
  ratio: number;
  /** Accepted ÷ proposed tokens, over the task's runs with speculation. */
  acceptance: number;
  /** Tokens generated per forward pass with speculation (1 without, less the prefill). */
  tokensPerPass: number;
  /** Tokens proposed per token generated, with speculation. */
  proposedPerToken: number;
}

export interface SpeculationResults {
  rows: SpeculationRow[];
  skipped: Record<string, string>;
}

const TINY_CHAT = `${BUNDLED_MODELS}/tiny-chat`;
const TINY_CHAT_DRAFT = fileURLToPath(new URL('../test/fixtures/tiny-chat-draft', import.meta.url));
const TINY_CHAT_TARGET = fileURLToPath(new URL('../test/fixtures/tiny-chat-target', import.meta.url));

/**
 * What a task's runs with speculation did, summed (each run's tokens after its first, and its passes after the
 * prefill's), and the table's row from it and the two sides' rates.
 */
export class SpeculationTally {
  accepted = 0;
  proposed = 0;
  tokens = 0;
  passes = 0;

  add(run: { accepted: number; rejected: number; tokens: number; passes: number }): void {
    this.accepted += run.accepted;
    this.proposed += run.accepted + run.rejected;
    this.tokens += run.tokens - 1;
    this.passes += run.passes;
  }

  row(model: string, task: string, offRate: number, onRate: number): SpeculationRow {
    const { accepted, proposed, tokens, passes } = this;
    return {
      model,
      task,
      offTokensPerSecond: round(offRate, 1),
      onTokensPerSecond: round(onRate, 1),
      ratio: round(onRate / offRate, 3),
      acceptance: proposed ? round(accepted / proposed, 3) : 0,
      tokensPerPass: passes ? round(tokens / passes, 2) : 1,
      proposedPerToken: tokens ? round(proposed / tokens, 2) : 0,
    };
  }
}

/** A story prompt whose continuation retells it: names, places and a sentence it repeats. */
const STORY =
  'Once upon a time, there was a little girl named Lily. Lily had a red ball. She liked to play with her ball in ' +
  'the park. One day, Lily went to the park with her mom. "Mom, can I play with my red ball?" Lily asked. "Yes, ' +
  'Lily, you can play with your red ball," said her mom. Lily played with her red ball in the park. Then a big dog ' +
  'came to the park. The big dog saw the red ball. The big dog wanted to play with the red ball too.';

const GROUNDED: { task: string; prompt: string }[] = [
  { task: 'grounded: a story that retells itself', prompt: `${STORY} Lily` },
  { task: 'grounded: the passage told again', prompt: `${STORY}\n\n${STORY.slice(0, 200)}` },
];

const FREE_STORIES: { task: string; prompt: string }[] = [{ task: 'free text', prompt: 'Once upon a time, there was' }];

/** Greedy, `tokens` long, end tokens banned: every run generates the same number of tokens. */
const request = (prompt: string, tokens: number, overrides: Partial<ChatRequest> = {}): ChatRequest =>
  chatRequest({ prompt, messages: [], maxTokens: tokens, logitBias: { 0: -100, 1: -100, 2: -100 }, ...overrides });

/** A chat model as loaded directly (transformers.js' or llama.cpp's). */
type Model = Pick<TransformersChatModel, 'generate' | 'stats'>;

async function timed(model: Model, body: ChatRequest) {
  const deltas: number[] = [];
  const passes = model.stats.forwardPasses;
  const result = await model.generate(body, {
    onEvent: (event) => event.type === 'delta' && event.text !== '' && deltas.push(performance.now()),
  });
  const tokens = result.usage.completionTokens;
  return {
    text: result.choices[0]!.text,
    rate: deltas.length < 2 ? NaN : ((tokens - 1) * 1000) / (deltas.at(-1)! - deltas[0]!),
    // The prefill's pass gives the first token; every later pass gives at least one.
    passes: model.stats.forwardPasses - passes - 1,
    tokens,
    accepted: result.usage.acceptedPredictionTokens ?? 0,
    rejected: result.usage.rejectedPredictionTokens ?? 0,
  };
}

async function measureTask(
  log: (message: string) => void,
  models: { off: Model; on: Model },
  name: string,
  task: string,
  body: ChatRequest | { off: ChatRequest; on: ChatRequest },
  plan: SpeculationPlan,
): Promise<SpeculationRow> {
  log(`${name}: ${task}`);
  const off: number[] = [];
  const on: number[] = [];
  const tally = new SpeculationTally();
  for (let i = 0; i < plan.pairs; i++) {
    const order = i % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
    const texts: Record<string, string> = {};
    for (const side of order) {
      const run = await timed(models[side], 'off' in body ? body[side] : body);
      texts[side] = run.text;
      if (side === 'off') off.push(run.rate);
      else {
        on.push(run.rate);
        tally.add(run);
      }
    }
    // Greedy: speculation changes nothing of the text.
    if (texts.on !== texts.off) throw new Error(`${name}, ${task}: the text differs with speculation`);
  }
  return tally.row(name, task, median(off), median(on));
}

/** The reply with every `every`th word changed: a prediction that is mostly right. */
export function spoiled(text: string, every: number): string {
  const words = text.split(' ');
  return words.map((word, i) => (i % every === every - 1 ? `${word}x` : word)).join(' ');
}

export async function speculationBench(
  log: (message: string) => void,
  plan: SpeculationPlan = SPECULATION_PLAN,
  smoke = false,
): Promise<SpeculationResults> {
  const rows: SpeculationRow[] = [];
  const skipped: Record<string, string> = {};
  const load = (folder: string, promptLookup: boolean) =>
    TransformersChatModel.load(folder, { id: 'bench', device: 'cpu', dtype: 'fp32', promptLookup });
  if (HAS_STORIES_260K) {
    const models = { off: await load(STORIES_260K, false), on: await load(STORIES_260K, true) };
    for (const { task, prompt } of [...GROUNDED, ...FREE_STORIES]) {
      rows.push(await measureTask(log, models, 'stories260K', task, request(prompt, plan.tokens), plan));
    }
  } else {
    skipped.stories260K = `${STORIES_260K} not found`;
  }
  rows.push(...(await draftRows(log, plan)));
  const { model: realistic, skipped: noRealistic } = prepareRealisticModel(log, { smoke });
  if (realistic) {
    const name = smoke ? 'realistic (smoke variant)' : 'realistic';
    const models = { off: await load(realistic.dir, false), on: await load(realistic.dir, true) };
    const prompt = realistic.words.slice(0, 48).join('');
    const free = request(prompt, plan.tokens);
    rows.push(await measureTask(log, models, name, 'free text', free, plan));
    const reply = (await models.off.generate(free)).choices[0]!.text;
    rows.push(
      await measureTask(log, models, name, 'prediction: the reply itself', { ...free, prediction: reply }, plan),
    );
    const mostly = spoiled(reply, 8);
    rows.push(
      await measureTask(log, models, name, 'prediction: every 8th word wrong', { ...free, prediction: mostly }, plan),
    );
    // llama.cpp in Node speculates where it draws: here against the same request without a prediction, which proposes
    // nothing on this model (its text never repeats), so that it runs as without speculation.
    const { models: ggufs } = benchModels(log, smoke);
    const gguf = ggufs.find((m) => m.dir === realistic.dir)?.gguf;
    if (gguf) {
      const llama = (await loadLlama(
        { engine: 'llama.cpp', model: path.dirname(gguf), file: path.basename(gguf) },
        { id: 'bench', queue: new TaskQueue() },
      )) as unknown as Model & { dispose(): Promise<void> };
      const both = { off: llama, on: llama };
      const label = `${name}, llama.cpp (Node)`;
      // No logit_bias (it would ask for the whole distribution): this model never ends a reply on its own anyway.
      const drawn = { ...free, logitBias: undefined };
      const own = (await llama.generate(drawn)).choices[0]!.text;
      for (const [task, prediction] of [
        ['prediction: the reply itself', own],
        ['prediction: every 8th word wrong', spoiled(own, 8)],
      ] as const) {
        rows.push(await measureTask(log, both, label, task, { off: drawn, on: { ...drawn, prediction } }, plan));
      }
      await llama.dispose();
    }
  } else {
    skipped.realistic = noRealistic!;
  }
  return { rows, skipped };
}

/** A target model and its draft, each a transformers.js folder with its GGUF for llama.cpp. */
interface DraftPair {
  name: string;
  target: { folder: string; gguf: string };
  draft: { folder: string; gguf: string };
}

const DRAFT_PAIRS: DraftPair[] = [
  {
    name: 'tiny-chat + its draft',
    target: { folder: TINY_CHAT, gguf: 'gguf/tiny-chat-f32.gguf' },
    draft: { folder: TINY_CHAT_DRAFT, gguf: 'gguf/tiny-chat-draft-f32.gguf' },
  },
  {
    name: 'tiny-chat-target + tiny-chat as draft',
    target: { folder: TINY_CHAT_TARGET, gguf: 'gguf/tiny-chat-target-f32.gguf' },
    draft: { folder: TINY_CHAT, gguf: 'gguf/tiny-chat-f32.gguf' },
  },
];

/**
 * Draft models, both with prompt lookup off, against their target alone; on prompts neither distillation saw, greedy,
 * whole replies. On transformers.js and on llama.cpp in Node (node-llama-cpp), each with its own copy of the pair.
 *
 * - the bundled tiny-chat with its draft (test/fixtures/tiny-chat-draft, two of its four layers distilled from its
 *   replies): models this small cost about the same per pass whatever their size (the call, not the arithmetic), so
 *   this row shows what the draft's acceptance is and what its passes cost, not what a 0.6B draft saves a 4B model;
 * - tiny-chat as the draft of test/fixtures/tiny-chat-target (tiny-chat grown to 16 layers and distilled from it,
 *   scripts/fixtures/target_fixture.py): a target pass costs about four of its draft's, as a 4B model's costs several
 *   of a 0.6B draft's, so this row shows what speculation with a draft gains when the draft is cheaper.
 */
async function draftRows(log: (message: string) => void, plan: SpeculationPlan): Promise<SpeculationRow[]> {
  const rows: SpeculationRow[] = [];
  const requests = DRAFT_PROMPTS.map((content) =>
    chatRequest({ messages: [{ role: 'user', content }], maxTokens: plan.tokens }),
  );
  const task = 'held-out prompts, whole replies';
  for (const { name, target, draft } of DRAFT_PAIRS) {
    const transformers = async (drafted: boolean) =>
      TransformersChatModel.load(target.folder, {
        id: 'bench',
        device: 'cpu',
        dtype: 'fp32',
        promptLookup: false,
        ...(drafted && { draft: draft.folder }),
      });
    const llama = async (drafted: boolean) =>
      (await loadLlama(
        {
          engine: 'llama.cpp',
          model: target.folder,
          file: target.gguf,
          ...(drafted && { draft: { model: draft.folder, file: draft.gguf } }),
        },
        { id: 'bench', queue: new TaskQueue() },
      )) as unknown as Model & { dispose(): Promise<void> };
    const models = { off: await transformers(false), on: await transformers(true) };
    rows.push(await measureReplies(log, models, `${name}, transformers.js`, task, requests, plan));
    const llamas = { off: await llama(false), on: await llama(true) };
    try {
      rows.push(await measureReplies(log, llamas, `${name}, llama.cpp (Node)`, task, requests, plan));
    } finally {
      await Promise.all([llamas.off.dispose(), llamas.on.dispose()]);
    }
  }
  return rows;
}

/** Prompts the drafts' distillations never saw (not the fixtures' own held-out set either). */
const DRAFT_PROMPTS = [
  'Tell me a story about a cat and a boat.',
  'What is 6 plus 3?',
  'Count to 15 please.',
  'Say something nice.',
  'Give me JSON describing a book.',
  'What colour are bananas?',
];

/**
 * As measureTask, over several requests: each pair runs every request once, both sides giving the same text; rates are
 * of all tokens over all time.
 */
async function measureReplies(
  log: (message: string) => void,
  models: { off: Model; on: Model },
  name: string,
  task: string,
  requests: ChatRequest[],
  plan: SpeculationPlan,
): Promise<SpeculationRow> {
  log(`${name}: ${task}`);
  const totals = { off: [] as number[], on: [] as number[] };
  const tally = new SpeculationTally();
  for (let i = 0; i < plan.pairs; i++) {
    const order = i % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
    const texts = { off: [] as string[], on: [] as string[] };
    for (const side of order) {
      let generated = 0;
      let seconds = 0;
      for (const request of requests) {
        const run = await timed(models[side], request);
        texts[side].push(run.text);
        if (!Number.isFinite(run.rate)) continue;
        generated += run.tokens - 1;
        seconds += (run.tokens - 1) / run.rate;
        if (side === 'on') tally.add(run);
      }
      totals[side].push(generated / seconds);
    }
    // Greedy: speculation changes nothing of the text.
    const differs = texts.on.findIndex((text, j) => text !== texts.off[j]);
    if (differs >= 0) throw new Error(`${name}, ${task}: the text of request ${differs} differs with speculation`);
  }
  return tally.row(name, task, median(totals.off), median(totals.on));
}

export function speculationTable(results: SpeculationResults): string {
  const lines = [
    '| Model | Task | Without, tok/s | With, tok/s | With ÷ without | Proposed per token | Accepted ÷ proposed | Tokens per pass |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...results.rows.map(
      (r) =>
        `| ${r.model} | ${r.task} | ${r.offTokensPerSecond} | ${r.onTokensPerSecond} | **${r.ratio}** | ${r.proposedPerToken} | ${r.acceptance} | ${r.tokensPerPass} |`,
    ),
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const smoke = process.argv.includes('--smoke');
  const log = (message: string) => console.log(`[bench] ${message}`);
  const results = await speculationBench(log, smoke ? SPECULATION_SMOKE_PLAN : SPECULATION_PLAN, smoke);
  console.log(speculationTable(results));
  for (const [name, why] of Object.entries(results.skipped)) console.log(`${name} skipped: ${why}`);
}
