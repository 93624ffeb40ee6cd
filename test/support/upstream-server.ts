/**
 * An OpenAI-compatible server for the remote-candidate tests and benchmarks, run in a process of its own
 * (`startUpstream` in upstream.ts forks it): Lantern's own Node server (`createHandler` over `createEngine`, as
 * `npm run serve:node` runs it) on the bundled models or stories260K, over real HTTP on loopback. It tells its parent
 * (IPC) each request body it receives and how each model run ended, so tests can see what reached it and that an abort
 * closed it. Options make it misbehave the ways servers do: rate-limited, with a model that fails to load, pacing its
 * stream one event per word from the parent, answering floats whatever encoding was asked, or (`silent`) accepting connections and never answering.
 */
import { serve } from '@hono/node-server';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bundledProfile,
  createEngine,
  createHandler,
  KeyRing,
  withTaskMethods,
  type Engine,
  type ModelEntry,
  type ModelProfile,
} from '../../src/index.ts';

export interface UpstreamConfig {
  mode: 'lantern' | 'silent';
  /** 0: any free port. */
  port?: number;
  /** Also serve stories260K (from `../shared/models`) as `stories-260k`. */
  stories?: string;
  /** Lantern's per-key rate limit (a low one makes it answer 429). */
  requestsPerMinute?: number;
  /** Generations one key may run at once (1: a second request while one streams is answered 429). */
  concurrentGenerations?: number;
  /** Serve this chat ID from a model whose weights are corrupt: it answers 500 `model_load_failed`. */
  broken?: string;
  /** Allow this origin (CORS), for a browser's service worker calling across origins. */
  corsOrigin?: string;
  /** Send each streamed event only once the parent says `next` (IPC), after telling it `sent`. */
  gated?: boolean;
  /** Answer embeddings in floats whatever `encoding_format` asks, as some servers do. */
  ignoreEncodingFormat?: boolean;
}

/** What the server tells its parent. */
export type UpstreamMessage =
  | { type: 'ready'; port: number; key: string }
  | { type: 'request'; path: string; body: unknown }
  | { type: 'run'; model: string; outcome: string }
  /** (silent) A request arrived on a new connection. Node's fetch also opens idle connections: those do not count. */
  | { type: 'connection' }
  | { type: 'sent'; event: number };

const config = JSON.parse(process.env.UPSTREAM_CONFIG ?? '{"mode":"lantern"}') as UpstreamConfig;
const tell = (message: UpstreamMessage) => process.send?.(message);
const MODELS = fileURLToPath(new URL('../../public/models', import.meta.url));

// The parent going away takes this server with it.
process.on('disconnect', () => process.exit(0));

if (config.mode === 'silent') {
  const server = createServer((socket) => {
    socket.once('data', () => tell({ type: 'connection' }));
    socket.on('error', () => {});
  });
  server.listen(config.port ?? 0, '127.0.0.1', () => {
    const address = server.address();
    tell({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0, key: '' });
  });
} else {
  await serveLantern();
}

/** A tiny-chat folder whose weights are not ONNX: loading it fails inside onnxruntime. */
function corruptModel(): string {
  const folder = mkdtempSync(join(tmpdir(), 'lantern-corrupt-'));
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    copyFileSync(`${MODELS}/tiny-chat/${file}`, `${folder}/${file}`);
  }
  mkdirSync(`${folder}/onnx`);
  writeFileSync(`${folder}/onnx/model.onnx`, 'not an ONNX model');
  return folder;
}

