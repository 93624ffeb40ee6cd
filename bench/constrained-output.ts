/**
 * Constrained output against free output, on schemas whose keys are all fixed (every property required, no others: an
 * enum, a const, a nested object), where most of a reply is structure the grammar leaves one way to write. Lantern's
 * jump-forward appends such forced tokens in one forward pass instead of one pass each, so constrained output can
 * decode as fast as free output or faster. In Node, on the bundled tiny-chat (trained to write short JSON) and the
 * realistic model (random weights: what it writes under the grammar is valid all the same):
 *
 * - through /v1 (the openai SDK, `response_format: json_schema`, strict), output tokens per second of the whole
 *   request, constrained against the same prompt free for as many tokens (its end tokens banned, `max_tokens` the
 *   constrained reply's length: greedy, that is the same every time), so both sides pay the same prefill over the
 *   same number of tokens and the ratio is that of their times;
 * - on `TransformersChatModel` loaded directly, once with jump-forward and once without (`jumpForward: false`), the
 *   same constrained requests: forward passes per output token each way, the passes saved, and tokens per second.
 *
 * Part of `npm run bench`; also runs alone: `npx tsx bench/constrained-output.ts` (`--smoke` for the smoke plan).
 */
import type OpenAI from 'openai';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createEngine, createHandler, KeyRing } from '../src/index.ts';
import { TransformersChatModel } from '../src/engines/transformers/chat-model.ts';
import { chatRequest } from '../test/support/chat-request.ts';
import { BUNDLED_MODELS, openaiClient } from '../test/support/lantern.ts';
import { singleModelProfile } from './realistic-model.ts';
import { median, round } from './stats.ts';

/**
 * The most tokens of each reply; rounds of the whole schema set through /v1 (each schema a pair: constrained and free,
 * alternating which goes first) and on the model directly (each schema once with jump-forward, once without).
 */
export interface ConstrainedOutputPlan {
  maxTokens: number;
  rounds: number;
  directRounds: number;
}
export const CONSTRAINED_OUTPUT_PLAN: ConstrainedOutputPlan = { maxTokens: 96, rounds: 4, directRounds: 2 };
export const CONSTRAINED_OUTPUT_SMOKE_PLAN: ConstrainedOutputPlan = { maxTokens: 12, rounds: 1, directRounds: 1 };

/** Strings and numbers are bounded: a random-weight model would otherwise write a string to the cap. */
const text = (maxLength: number) => ({ type: 'string', maxLength });
const integer = (minimum: number, maximum: number) => ({ type: 'integer', minimum, maximum });
const fixed = (properties: Record<string, unknown>) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});

/** The schema set, each with a prompt of the kind tiny-chat was trained to answer in JSON (json_corpus.py). */
export const FIXED_KEY_SCHEMAS: { name: string; prompt: string; schema: Record<string, unknown> }[] = [
  {
    name: 'person',
    prompt: 'Reply with JSON: a person.',
    schema: fixed({
      name: text(24),
      age: integer(0, 120),
      role: { enum: ['admin', 'editor', 'viewer'] },
      active: { type: 'boolean' },
    }),
  },
  {
    name: 'order',
    prompt: 'Give me JSON for an order.',
    schema: fixed({
      kind: { const: 'order' },
      id: integer(1, 99999),
      status: { enum: ['pending', 'paid', 'shipped', 'done'] },
      shipping: fixed({ city: text(24), zip: text(10) }),
      paid: { type: 'boolean' },
    }),
  },
  {
    name: 'event',
    prompt: 'Reply with JSON: an event.',
    schema: fixed({
      type: { const: 'event' },
      title: text(32),
      date: fixed({ year: integer(2000, 2100), month: integer(1, 12), day: integer(1, 31) }),
      public: { type: 'boolean' },
    }),
  },
  {
    name: 'settings',
    prompt: 'Give me JSON for the settings.',
    schema: fixed({
      theme: { enum: ['light', 'dark'] },
      language: { enum: ['en', 'fr', 'de', 'ja'] },
      notifications: fixed({ email: { type: 'boolean' }, push: { type: 'boolean' } }),
      version: { const: 2 },
    }),
  },
];

/** Special tokens (ids 0–2 in every model here, the end-of-reply ones among them): free replies decode to the cap. */
const BANNED = { 0: -100, 1: -100, 2: -100 };
const ID = 'constrained-output';

/** One reply: its completion tokens, ms from the request to its end, and how it ended. */
interface Reply {
  tokens: number;
  ms: number;
  finish: string;
}
/** Output tokens per second of the whole request. */
const rate = (r: Reply) => (r.tokens * 1000) / r.ms;

