import { performance } from 'node:perf_hooks';
import OpenAI from 'openai';
import { createEngine, createHandler, KeyRing, type ModelProfile } from '../src/index.ts';
import { HAS_STORIES_260K, STORIES_260K } from '../test/support/lantern.ts';
import { startUpstream } from '../test/support/upstream.ts';
import { CHAT, STORIES } from './models.ts';
import { endlessStream } from './requests.ts';
import { median, p95, round } from './stats.ts';

/**
 * The remote path in Node: the openai SDK calling Lantern's handler in-process, whose only candidate is Lantern's own
 * server in another process (over HTTP on loopback), against the same SDK calling that server directly, interleaved
 * in one run. Two figures: the time to first token Lantern adds, and how long each chunk spends inside Lantern, from
 * the moment its bytes arrive from the server (timed by a wrapper around this process's `fetch`, which only
 * Lantern's forwarding uses) to the moment the SDK hands it over.
 */
const now = () => performance.timeOrigin + performance.now();

/**
 * Every `fetch` Lantern sends to the server is wrapped: when it leaves, and the arrival time of each event of its
 * answer, are noted.
 */
function traceArrivals() {
  const original = globalThis.fetch;
  let arrivals: number[] = [];
  let sent: number[] = [];
  globalThis.fetch = async (input, init) => {
    sent.push(now());
    const response = await original(input, init);
    if (!response.body) return response;
    const decoder = new TextDecoder();
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const at = now();
          const events = decoder.decode(chunk, { stream: true }).split('\n\n').length - 1;
          for (let i = 0; i < events; i++) arrivals.push(at);
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, response);
  };
  return {
    original,
    take: () => {
      const taken = arrivals;
      arrivals = [];
      return taken;
    },
    takeSent: () => {
      const taken = sent;
      sent = [];
      return taken;
    },
    restore: () => void (globalThis.fetch = original),
  };
}

export async function remoteBench(plan: { ttft: readonly [number, number]; chunks: readonly [number, number] }) {
  const upstream = await startUpstream({ mode: 'lantern', ...(HAS_STORIES_260K && { stories: STORIES_260K }) });
  const trace = traceArrivals();
  try {
    const remote = (model: string) => ({ task: 'chat' as const, created: 0, candidates: [upstream.candidate(model)] });
    const profile: ModelProfile = { [CHAT]: remote(CHAT), ...(HAS_STORIES_260K && { [STORIES]: remote(STORIES) }) };
    const keys = new KeyRing();
    const handler = createHandler({
      engine: createEngine({ profile }),
      keys,
      rateLimits: { requestsPerMinute: 1e6, concurrentGenerations: 64, maxGenerations: 64 },
    });
    const viaLantern = new OpenAI({
      apiKey: (await keys.issue('bench')).key,
      baseURL: 'http://lantern.bench/v1',
      fetch: (url, init) => handler(new Request(url, init)),
      maxRetries: 0,
    });
    const direct = new OpenAI({
      apiKey: upstream.key,
      baseURL: upstream.baseURL,
      fetch: trace.original,
      maxRetries: 0,
    });

    /** One streamed request: when it started and when the SDK handed over each chunk. */
    const run = async (client: OpenAI, model: string, tokens: number) => {
      trace.takeSent();
      const started = now();
      const received: number[] = [];
      let first = NaN;
      for await (const chunk of await client.chat.completions.create(endlessStream(model, tokens))) {
        const at = now();
        received.push(at);
        if (Number.isNaN(first) && chunk.choices[0]?.delta.content) first = at;
      }
      return { firstToken: first - started, received, forwardedAfter: (trace.takeSent()[0] ?? NaN) - started };
    };

    const measure = async (model: string) => {
      await run(direct, model, 8);
      await run(viaLantern, model, 8);
      trace.take();
      const added: number[] = [];
      const directFirst: number[] = [];
      const forwarding: number[] = [];
      for (let i = 0; i < plan.ttft[1]; i++) {
        const d = await run(direct, model, plan.ttft[0]);
        const l = await run(viaLantern, model, plan.ttft[0]);
        added.push(l.firstToken - d.firstToken);
        directFirst.push(d.firstToken);
        forwarding.push(l.forwardedAfter);
      }
      trace.take();
      const delays: number[] = [];
      for (let i = 0; i < plan.chunks[1]; i++) {
        const l = await run(viaLantern, model, plan.chunks[0]);
        const arrivals = trace.take(); // every event of the answer, [DONE] last
        l.received.forEach((at, k) => delays.push(at - arrivals[k]!));
      }
      return {
        firstToken: {
          addedP50: round(median(added)),
          addedP95: round(p95(added)),
          directP50: round(median(directFirst)),
          forwardingP50: round(median(forwarding), 3),
          forwardingP95: round(p95(forwarding), 3),
        },
        chunkDelay: { p50: round(median(delays), 3), p95: round(p95(delays), 3), chunks: delays.length },
      };
    };

    return {
      bundled: await measure(CHAT),
      stories: HAS_STORIES_260K ? await measure(STORIES) : undefined,
    };
  } finally {
    trace.restore();
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
      'First token, ms added by Lantern, p50 (target ≤ 5) / p95',
      (r) => `${r.firstToken.addedP50} ${target(r.firstToken.addedP50 <= 5)} / ${r.firstToken.addedP95}`,
    ),
    row('First token from the server directly, ms p50', (r) => r.firstToken.directP50),
    row(
      "Lantern's work before the request leaves for the server, ms p50 / p95",
      (r) => `${r.firstToken.forwardingP50} / ${r.firstToken.forwardingP95}`,
    ),
    row(
      'Each chunk, server bytes in → SDK, ms p50 / p95 (target ≤ 1)',
      (r) => `${r.chunkDelay.p50} / ${r.chunkDelay.p95} ${target(r.chunkDelay.p95 <= 1)}`,
    ),
    row('Chunks measured', (r) => r.chunkDelay.chunks),
  ].join('\n');
}
