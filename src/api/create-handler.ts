import { Hono } from 'hono/tiny';
import { cors } from 'hono/cors';
import { memoryResponseStore } from '../response-store/index.ts';
import { memoryDocumentStorage } from '../document-store/index.ts';
import { FileLibrary } from '../file-search/index.ts';
import { BatchRunner } from '../batches/index.ts';
import { ApiError, toApiError } from './errors.ts';
import { newRequestId } from './ids.ts';
import { auth, INTERNAL_KEY_ID, internalKeyId, type InternalBindings } from './middleware/auth.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { readBodyOf } from './middleware/read-body.ts';
import { createFile, deleteFile, fileContent, listFiles, readUpload, retrieveFile } from './files/route.ts';
import { vectorStoreRoutes } from './vector-stores/route.ts';
import { batchRoutes } from './batches/route.ts';
import { DEFAULT_LIMITS, DEFAULT_RATE_LIMITS, type CorsOptions, type HandlerOptions } from './options.ts';
import { createChatCompletion } from './chat-completions/route.ts';
import { createCompletion } from './completions/route.ts';
import { createEmbeddings } from './embeddings/route.ts';
import { createTranscription } from './audio/route.ts';
import { createSpeech } from './speech/route.ts';
import { audioBodyBytes } from './audio/schema.ts';
import { listModels, retrieveModel } from './models/route.ts';
import { RateLimiter } from './rate-limiter.ts';
import { createResponse, deleteResponse, listInputItems, retrieveResponse } from './responses/route.ts';
import { compactResponse } from './responses/compaction.ts';
import { countInputTokens } from './responses/input-tokens.ts';
import { BackgroundRuns, cancelResponse } from './responses/background.ts';
import { memoryRecordStore } from '../record-store/index.ts';
import { REALTIME_SECRET_LIMITS, RealtimeSecrets, type SecretRecord } from './realtime/realtime-secrets.ts';
import { realtimeRoutes } from './realtime/route.ts';
import { storedCompletionRoutes } from './chat-completions/stored.ts';
import { Conversations } from './conversations/conversations.ts';
import { conversationRoutes } from './conversations/route.ts';
import type { Env, RouteDeps } from './route-deps.ts';

/** A web-standard request handler: the same function serves Node, tests and the service worker. */
export type Handler = (request: Request) => Promise<Response>;

/**
 * Creates the /v1 API: `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions`, `POST /v1/completions`,
 * `POST /v1/responses` (with `GET` and `DELETE /v1/responses/{id}`, and `POST /v1/responses/{id}/cancel` for background
 * ones), `POST /v1/embeddings` and `POST /v1/audio/transcriptions` and `/translations` and `POST /v1/audio/speech`,
 * the Files, Vector Stores and Batch APIs (a batch's lines run through these same routes, as its key), every route behind
 * `Authorization: Bearer lt_…`, every route that runs a model under a per-key rate limit and a bounded engine queue,
 * and every failure answered with an OpenAI-shaped error body and an `x-request-id` header.
 *
 * @example
 * const handler = createHandler({ engine, keys: new KeyRing() });
 * const client = new OpenAI({ apiKey, baseURL: 'http://localhost/v1', fetch: (url, init) => handler(new Request(url, init)) });
 *
 * @see ../../docs/api.md for the options and limits.
 */
