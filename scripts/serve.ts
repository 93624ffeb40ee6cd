/**
 * `npm run serve:node`: the /v1 handler served from Node on 127.0.0.1 with the bundled models, and a fresh API key.
 * (`npm start` serves the browser app; this is the same handler without a browser.) `/v1/responses` also takes a
 * WebSocket, the Responses API's WebSocket mode, and `/v1/realtime?model=…` the Realtime API's WebSocket form
 * (lantern/node, docs/api.md), under the same keys.
 *
 * Environment: `PORT` (default 8787; 0 picks a free one); `LANTERN_KEY_NAMES`, the apps to issue a key for, comma-
 * separated (default: one key); `LANTERN_CORS_ORIGINS`, the browser origins allowed to call
 * it, comma-separated, or `*` for any (default: http(s)://localhost, 127.0.0.1 and [::1] on any port, so that a dev
 * server of another port, such as Vite's, can use it); `LANTERN_IMAGE_URL_HOSTS`, the hosts whose http(s) image URLs
 * the server may fetch, comma-separated exact names (default: none, images come as data URLs; an allowed host is still
 * refused at a loopback, private or link-local address: docs/security.md); `LANTERN_DOCUMENTS_DIR`, a directory to
 * keep uploaded files and vector stores in (default: memory, as the keys are); `LANTERN_REQUESTS_PER_MINUTE`,
 * `LANTERN_CONCURRENT_GENERATIONS` (per key) and `LANTERN_MAX_GENERATIONS` (all keys), the rate limits (docs/api.md).
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { EngineWorkerClient } from '../sw/engine-worker-client.ts';
import { createModelRouter } from '../src/models/model-router.ts';
import { NODE_CPU, type CandidateFailure, type EngineName, type RoutingConfig } from '../src/models/model-profile.ts';
import {
  bundledProfile,
  createHandler,
  DEFAULT_LIMITS,
  DEFAULT_RATE_LIMITS,
  isLocalOrigin,
  KeyRing,
  RATE_LIMIT_VARIABLES,
  type CorsOptions,
  type RateLimits,
  type Engine,
} from '../src/index.ts';
import { directoryDocumentStorage } from '../src/document-store/directory-document-storage.ts';
import { handleWebSockets, realtimeWebSocket, responsesWebSocket } from '../src/node/index.ts';
import type { EngineThreadMessage } from './engine-thread.ts';
import { threadTextExtractor } from './text-extraction.ts';
import { typescriptWorker } from './typescript-worker.ts';

const port = Number(process.env.PORT ?? 8787);
/** Headers arrive in one packet from any real client; 10 s covers a slow mobile link's first round trips. */
const HEADERS_TIMEOUT_MS = 10_000;
/** How far past the handler's body deadline Node itself gives up on a request (its own 408). */
const REQUEST_TIMEOUT_MARGIN_MS = 5_000;
const host = '127.0.0.1';

/** The allowed origins from `LANTERN_CORS_ORIGINS`, or those of local development; and how to tell them. */
function corsFrom(setting = process.env.LANTERN_CORS_ORIGINS?.trim()): {
  origins: CorsOptions['origins'];
  shown: string;
} {
  if (!setting) return { origins: isLocalOrigin, shown: 'localhost, 127.0.0.1 and [::1], any port' };
  if (setting === '*') return { origins: () => true, shown: 'any origin' };
  const origins = setting.split(',').map((origin) => origin.trim().replace(/\/$/, ''));
  return { origins, shown: origins.join(', ') };
}

/**
 * The engine: the router here, the local models in a worker thread (scripts/engine-thread.ts), so that tokenizing a
 * long prompt or compiling a large schema never holds this event loop, where every key's requests are answered. A
 * thread that must be replaced (a crashed WebAssembly, or it exited) is, with the candidates that broke it skipped; a
 * call that had produced nothing yet is sent again to the new one.
 */
function startEngine(): Engine {
  const failed: CandidateFailure[] = [];
  /**
   * The routing of the engine thread now running: one object per thread, as a service worker has one per port offer,
   * so that the router's memory of load failures (kept per routing) goes with the thread. `failed` grows in place.
   */
  let engineRouting: RoutingConfig = { ...routing, failed };
  /** The engine thread now running, if any. */
  let current: Worker | undefined;
  const client = new EngineWorkerClient({ requestPort: () => void startThread() });
  const startThread = () => {
    if (current) return;
    const { port1, port2 } = new MessageChannel();
    const thread = typescriptWorker(new URL('./engine-thread.ts', import.meta.url), {
      workerData: { port: port1 },
      transferList: [port1 as never],
    });
    current = thread;
    engineRouting = { ...routing, failed };
    let replaced = false;
    const replace = (reason: string) => {
      if (replaced) return;
      replaced = true;
      console.error(`[lantern] the engine thread is replaced: ${reason}`);
      client.disconnect('node');
      current = undefined;
      void thread.terminate();
    };
    thread.on('message', (message: EngineThreadMessage) => {
      if (message.type === 'ready') client.connect(port2, `node#${thread.threadId}`, engineRouting);
      else if (message.type === 'progress' && message.progress.status === 'ready')
        console.log(`[lantern] ${message.progress.model} loaded`);
      else if (message.type === 'fatal') {
        if (message.failed) failed.push(message.failed);
        replace(message.reason);
      }
    });
    thread.on('error', (error) => replace(error.message));
    thread.on('exit', (code) => replace(`it exited (${code})`));
  };
  startThread();
  return createModelRouter({ local: client, routing: () => engineRouting });
}