async function serveLantern() {
  // Prefix reuse off: two identical requests then get identical answers (usage and log probabilities included), which
  // the tests compare, and a benchmark's second request of a pair is not served from the first one's cache.
  const noReuse = (entry: ModelEntry): ModelEntry => ({
    ...entry,
    candidates: entry.candidates.map((c) => (c.engine === 'transformers' ? { ...c, prefixCacheBytes: 0 } : c)),
  });
  let profile: ModelProfile = Object.fromEntries(
    Object.entries(bundledProfile(MODELS)).map(([id, entry]) => [id, noReuse(entry)]),
  );
  const cpu = (model: string) => [
    { engine: 'transformers' as const, model, dtype: 'fp32' as const, device: 'cpu' as const, prefixCacheBytes: 0 },
  ];
  if (config.stories)
    profile = { ...profile, 'stories-260k': { task: 'chat', created: 0, candidates: cpu(config.stories) } };
  if (config.broken)
    profile = { ...profile, [config.broken]: { task: 'chat', created: 0, candidates: cpu(corruptModel()) } };

  const engine = createEngine({ profile });
  const reported: Engine = withTaskMethods({
    models: () => engine.models(),
    run: (task, model, request, options) => report(model, engine.run(task, model, request, options)),
  });
  const keys = new KeyRing();
  const { key } = await keys.issue('upstream');
  const handler = createHandler({
    engine: reported,
    keys,
    onServerError: () => {},
    rateLimits: {
      requestsPerMinute: config.requestsPerMinute ?? 1e6,
      concurrentGenerations: config.concurrentGenerations ?? 64,
      maxGenerations: 64,
    },
  });

  const fetch = async (request: Request): Promise<Response> => {
    if (config.corsOrigin && request.method === 'OPTIONS')
      return withCors(new Response(null, { status: 204 }), request);
    if (request.method === 'POST') {
      const path = new URL(request.url).pathname;
      // A multipart body (audio) is told as its fields, each file as its name.
      const multipart = request.headers.get('content-type')?.startsWith('multipart/form-data');
      const body = multipart
        ? Object.fromEntries(
            [...(await request.clone().formData())].map(([name, v]) => [name, typeof v === 'string' ? v : v.name]),
          )
        : ((await request.clone().json()) as Record<string, unknown>);
      tell({ type: 'request', path, body });
      if (config.ignoreEncodingFormat && path === '/v1/embeddings') {
        delete body.encoding_format;
        request = new Request(request.url, { method: 'POST', headers: request.headers, body: JSON.stringify(body) });
      }
    }
    let response = await handler(request);
    if (config.gated && response.body && response.headers.get('content-type')?.startsWith('text/event-stream')) {
      response = new Response(gate(response.body), response);
    }
    return config.corsOrigin ? withCors(response, request) : response;
  };
  serve({ fetch, hostname: '127.0.0.1', port: config.port ?? 0 }, (info) =>
    tell({ type: 'ready', port: info.port, key }),
  );
}

async function report<T>(model: string, run: Promise<T>): Promise<T> {
  try {
    const result = await run;
    tell({ type: 'run', model, outcome: 'completed' });
    return result;
  } catch (error) {
    tell({ type: 'run', model, outcome: (error as { kind?: string }).kind ?? 'error' });
    throw error;
  }
}

function withCors(response: Response, request: Request): Response {
  const headers = new Headers(response.headers);
  headers.set('access-control-allow-origin', config.corsOrigin!);
  headers.set('access-control-allow-methods', 'GET, POST, OPTIONS');
  headers.set('access-control-allow-headers', request.headers.get('access-control-request-headers') ?? '*');
  // The headers a client needs to retry well, readable across origins.
  headers.set('access-control-expose-headers', 'retry-after, retry-after-ms, x-should-retry, x-request-id');
  return new Response(response.body, { status: response.status, headers });
}

/** Passes the stream on one event at a time: `sent` after each, then waits for the parent's `next`. */
function gate(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  let count = 0;
  // Each `next` is a credit for one more event, whether it comes before or after the event is ready.
  let credits = 0;
  let wake = () => {};
  process.on('message', (message: { type?: string }) => {
    if (message.type !== 'next') return;
    credits += 1;
    wake();
  });
  const next = async () => {
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits -= 1;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const end = pending.indexOf('\n\n');
        if (end >= 0) {
          const event = pending.slice(0, end + 2);
          pending = pending.slice(end + 2);
          if (count > 0) await next();
          controller.enqueue(encoder.encode(event));
          tell({ type: 'sent', event: count++ });
          return;
        }
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        pending += decoder.decode(value, { stream: true });
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