export interface ConstrainedOutputFigures {
  /** Through /v1: tokens/s of whole requests (medians), the median of the pairs' constrained ÷ free. */
  v1: {
    freeTokensPerSecond: number;
    constrainedTokensPerSecond: number;
    ratio: number;
    /** Mean completion tokens of a reply (the same on both sides, unless the free side was cut by the window). */
    freeTokens: number;
    constrainedTokens: number;
    /** Constrained replies that ended on their own (a whole JSON value), of all. */
    complete: string;
  };
  /** On the model directly, with jump-forward and without. */
  direct: {
    on: DirectSide;
    off: DirectSide;
    /**
     * Output tokens with jump-forward less its forward passes: the passes token-by-token decoding would have added for
     * the same replies (one pass a token, the prefill's counted as the first token's; every prompt here is one prefill
     * piece). The replies without jump-forward may have other tokens (forced text is tokenized as a whole), hence
     * `off` apart.
     */
    passesSaved: number;
  };
}
interface DirectSide {
  /** Output tokens per second of the whole request (median over requests). */
  tokensPerSecond: number;
  outputTokens: number;
  /** Forward passes over those requests (the model's own counter), per output token, and tokens forced. */
  forwardPasses: number;
  passesPerToken: number;
  forcedTokens: number;
}

/** The openai SDK on a handler serving only the model at `folder`. */
async function sdkOn(folder: string): Promise<OpenAI> {
  const keys = new KeyRing();
  const handler = createHandler({ engine: createEngine({ profile: singleModelProfile(ID, folder) }), keys });
  return openaiClient(handler, (await keys.issue('constrained output')).key, { maxRetries: 0 });
}

/** One request: constrained by `entry`'s schema, or free for exactly `maxTokens` tokens. */
async function viaV1(sdk: OpenAI, entry: (typeof FIXED_KEY_SCHEMAS)[number], constrained: boolean, maxTokens: number) {
  const started = performance.now();
  const reply = await sdk.chat.completions.create({
    model: ID,
    messages: [{ role: 'user', content: entry.prompt }],
    temperature: 0,
    max_tokens: maxTokens,
    ...(constrained
      ? {
          response_format: {
            type: 'json_schema' as const,
            json_schema: { name: entry.name, schema: entry.schema, strict: true },
          },
        }
      : { logit_bias: BANNED }),
  });
  const ms = performance.now() - started;
  return { tokens: reply.usage!.completion_tokens, ms, finish: reply.choices[0]!.finish_reason } satisfies Reply;
}

async function direct(folder: string, jumpForward: boolean, rounds: number, maxTokens: number): Promise<DirectSide> {
  const model = await TransformersChatModel.load(folder, { id: ID, device: 'cpu', dtype: 'fp32', jumpForward });
  const run = async (entry: (typeof FIXED_KEY_SCHEMAS)[number]): Promise<Reply> => {
    const started = performance.now();
    const result = await model.generate(
      chatRequest({
        messages: [{ role: 'user', content: entry.prompt }],
        maxTokens,
        constraint: { type: 'json', schema: entry.schema },
      }),
    );
    const finish = result.choices[0]?.finishReason ?? '';
    return { tokens: result.usage.completionTokens, ms: performance.now() - started, finish };
  };
  for (const entry of FIXED_KEY_SCHEMAS) await run(entry); // compile each grammar, warm up
  // The model's counters since it loaded: what the measured requests did is the difference.
  const before = { ...model.stats };
  const replies: Reply[] = [];
  for (let i = 0; i < rounds; i++) for (const entry of FIXED_KEY_SCHEMAS) replies.push(await run(entry));
  const outputTokens = replies.reduce((n, r) => n + r.tokens, 0);
  const forwardPasses = model.stats.forwardPasses - before.forwardPasses;
  return {
    tokensPerSecond: round(median(replies.map(rate)), 1),
    outputTokens,
    forwardPasses,
    passesPerToken: round(forwardPasses / outputTokens, 3),
    forcedTokens: model.stats.forcedTokens - before.forcedTokens,
  };
}

