import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import { createEngine, createHandler, KeyRing, type ModelProfile } from '../src/index.ts';
import { HAS_STORIES_260K, openaiClient, STORIES_260K } from '../test/support/lantern.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { CHAT, STORIES } from './models.ts';
import { endlessStream } from './requests.ts';
import { median, p95, round } from './stats.ts';

/**
 * The remote path in Node: the openai SDK calling Lantern's handler in-process, whose only candidate is Lantern's own
 * server in another process (over HTTP on loopback), against the same SDK calling that server directly, interleaved
 * in one run. Both paths' requests to the server go through a `fetch` that notes when the request left and when
 * each event of the answer arrived, so that the time the server itself took can be told from the time spent on
 * either side of it: on a shared machine the server's own time to first token varies by more than the few tenths of
 * a millisecond Lantern adds.
 */
const now = () => performance.timeOrigin + performance.now();

/** A `fetch` that notes when each request leaves and when each event of its answer arrives. */
function tracedFetch(inner: typeof fetch) {
  let sent = NaN;
  let arrivals: number[] = [];
  const traced: typeof fetch = async (input, init) => {
    sent = now();
    const response = await inner(input, init);
    if (!response.body) return response;
    const decoder = new TextDecoder();
    const timed = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const at = now();
          const events = decoder.decode(chunk, { stream: true }).split('\n\n').length - 1;
          for (let i = 0; i < events; i++) arrivals.push(at);
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(timed, response);
  };
  return {
    fetch: traced,
    /** The last request's departure and its events' arrivals, forgotten once taken. */
    take: () => {
      const taken = { sent, arrivals };
      sent = NaN;
      arrivals = [];
      return taken;
    },
  };
}

/** [tokens, runs] of the first-token measure and of the per-chunk one; warm-up runs of each path before them. */
export interface RemotePlan {
  ttft: readonly [number, number];
  chunks: readonly [number, number];
  warmUp: number;
}
export const REMOTE_PLAN: RemotePlan = { ttft: [2, 40], chunks: [64, 20], warmUp: 10 };
export const REMOTE_SMOKE_PLAN: RemotePlan = { ttft: [2, 1], chunks: [4, 1], warmUp: 1 };

