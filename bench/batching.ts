import type OpenAI from 'openai';
import { concurrency, type ConcurrencySamples } from './measures.ts';
import { endlessRequest, endlessStream } from './requests.ts';
import { median, round } from './stats.ts';

/**
 * What concurrent requests for one model cost together (one decode loop whose forward passes the requests running
 * on a model share, `n` choices as rows of one batch), measured the same way in Node and in a browser page:
 * aggregate tokens/s at several concurrent streams and its ratio to one stream; a new request's time to first token
 * while others decode, against the same request on an idle model; and `n` choices in one request against as many
 * requests one after another. Each figure goes through the whole /v1 path (the openai SDK, SSE, the handler).
 */
export interface BatchingPlan {
  /** How many streams run at once in each measure (1 first: the others are its multiples), and each one's tokens. */
  streams: readonly number[];
  streamTokens: number;
  /** Rounds of all the counts, interleaved: the ratio to one stream is the median over rounds. */
  rounds: number;
  /**
   * `streams` requests of `tokens` tokens each decoding when a new request of 2 tokens is sent; `probes` samples, each
   * with fresh load, against as many on an idle model.
   */
  load: { streams: number; tokens: number; probes: number };
  /** One request of `n` choices of `tokens` tokens against `n` requests of one, in `pairs` alternating pairs. */
  choices: { n: number; tokens: number; pairs: number };
}

/** One sample of the first-token-under-load measure: the new request's time to first token, in milliseconds. */
export interface LoadSample {
  firstTokenMs: number;
  /** Whether every stream of the load was still decoding when the new request's first token came. */
  loaded: boolean;
}

/** One pair of the choices measure: completion tokens and milliseconds of the request with `n`, then of the `n`. */
export interface ChoicesSample {
  batched: { tokens: number; ms: number };
  sequential: { tokens: number; ms: number };
}

/** What a runner (the Node handler, the browser page) offers this measure. */
export interface BatchingRunner {
  concurrent(model: string, streams: number, tokens: number): Promise<ConcurrencySamples>;
  /** With `streams` 0: the same request on an idle model. */
  underLoad(model: string, streams: number, tokens: number): Promise<LoadSample>;
  choices(model: string, n: number, tokens: number): Promise<ChoicesSample>;
}

/** The tokens of the request a load sample times: the first is what it measures, a second shows that it decodes. */
export const PROBE_TOKENS = 2;

/**
 * The load and choices measures over an openai SDK client, as the Node handler and the browser page both run them.
 * `client(slot)` gives the client of each concurrent request (the page spreads them over keys: one key may run only
 * four generations at once); `now` is epoch milliseconds.
 */
export function sdkBatchingRunner(
  client: (slot: number) => OpenAI,
  now: () => number,
): Pick<BatchingRunner, 'underLoad' | 'choices'> {
  let pairs = 0;
  return {
    async underLoad(model, streams, tokens) {
      const stop = new AbortController();
      const ended = Array.from({ length: streams }, () => false);
      let decoding!: () => void;
      const started = new Promise<void>((resolve) => (decoding = resolve));
      const load = Array.from({ length: streams }, async (_, i) => {
        try {
          const stream = await client(i).chat.completions.create(endlessStream(model, tokens), { signal: stop.signal });
          for await (const chunk of stream) if (chunk.choices[0]?.delta.content) decoding();
        } catch (error) {
          if (!stop.signal.aborted) throw error;
        } finally {
          ended[i] = true;
        }
      });
      // Sent once the load decodes: the engine is between tokens of running requests, not loading or prefilling.
      if (streams > 0) await Promise.race([started, Promise.all(load)]);
      const sent = now();
      let first = NaN;
      let loaded = false;
      const probe = await client(streams).chat.completions.create(endlessStream(model, PROBE_TOKENS));
      for await (const chunk of probe) {
        if (chunk.choices[0]?.delta.content && Number.isNaN(first)) {
          first = now() - sent;
          loaded = streams > 0 && !ended.includes(true);
        }
      }
      stop.abort();
      await Promise.all(load);
      return { firstTokenMs: first, loaded };
    },

    async choices(model, n, tokens) {
      const timed = async (choices: number) => {
        const started = now();
        const reply = await client(0).chat.completions.create({ ...endlessRequest(model, tokens), n: choices });
        return { tokens: reply.usage!.completion_tokens, ms: now() - started };
      };
      const sequentially = async () => {
        const side = { tokens: 0, ms: 0 };
        for (let i = 0; i < n; i++) {
          const one = await timed(1);
          side.tokens += one.tokens;
          side.ms += one.ms;
        }
        return side;
      };
      // Alternate which side goes first, so that neither always follows the other.
      if (pairs++ % 2 === 0) {
        const batched = await timed(n);
        return { batched, sequential: await sequentially() };
      }
      const sequential = await sequentially();
      return { batched: await timed(n), sequential };
    },
  };
}

export type ConcurrencyFigures = ReturnType<typeof concurrency> & {
  /** Aggregate tokens/s ÷ one stream's, median over rounds (each round's counts run back to back). */
  ratio: number;
};

export interface BatchingFigures {
  /** By number of streams. Tokens/s and first tokens are the median round's. */
  concurrency: Record<string, ConcurrencyFigures>;
  underLoad: {
    streams: number;
    /** The new request's time to first token, ms p50: with the streams decoding, and on an idle model. */
    loadedP50: number;
    idleP50: number;
    /** loaded ÷ idle, of the medians. */
    ratio: number;
    /** Samples whose load was still decoding at the new request's first token, of all samples. */
    loadedSamples: string;
  };
  choices: {
    n: number;
    /** Completion tokens per second: one request of `n` choices, and `n` requests one after another (medians). */
    batchedTokensPerSecond: number;
    sequentialTokensPerSecond: number;
    /** batched ÷ sequential, the median of the pairs' ratios. */
    ratio: number;
  };
}

