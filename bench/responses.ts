/**
 * What the Responses API adds over chat completions, in Node on the same engine and model in one run (the bundled
 * tiny-chat, 64 tokens a request): time to first token and to the last event of a streamed `responses.create` against
 * a streamed `chat.completions.create`, interleaved in pairs; and what keeping a response costs (the memory store's
 * put, and the read that `previous_response_id` does). Part of `npm run bench`; also runs alone:
 * `npx tsx bench/responses.ts`.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createEngine, createHandler, KeyRing, memoryResponseStore } from '../src/index.ts';
import { BUNDLED_MODELS, openaiClient } from '../test/support/lantern.ts';
import { benchProfile, CHAT } from './models.ts';
import { endlessStream } from './requests.ts';
import { median, p95, round } from './stats.ts';

/**
 * Tokens a request streams; pairs of runs (each figure is the median over them, the ratio that of each pair's, which
 * drift affects least); responses put into the store and read back.
 */
export interface ResponsesPlan {
  tokens: number;
  pairs: number;
  stored: number;
}
export const RESPONSES_PLAN: ResponsesPlan = { tokens: 64, pairs: 16, stored: 2000 };
export const RESPONSES_SMOKE_PLAN: ResponsesPlan = { tokens: 4, pairs: 1, stored: 10 };

export interface ResponsesFigures {
  firstTokenMs: { chat: number; responses: number };
  wholeRequestMs: { chat: number; responses: number };
  /** The median over pairs of each pair's responses ÷ chat time for the whole request. */
  ratio: number;
  store: { putMs: { p50: number; p95: number }; getMs: { p50: number; p95: number } };
}

export async function responsesBench(plan: ResponsesPlan = RESPONSES_PLAN): Promise<ResponsesFigures> {
  const responses = memoryResponseStore();
  const keys = new KeyRing();
  const handler = createHandler({
    engine: createEngine({ profile: benchProfile(BUNDLED_MODELS) }),
    keys,
    responses,
    rateLimits: { requestsPerMinute: 1e6 },
  });
  const client = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
  const { messages, ...sampling } = endlessStream(CHAT, plan.tokens);
  const chat = async () => {
    const started = performance.now();
    let first = 0;
    for await (const chunk of await client.chat.completions.create({ messages, ...sampling })) {
      if (!first && chunk.choices[0]?.delta.content) first = performance.now();
    }
    return { first: first - started, whole: performance.now() - started };
  };
  const response = async () => {
    const started = performance.now();
    let first = 0;
    const { max_tokens, ...rest } = sampling;
    for await (const event of await client.responses.create({
      ...rest,
      input: messages,
      max_output_tokens: max_tokens,
    })) {
      if (!first && event.type === 'response.output_text.delta') first = performance.now();
    }
    return { first: first - started, whole: performance.now() - started };
  };
  await chat(); // loads the model
  await response();
  const runs = { chat: [] as { first: number; whole: number }[], responses: [] as { first: number; whole: number }[] };
  for (let i = 0; i < plan.pairs; i++) {
    runs.chat.push(await chat());
    runs.responses.push(await response());
  }

  // The store alone: a record as a streamed answer of this size keeps it.
  const record = (n: number) => ({
    id: `resp_${n}`,
    owner: 'key_bench',
    storedAt: n,
    itemIds: [`msg_${n}`],
    data: { response: { output_text: 'x'.repeat(4 * plan.tokens) }, conversation: messages },
  });
  const puts: number[] = [];
  const gets: number[] = [];
  for (let n = 0; n < plan.stored; n++) {
    let started = performance.now();
    await responses.put(record(n));
    puts.push(performance.now() - started);
    started = performance.now();
    await responses.get('key_bench', `resp_${n}`);
    gets.push(performance.now() - started);
  }
  const ms = (values: number[]) => round(median(values), 2);
  return {
    firstTokenMs: { chat: ms(runs.chat.map((r) => r.first)), responses: ms(runs.responses.map((r) => r.first)) },
    wholeRequestMs: { chat: ms(runs.chat.map((r) => r.whole)), responses: ms(runs.responses.map((r) => r.whole)) },
    ratio: round(median(runs.chat.map((r, i) => runs.responses[i]!.whole / r.whole)), 3),
    store: {
      putMs: { p50: round(median(puts), 3), p95: round(p95(puts), 3) },
      getMs: { p50: round(median(gets), 3), p95: round(p95(gets), 3) },
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await responsesBench(), null, 2));
}