export async function remoteBench(plan: RemotePlan = REMOTE_PLAN) {
  const upstream = await startUpstream({ mode: 'lantern', ...(HAS_STORIES_260K && { stories: STORIES_260K }) });
  const original = globalThis.fetch;
  // Lantern's forwarding uses the global fetch; the direct client gets its own.
  const lanternSide = tracedFetch(original);
  const directSide = tracedFetch(original);
  globalThis.fetch = lanternSide.fetch;
  try {
    const remote = (model: string) => ({ task: 'chat' as const, created: 0, candidates: [upstream.candidate(model)] });
    const profile: ModelProfile = { [CHAT]: remote(CHAT), ...(HAS_STORIES_260K && { [STORIES]: remote(STORIES) }) };
    const keys = new KeyRing();
    const handler = createHandler({
      engine: createEngine({ profile }),
      keys,
      rateLimits: { requestsPerMinute: 1e6, concurrentGenerations: 64, maxGenerations: 64 },
    });
    const viaLantern = openaiClient(handler, (await keys.issue('bench')).key, { maxRetries: 0 });
    const direct = new OpenAI({
      apiKey: upstream.key,
      baseURL: upstream.baseURL,
      fetch: directSide.fetch,
      maxRetries: 0,
    });

    /**
     * One streamed request: its time to first token, and of that the part outside the server (before the request
     * left, and from the first token's arrival to the SDK); when the SDK handed over each chunk, and when each arrived.
     */
    const run = async (client: OpenAI, side: ReturnType<typeof tracedFetch>, model: string, tokens: number) => {
      const started = now();
      const received: number[] = [];
      let first = -1;
      for await (const chunk of await client.chat.completions.create(endlessStream(model, tokens))) {
        received.push(now());
        if (first < 0 && chunk.choices[0]?.delta.content) first = received.length - 1;
      }
      const { sent, arrivals } = side.take();
      const firstToken = received[first]! - started;
      return {
        firstToken,
        outsideServer: firstToken - (arrivals[first]! - sent),
        beforeSent: sent - started,
        received,
        arrivals,
      };
    };

    const measure = async (model: string) => {
      // Warm both paths up (connections, JIT) before anything is counted.
      for (let i = 0; i < plan.warmUp; i++) {
        await run(direct, directSide, model, 8);
        await run(viaLantern, lanternSide, model, 8);
      }
      const added: number[] = [];
      const addedOutside: number[] = [];
      const directFirst: number[] = [];
      const forwarding: number[] = [];
      for (let i = 0; i < plan.ttft[1]; i++) {
        const d = await run(direct, directSide, model, plan.ttft[0]);
        const l = await run(viaLantern, lanternSide, model, plan.ttft[0]);
        added.push(l.firstToken - d.firstToken);
        addedOutside.push(l.outsideServer - d.outsideServer);
        directFirst.push(d.firstToken);
        forwarding.push(l.beforeSent - d.beforeSent);
      }
      const delays: number[] = [];
      for (let i = 0; i < plan.chunks[1]; i++) {
        const l = await run(viaLantern, lanternSide, model, plan.chunks[0]);
        l.received.forEach((at, k) => delays.push(at - l.arrivals[k]!));
      }
      return {
        firstToken: {
          addedP50: round(median(added)),
          addedP95: round(p95(added)),
          outsideServerP50: round(median(addedOutside), 3),
          outsideServerP95: round(p95(addedOutside), 3),
          forwardingP50: round(median(forwarding), 3),
          directP50: round(median(directFirst)),
        },
        chunkDelay: { p50: round(median(delays), 3), p95: round(p95(delays), 3), chunks: delays.length },
      };
    };

    return {
      bundled: await measure(CHAT),
      stories: HAS_STORIES_260K ? await measure(STORIES) : undefined,
    };
  } finally {
    globalThis.fetch = original;
    await upstream.kill();
  }
}

export type RemoteResults = Awaited<ReturnType<typeof remoteBench>>;

/** The table of the README's "Remote candidates" figures. */
export function remoteTable(results: RemoteResults): string {
  const columns = { 'Bundled chat model': results.bundled, ...(results.stories && { stories260K: results.stories }) };
  const names = Object.keys(columns) as (keyof typeof columns)[];
  const row = (label: string, cell: (r: RemoteResults['bundled']) => string | number) =>
    `| ${label} | ${names.map((n) => cell(columns[n]!)).join(' | ')} |`;
  const target = (ok: boolean) => (ok ? '✓' : '✗');
  return [
    `| Measure | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---').join(' | ')} |`,
    row(
      'First token, ms added by Lantern outside the server, p50 (target ≤ 5) / p95',
      (r) =>
        `${r.firstToken.outsideServerP50} ${target(r.firstToken.outsideServerP50 <= 5)} / ${r.firstToken.outsideServerP95}`,
    ),
    row('Of which before the request leaves for the server, ms p50', (r) => r.firstToken.forwardingP50),
    row(
      'First token, ms added, whole time (the server’s own variation included), p50 / p95',
      (r) => `${r.firstToken.addedP50} / ${r.firstToken.addedP95}`,
    ),
    row('First token from the server directly, ms p50', (r) => r.firstToken.directP50),
    row(
      'Each chunk, server bytes in → SDK, ms p50 / p95 (target ≤ 1)',
      (r) => `${r.chunkDelay.p50} / ${r.chunkDelay.p95} ${target(r.chunkDelay.p95 <= 1)}`,
    ),
    row('Chunks measured', (r) => r.chunkDelay.chunks),
  ].join('\n');
}