/** Runs the three measures on `model`, each request fitted to its window by `fit`. */
export async function measureBatching(
  log: (message: string) => void,
  name: string,
  runner: BatchingRunner,
  model: string,
  plan: BatchingPlan,
  fit: (tokens: number) => number = (tokens) => tokens,
): Promise<BatchingFigures> {
  const rounds: Record<string, ReturnType<typeof concurrency>>[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    log(`${name}: ${plan.streams.join(', ')} concurrent streams${plan.rounds > 1 ? `, round ${round + 1}` : ''}`);
    const figures: Record<string, ReturnType<typeof concurrency>> = {};
    for (const count of plan.streams) {
      figures[count] = concurrency(await runner.concurrent(model, count, fit(plan.streamTokens)));
    }
    rounds.push(figures);
  }
  const one = String(plan.streams[0]);
  const concurrencyFigures: Record<string, ConcurrencyFigures> = {};
  for (const count of plan.streams.map(String)) {
    const rates = rounds.map((r) => r[count]!.tokensPerSecond);
    // The round whose tokens/s is the median (the lower middle of an even count), with its first tokens.
    const middle = rounds[rates.indexOf([...rates].sort((a, b) => a - b)[Math.floor((rates.length - 1) / 2)]!)]!;
    concurrencyFigures[count] = {
      ...middle[count]!,
      ratio: round(median(rounds.map((r) => r[count]!.tokensPerSecond / r[one]!.tokensPerSecond)), 2),
    };
  }

  log(`${name}: first token of a new request while ${plan.load.streams} streams decode, and on an idle model`);
  const loaded: LoadSample[] = [];
  const idle: LoadSample[] = [];
  for (let i = 0; i < plan.load.probes; i++) {
    loaded.push(await runner.underLoad(model, plan.load.streams, fit(plan.load.tokens)));
    idle.push(await runner.underLoad(model, 0, fit(plan.load.tokens)));
  }
  const [loadedP50, idleP50] = [loaded, idle].map((s) => median(s.map((x) => x.firstTokenMs))) as [number, number];

  const { n, tokens, pairs } = plan.choices;
  log(`${name}: n: ${n} in one request against ${n} requests one after another`);
  const samples: ChoicesSample[] = [];
  for (let i = 0; i < pairs; i++) samples.push(await runner.choices(model, n, fit(tokens)));
  const rate = (side: { tokens: number; ms: number }) => (side.tokens * 1000) / side.ms;
  return {
    concurrency: concurrencyFigures,
    underLoad: {
      streams: plan.load.streams,
      loadedP50: round(loadedP50),
      idleP50: round(idleP50),
      ratio: round(loadedP50 / idleP50, 1),
      loadedSamples: `${loaded.filter((s) => s.loaded).length}/${loaded.length}`,
    },
    choices: {
      n,
      batchedTokensPerSecond: round(median(samples.map((s) => rate(s.batched))), 1),
      sequentialTokensPerSecond: round(median(samples.map((s) => rate(s.sequential))), 1),
      ratio: round(median(samples.map((s) => rate(s.batched) / rate(s.sequential))), 2),
    },
  };
}

/**
 * The measure's rows of a table, as [label, cell] pairs, for the stream counts of `plan`. A cell given `target` marks
 * the issue's target of ≥ 2.5× at 4 streams (set on the realistic model, so its columns alone are marked).
 */
export function batchingRows(
  plan: BatchingPlan,
): [string, (figures: BatchingFigures | undefined, target?: boolean) => string | undefined][] {
  const hasFour = plan.streams.includes(4);
  return [
    [
      `Aggregate tokens/s at ${plan.streams.join(' / ')} concurrent streams (× one stream${hasFour ? '; target ≥ 2.5× at 4 on the realistic model' : ''})`,
      (f, target) => {
        if (!f) return undefined;
        const four = f.concurrency['4'];
        const mark = target && four ? ` ${four.ratio >= 2.5 ? '✓' : '✗'}` : '';
        const cells = plan.streams.map((count) => f.concurrency[count]);
        return cells.map((c) => (c ? `${c.tokensPerSecond} (${c.ratio}×)` : '–')).join(' / ') + mark;
      },
    ],
    [
      `Streams started together, first token min–median–max ms, at ${plan.streams.slice(1).join(' / ')} streams`,
      (f) =>
        f &&
        plan.streams
          .slice(1)
          .map((count) => f.concurrency[count])
          .map((c) => (c ? `${c.firstTokenMinMs}–${c.firstTokenMedianMs}–${c.firstTokenMaxMs}` : '–'))
          .join(' / '),
    ],
    [
      `First token of a new request while ${plan.load.streams} streams decode ÷ on an idle model, ms p50 (samples whose load still decoded at that token)`,
      (f) =>
        f && `${f.underLoad.loadedP50} ÷ ${f.underLoad.idleP50} = ${f.underLoad.ratio}× (${f.underLoad.loadedSamples})`,
    ],
    [
      `n: ${plan.choices.n} in one request ÷ ${plan.choices.n} requests one after another, completion tokens/s`,
      (f) => f && `${f.choices.batchedTokensPerSecond} ÷ ${f.choices.sequentialTokensPerSecond} = ${f.choices.ratio}×`,
    ],
  ];
}
