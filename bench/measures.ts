import { decodeRate, median, p95, round } from './stats.ts';

/** Raw samples, as the Node and browser benchmarks both collect them (epoch milliseconds). */
export interface ChatSamples {
  direct: { started: number; tokenTimes: number[] }[];
  path: { started: number; received: number[]; generated: number[] }[];
}

export interface EmbeddingSamples {
  direct: number[];
  path: number[];
  oneByOne: number[];
}

export interface ConcurrencySamples {
  started: number;
  received: number[][];
}

/**
 * Whole-path decode throughput against the direct call's, and the direct rate for scale. The ratio and the time added
 * are medians over pairs (each path run against the direct run just before it): on a shared machine the speed drifts
 * by a third from run to run, and a pair sees the same drift.
 */
export function decode(samples: ChatSamples) {
  const directRates = samples.direct.map((r) => decodeRate(r.tokenTimes));
  const pathRates = samples.path.map((r) => decodeRate(r.received));
  // The engine's own pace during the whole-path runs: tells a slower engine (work competing for the CPU) from a
  // slower delivery.
  const generated = median(samples.path.map((r) => decodeRate(r.generated)));
  return {
    ratio: round(median(pathRates.map((path, i) => path / directRates[i]!)), 3),
    // The same cost in time: it is about constant per token, so this says what the ratio is for a slower model.
    addedMsPerToken: round(median(pathRates.map((path, i) => 1000 / path - 1000 / directRates[i]!)), 3),
    directTokensPerSecond: round(median(directRates), 1),
    pathTokensPerSecond: round(median(pathRates), 1),
    generatedTokensPerSecond: round(generated, 1),
  };
}

/** Time to first token added by the path: each path run against the direct run just before it. */
export function firstToken(samples: ChatSamples) {
  const added = samples.path.map((p, i) => {
    const d = samples.direct[i]!;
    return p.received[0]! - p.started - (d.tokenTimes[0]! - d.started);
  });
  const direct = samples.direct.map((d) => d.tokenTimes[0]! - d.started);
  return { addedP50: round(median(added)), addedP95: round(p95(added)), directP50: round(median(direct)) };
}

/** Every token its own event, and how long each took from the engine to the client. */
export function delivery(samples: ChatSamples) {
  const delays = samples.path.flatMap((p) => p.received.map((at, i) => at - p.generated[i]!));
  const events = samples.path.reduce((n, p) => n + p.received.length, 0);
  const tokens = samples.path.reduce((n, p) => n + p.generated.length, 0);
  return { eventsPerToken: round(events / tokens, 3), delayP50: round(median(delays)), delayP95: round(p95(delays)) };
}

/** Speed through /v1 as a fraction of the direct call's (1 = no cost), and batching's gain over one request each. */
export function embeddings(samples: EmbeddingSamples) {
  const path = median(samples.path);
  return {
    ratio: round(median(samples.direct) / path, 3),
    pathMs: round(path),
    batchedSpeedup: samples.oneByOne.length ? round(median(samples.oneByOne) / path, 1) : null,
  };
}

/** Tokens per second of all streams together, and how far apart their first tokens came. */
export function concurrency(samples: ConcurrencySamples) {
  const tokens = samples.received.reduce((n, r) => n + r.length, 0);
  const end = Math.max(...samples.received.map((r) => r.at(-1)!));
  const firsts = samples.received.map((r) => r[0]! - samples.started);
  return {
    tokensPerSecond: round((tokens * 1000) / (end - samples.started), 1),
    firstTokenMinMs: round(Math.min(...firsts)),
    firstTokenMedianMs: round(median(firsts)),
    firstTokenMaxMs: round(Math.max(...firsts)),
  };
}