/** Both measures on the model at `folder`. */
export async function constrainedOutputOn(
  folder: string,
  plan: ConstrainedOutputPlan = CONSTRAINED_OUTPUT_PLAN,
  log: (message: string) => void = () => {},
): Promise<ConstrainedOutputFigures> {
  const sdk = await sdkOn(folder);
  // Load, compile each grammar, warm up; and each constrained reply's length, which the free side is given.
  const lengths = new Map<string, number>();
  for (const entry of FIXED_KEY_SCHEMAS) {
    lengths.set(entry.name, (await viaV1(sdk, entry, true, plan.maxTokens)).tokens);
    await viaV1(sdk, entry, false, lengths.get(entry.name)!);
  }
  log(`  /v1: ${plan.rounds} rounds of ${FIXED_KEY_SCHEMAS.length} schemas, constrained and free`);
  const free: Reply[] = [];
  const constrained: Reply[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < plan.rounds; i++) {
    for (const [j, entry] of FIXED_KEY_SCHEMAS.entries()) {
      // Alternate which goes first, so that neither side always follows the other.
      const constrainedFirst = (i + j) % 2 === 0;
      const side = (isConstrained: boolean) =>
        viaV1(sdk, entry, isConstrained, isConstrained ? plan.maxTokens : lengths.get(entry.name)!);
      const first = await side(constrainedFirst);
      const second = await side(!constrainedFirst);
      const [c, f] = constrainedFirst ? [first, second] : [second, first];
      constrained.push(c);
      free.push(f);
      ratios.push(rate(c) / rate(f));
    }
  }
  const mean = (replies: Reply[]) => round(replies.reduce((n, r) => n + r.tokens, 0) / replies.length, 1);
  log('  the model directly: jump-forward on, then off');
  const on = await direct(folder, true, plan.directRounds, plan.maxTokens);
  const off = await direct(folder, false, plan.directRounds, plan.maxTokens);
  return {
    v1: {
      freeTokensPerSecond: round(median(free.map(rate)), 1),
      constrainedTokensPerSecond: round(median(constrained.map(rate)), 1),
      ratio: round(median(ratios), 3),
      freeTokens: mean(free),
      constrainedTokens: mean(constrained),
      complete: `${constrained.filter((r) => r.finish === 'stop').length}/${constrained.length}`,
    },
    direct: {
      on,
      off,
      passesSaved: on.outputTokens - on.forwardPasses,
    },
  };
}

/**
 * The section: the bundled tiny-chat, and the realistic model when `realistic` (its folder) is given. Keyed by the
 * names the table shows.
 */
export async function constrainedOutputBench(
  log: (message: string) => void,
  plan: ConstrainedOutputPlan = CONSTRAINED_OUTPUT_PLAN,
  realistic?: { dir: string; name: string },
): Promise<{ schemas: string[]; models: Record<string, ConstrainedOutputFigures> }> {
  const models: Record<string, ConstrainedOutputFigures> = {};
  log('node, bundled tiny-chat: constrained against free output; jump-forward on and off');
  models['bundled tiny-chat'] = await constrainedOutputOn(`${BUNDLED_MODELS}/tiny-chat`, plan, log);
  if (realistic) {
    log(`node, ${realistic.name}: constrained against free output; jump-forward on and off`);
    models[realistic.name] = await constrainedOutputOn(realistic.dir, plan, log);
  }
  return { schemas: FIXED_KEY_SCHEMAS.map((s) => s.name), models };
}

/** The section's table: one column a model. */
export function constrainedOutputTable(results: Awaited<ReturnType<typeof constrainedOutputBench>>): string {
  const columns = Object.entries(results.models);
  const row = (label: string, cell: (f: ConstrainedOutputFigures) => string | number) =>
    `| ${label} | ${columns.map(([, f]) => cell(f)).join(' | ')} |`;
  return [
    `| Measure (Node; schemas with fixed keys: ${results.schemas.join(', ')}) | ${columns.map(([name]) => name).join(' | ')} |`,
    `| --- | ${columns.map(() => '---').join(' | ')} |`,
    row(
      'Output tokens/s of whole requests, /v1: free → constrained (json_schema, strict)',
      (f) => `${f.v1.freeTokensPerSecond} → ${f.v1.constrainedTokensPerSecond}`,
    ),
    row('Constrained ÷ free (target ≥ 1.0)', (f) => `${f.v1.ratio} ${f.v1.ratio >= 1 ? '✓' : '✗'}`),
    row(
      'Tokens a reply, free / constrained; constrained replies complete (not cut at the cap)',
      (f) => `${f.v1.freeTokens} / ${f.v1.constrainedTokens}; ${f.v1.complete}`,
    ),
    row(
      'The model directly, constrained: output tokens/s, jump-forward on / off',
      (f) => `${f.direct.on.tokensPerSecond} / ${f.direct.off.tokensPerSecond}`,
    ),
    row(
      'Forward passes ÷ output tokens, jump-forward on; off',
      (f) =>
        `${f.direct.on.forwardPasses} ÷ ${f.direct.on.outputTokens} = ${f.direct.on.passesPerToken}; ` +
        `${f.direct.off.forwardPasses} ÷ ${f.direct.off.outputTokens} = ${f.direct.off.passesPerToken}`,
    ),
    row(
      "Forward passes jump-forward saved (output tokens less passes, on); tokens forced, by the model's count",
      (f) => `${f.direct.passesSaved}; ${f.direct.on.forcedTokens}`,
    ),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const smoke = process.argv.includes('--smoke');
  const results = await constrainedOutputBench(console.log, smoke ? CONSTRAINED_OUTPUT_SMOKE_PLAN : undefined);
  console.log(JSON.stringify(results, null, 2));
  console.log(constrainedOutputTable(results));
}