// `LANTERN_ENGINES` (comma-separated: `llama.cpp`) serves the bundled models on those engines alone (withEngines).
const engines = process.env.LANTERN_ENGINES?.split(',').map((name) => name.trim()) as EngineName[] | undefined;
const routing = {
  profile: bundledProfile(fileURLToPath(new URL('../public/models', import.meta.url)), engines ? { engines } : {}),
  policy: 'local-first',
  device: NODE_CPU,
} satisfies RoutingConfig;
const engine = startEngine();
const keys = new KeyRing();
// One key per app that will call the server (`LANTERN_KEY_NAMES`, comma-separated): keys keep apps apart here (rate
// limits, stored responses, cached prompts; docs/security.md). By default one key.
const named = (process.env.LANTERN_KEY_NAMES ?? '')
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const names = named.length > 0 ? named : ['npm start'];
const issued = await Promise.all(names.map(async (name) => ({ name, key: (await keys.issue(name)).key })));
const { key } = issued[0]!;
const cors = corsFrom();
// Image URLs only from hosts the operator names: else any key holder makes this server fetch its network (issue 41).
const imageUrlHosts = (process.env.LANTERN_IMAGE_URL_HOSTS ?? '')
  .split(',')
  .map((h) => h.trim())
  .filter(Boolean);
// Files and vector stores in memory, as the keys are; on disk where the operator names a directory.
const documentsDir = process.env.LANTERN_DOCUMENTS_DIR?.trim();

/**
 * The per-key limits a local operator may raise (or lower), each from its variable (`RATE_LIMIT_VARIABLES`:
 * `LANTERN_REQUESTS_PER_MINUTE`, `LANTERN_CONCURRENT_GENERATIONS`, `LANTERN_MAX_GENERATIONS`): a whole number of at
 * least 1. A value that is not one stops the server before it starts, saying which.
 */
function rateLimitsFrom(env = process.env): RateLimits {
  const limits = { ...DEFAULT_RATE_LIMITS };
  for (const [limit, variable] of Object.entries(RATE_LIMIT_VARIABLES) as [keyof RateLimits, string][]) {
    const setting = env[variable]?.trim();
    if (!setting) continue;
    const value = Number(setting);
    if (!Number.isSafeInteger(value) || value < 1) {
      console.error(`[lantern] ${variable} must be a whole number of at least 1, not "${setting}".`);
      process.exit(1);
    }
    limits[limit] = value;
  }
  return limits;
}
const rateLimits = rateLimitsFrom();
const handler = createHandler({
  engine,
  keys,
  cors: { origins: cors.origins },
  limits: { imageUrlHosts },
  rateLimits,
  ...(documentsDir && { documents: directoryDocumentStorage(documentsDir) }),
  // Files are read in a thread of their own, within a time and memory budget: no document holds this one.
  files: { extract: threadTextExtractor().extract },
});

// An HTTP/1.1 server: `serve` makes one unless told to make an HTTP/2 one.
const server = serve({ fetch: handler, hostname: host, port }, (info) => {
  const base = `http://${host}:${info.port}/v1`;
  console.log(`Lantern is serving the bundled models at ${base}

  API key (shown once, valid until this process ends):  ${key}${issued
    .slice(1)
    .map((other) => `\n  API key of ${other.name}:  ${other.key}`)
    .join('')}
  Browser apps may call it from (CORS; set LANTERN_CORS_ORIGINS to change):  ${cors.shown}
  Image URLs fetched from (set LANTERN_IMAGE_URL_HOSTS to allow hosts):  ${imageUrlHosts.join(', ') || 'none'}
  Limits per key: ${rateLimits.requestsPerMinute} requests a minute (LANTERN_REQUESTS_PER_MINUTE), ${rateLimits.concurrentGenerations} at once (LANTERN_CONCURRENT_GENERATIONS); ${rateLimits.maxGenerations} on the device in all (LANTERN_MAX_GENERATIONS)

  curl ${base}/chat/completions -H "Authorization: Bearer ${key}" -H "Content-Type: application/json" \\
    -d '{"model": "crimson-falcon-4", "messages": [{"role": "user", "content": "Count to 10."}], "stream": true}'

  new OpenAI({ baseURL: '${base}', apiKey: '${key}' })
  WebSocket mode (openai/resources/responses/ws):  ws://${host}:${info.port}/v1/responses
  Realtime API over WebSocket (the Agents SDK's OpenAIRealtimeWebSocket, its url option):  ws://${host}:${info.port}/v1/realtime?model=gpt-realtime

Press Ctrl+C to stop.`);
}) as Server;

// A client that sends its headers slowly holds a socket and nothing else, but not for long: Node's default (60 s) lets
// a few thousand such sockets pile up. The whole request is bounded just past the handler's own body deadline
// (`bodyTimeoutMs`), so that the handler's OpenAI-shaped 400 answers first and Node's 408 is only a backstop.
server.headersTimeout = HEADERS_TIMEOUT_MS;
server.requestTimeout = DEFAULT_LIMITS.bodyTimeoutMs + REQUEST_TIMEOUT_MARGIN_MS;
// The Responses API's WebSocket mode on /v1/responses, and the Realtime API on /v1/realtime: each socket's work is
// requests to the same handler, under the handshake's key.
handleWebSockets(server, [responsesWebSocket(handler), realtimeWebSocket(handler)]);