export function createHandler(options: HandlerOptions): Handler {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const now = options.now ?? Date.now;
  const limiter = new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...options.rateLimits }, now);

  const onServerError =
    options.onServerError ?? ((error, requestId) => console.error(`[lantern] ${requestId}:`, error));
  const report = (error: unknown, requestId: string): ApiError => {
    const apiError = toApiError(error);
    if (apiError.status >= 500 && apiError.code !== 'request_cancelled')
      onServerError(apiError.cause ?? error, requestId);
    return apiError;
  };

  const app = new Hono<Env>({ strict: false });
  app.onError((error, c) => {
    const apiError = report(error, c.get('requestId'));
    return c.json(apiError.body(), apiError.status, apiError.headers);
  });
  // Not thrown: Hono's not-found handler runs outside the middleware chain, so a throw there would skip onError.
  app.notFound((c) => {
    const apiError = new ApiError(404, `Unknown request URL: ${c.req.method} ${new URL(c.req.url).pathname}.`, {
      code: 'unknown_url',
    });
    return c.json(apiError.body(), apiError.status, apiError.headers);
  });

  app.use(async (c, next) => {
    // Any request from outside resumes the batches a stopped context left unfinished (once), and keeps a service worker
    // alive for them (a batch's own lines need not).
    if (internalKeyId(c.env) === undefined) batches.wake();
    const requestId = newRequestId();
    c.set('requestId', requestId);
    await next();
    c.res.headers.set('x-request-id', requestId);
  });
  // Before auth: a preflight carries no key.
  if (options.cors) app.use('/v1/*', corsMiddleware(options.cors));
  // Realtime client secrets and call credentials (`ek_…`): kept as the service worker is told, in memory otherwise.
  const realtimeSecrets = new RealtimeSecrets(
    options.realtimeSecrets ?? memoryRecordStore<SecretRecord>(REALTIME_SECRET_LIMITS),
    now,
  );
  app.use('/v1/*', auth(options.keys, realtimeSecrets));

  const documents = options.documents ?? memoryDocumentStorage();
  const files = new FileLibrary({
    storage: documents,
    engine: options.engine,
    ...options.files,
    ...(options.keepAlive && { keepAlive: options.keepAlive }),
    now,
    onError: (error) => onServerError(error, 'indexing'),
  });
  const concurrentGenerations = options.rateLimits?.concurrentGenerations ?? DEFAULT_RATE_LIMITS.concurrentGenerations;
  const batches = new BatchRunner({
    storage: documents,
    files,
    // A batch's line goes through the app as its key: the same routes, limits and engine queue as any request. Only
    // this call passes bindings, so no request from outside can run as a key it did not present (see auth).
    dispatch: async (keyId, request) => {
      const bindings: InternalBindings = { [INTERNAL_KEY_ID]: keyId };
      try {
        return await app.fetch(request, bindings);
      } catch (error) {
        const apiError = report(error, newRequestId());
        return Response.json(apiError.body(), { status: apiError.status, headers: apiError.headers });
      }
    },
    concurrency: options.batches?.concurrency ?? Math.max(1, concurrentGenerations - 1),
    ...(options.batches?.limits && { limits: options.batches.limits }),
    ...(options.keepAlive && { keepAlive: options.keepAlive }),
    now,
    onError: (error) => onServerError(error, 'batch'),
  });
  const deps: RouteDeps = {
    engine: options.engine,
    limits,
    now,
    ownedBy: options.ownedBy ?? 'lantern',
    errorBody: (error, requestId) => report(error, requestId).body(),
    responses: options.responses ?? memoryResponseStore(),
    conversations: new Conversations(options.conversations ?? memoryRecordStore(), now),
    chatCompletions: options.chatCompletions ?? memoryRecordStore(),
    files,
    batches,
    background: new BackgroundRuns({
      now,
      keepAlive: options.keepAlive,
      onError: (error) => onServerError(error, 'background'),
    }),
  };
  app.get('/v1/models', listModels(deps));
  app.get('/v1/models/:id{.+}', retrieveModel(deps));
  const json = { maxBytes: limits.maxBodyBytes, timeoutMs: limits.bodyTimeoutMs };
  app.post('/v1/chat/completions', rateLimit(limiter, json), createChatCompletion(deps));
  const manage = readBodyOf(json);
  const stored = storedCompletionRoutes(deps);
  app.get('/v1/chat/completions', stored.list);
  app.get('/v1/chat/completions/:id', stored.retrieve);
  app.post('/v1/chat/completions/:id', manage, stored.update);
  app.delete('/v1/chat/completions/:id', stored.delete);
  app.get('/v1/chat/completions/:id/messages', stored.messages);
  app.post('/v1/completions', rateLimit(limiter, json), createCompletion(deps));
  app.post('/v1/responses', rateLimit(limiter, json), createResponse(deps));
  // Both run the model on the request's conversation, as a response would.
  app.post('/v1/responses/compact', rateLimit(limiter, json), compactResponse(deps));
  app.post('/v1/responses/input_tokens', rateLimit(limiter, json), countInputTokens(deps));
  // WebSocket mode's URL (src/node/responses-websocket.ts upgrades it once this answer says the key was accepted).
  app.get('/v1/responses', () => {
    throw new ApiError(426, 'The Responses API takes GET /v1/responses as a WebSocket (its WebSocket mode) only.', {
      code: 'websocket_upgrade_required',
    });
  });
  app.get('/v1/responses/:id', retrieveResponse(deps));
  app.get('/v1/responses/:id/input_items', listInputItems(deps));
  app.delete('/v1/responses/:id', deleteResponse(deps));
  app.post('/v1/responses/:id/cancel', cancelResponse(deps));
  // Embeddings run on the same device, in the same engine queue, as generations: the same limits hold them.
  app.post('/v1/embeddings', rateLimit(limiter, json), createEmbeddings(deps));
  const audio = { maxBytes: audioBodyBytes(limits), timeoutMs: limits.bodyTimeoutMs };
  app.post('/v1/audio/transcriptions', rateLimit(limiter, audio), createTranscription(deps, 'transcribe'));
  app.post('/v1/audio/translations', rateLimit(limiter, audio), createTranscription(deps, 'translate'));
  app.post('/v1/audio/speech', rateLimit(limiter, json), createSpeech(deps));

  // Files and vector stores run no model when they are called (indexing runs in the background, one file at a time),
  // so no rate limit holds them; search embeds its query, and is held like embeddings.
  const upload = readUpload(deps, {
    maxBytes: uploadBodyBytes(deps.files.limits.maxFileBytes),
    timeoutMs: limits.bodyTimeoutMs,
  });
  app.post('/v1/files', upload, createFile(deps));
  app.get('/v1/files', listFiles(deps));
  app.get('/v1/files/:id', retrieveFile(deps));
  app.get('/v1/files/:id/content', fileContent(deps));
  app.delete('/v1/files/:id', deleteFile(deps));
  const stores = vectorStoreRoutes(deps);
  app.post('/v1/vector_stores', manage, stores.create);
  app.get('/v1/vector_stores', stores.list);
  app.get('/v1/vector_stores/:id', stores.retrieve);
  app.post('/v1/vector_stores/:id', manage, stores.modify);
  app.delete('/v1/vector_stores/:id', stores.delete);
  app.post('/v1/vector_stores/:id/search', rateLimit(limiter, json), stores.search);
  app.post('/v1/vector_stores/:id/files', manage, stores.attachFile);
  app.get('/v1/vector_stores/:id/files', stores.listFiles);
  app.get('/v1/vector_stores/:id/files/:file_id', stores.retrieveFile);
  app.post('/v1/vector_stores/:id/files/:file_id', manage, stores.updateFile);
  app.delete('/v1/vector_stores/:id/files/:file_id', stores.detachFile);
  app.get('/v1/vector_stores/:id/files/:file_id/content', stores.fileContent);
  app.post('/v1/vector_stores/:id/file_batches', manage, stores.createBatch);
  app.get('/v1/vector_stores/:id/file_batches/:batch_id', stores.retrieveBatch);
  app.post('/v1/vector_stores/:id/file_batches/:batch_id/cancel', stores.cancelBatch);
  app.get('/v1/vector_stores/:id/file_batches/:batch_id/files', stores.listBatchFiles);
  // Conversations run no model: no rate limit holds them (the responses that use them are held).
  const conversations = conversationRoutes(deps);
  app.post('/v1/conversations', manage, conversations.create);
  app.get('/v1/conversations/:id', conversations.retrieve);
  app.post('/v1/conversations/:id', manage, conversations.update);
  app.delete('/v1/conversations/:id', conversations.delete);
  app.post('/v1/conversations/:id/items', manage, conversations.addItems);
  app.get('/v1/conversations/:id/items', conversations.listItems);
  app.get('/v1/conversations/:id/items/:item_id', conversations.retrieveItem);
  app.delete('/v1/conversations/:id/items/:item_id', conversations.deleteItem);
  // The Realtime API: its sessions are clients of the routes above (src/realtime/); these mint their credentials and
  // answer WebRTC offers. No model runs here, so no rate limit holds them.
  const realtime = realtimeRoutes({ secrets: realtimeSecrets, answerer: options.realtime });
  app.post('/v1/realtime/client_secrets', manage, realtime.createClientSecret);
  app.post('/v1/realtime/calls', manage, realtime.createCall);
  app.post('/v1/realtime/calls/:id/hangup', realtime.hangup);
  app.get('/v1/realtime', realtime.websocketOnly);
  // Batches run their lines through the routes above, each line under the key's limits as it runs.
  const batch = batchRoutes(deps);
  app.post('/v1/batches', manage, batch.create);
  app.get('/v1/batches', batch.list);
  app.get('/v1/batches/:id', batch.retrieve);
  app.post('/v1/batches/:id/cancel', batch.cancel);

  return async (request) => {
    try {
      return await app.fetch(request);
    } catch (error) {
      // Hono routes every thrown error to onError; this is the last guard, so the handler itself never rejects.
      const requestId = newRequestId();
      const apiError = report(error, requestId);
      return Response.json(apiError.body(), {
        status: apiError.status,
        headers: { ...apiError.headers, 'x-request-id': requestId },
      });
    }
  };
}

/**
 * The largest upload body: a file of `maxFileBytes`, and 64 KiB of the other fields and the multipart framing. (A
 * larger file is refused with 413 by the library when it fits the body; a body over this, with 400 before it is read.)
 */
const uploadBodyBytes = (maxFileBytes: number) => maxFileBytes + 64 * 1024;

/**
 * How long a browser may reuse a preflight's answer: ten minutes spares the SDK's requests a preflight each (Chromium
 * caps it at two hours, Firefox at a day), and a changed list of origins takes effect within that.
 */
const PREFLIGHT_MAX_AGE_S = 600;

/** The response headers the openai SDK reads (request id, retry advice, rate limits): cross-origin, only if exposed. */
const EXPOSED_HEADERS = [
  'x-request-id',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  // A Responses answer that could not be stored says so (its body says `store: false` too).
  'x-lantern-stored',
];

/** hono's CORS middleware for the allowed origins; other origins get no CORS headers, so their browsers refuse. */
function corsMiddleware({ origins }: CorsOptions) {
  const allowed = typeof origins === 'function' ? origins : (origin: string) => origins.includes(origin);
  return cors({
    origin: (origin) => (origin && allowed(origin) ? origin : null),
    allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_S,
  });
}
