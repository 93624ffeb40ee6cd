/// <reference lib="webworker" />
import { createHandler, type Handler, type HandlerOptions } from '../src/api/index.ts';
import { createModelRouter } from '../src/models/model-router.ts';
import { indexedDbKeyStorage, KeyRing } from '../src/keys/index.ts';
import { indexedDbResponseStore } from '../src/response-store/index.ts';
import { indexedDbRecordStore } from '../src/record-store/index.ts';
import { REALTIME_SECRET_LIMITS } from '../src/api/realtime/realtime-secrets.ts';
import { indexedDbDocumentStorage } from '../src/document-store/index.ts';
import {
  hostLock,
  isAbortRequest,
  isHostGone,
  isKeepAwake,
  type Busy,
  type Indexing,
  isPortOffer,
  isProtocolCheck,
  PORT_REQUEST,
  PROTOCOL_VERSION,
  REQUEST_ID_HEADER,
  type ProtocolCheck,
  type Served,
} from '../src/worker/protocol.ts';
import { EngineWorkerClient } from './engine-worker-client.ts';
import { PageVersions } from './page-versions.ts';
import { routeFetch, type FetchEventLike } from './route-fetch.ts';
import { PageAnswerer } from '../src/realtime-webrtc/page-answerer.ts';

/**
 * How often a running request checks that the page which sent it still exists. Browsers do not abort a service
 * worker's work when the page that asked for it closes, unless an answer is already streaming to it; a second is
 * short next to a generation and costs one `clients.get` call.
 */
const CLIENT_CHECK_MS = 1000;

/** How many aborts that came before their request are kept (each an ID): far more than a page starts at once. */
const ABORTED_EARLY_KEPT = 256;

export interface MountOptions extends Partial<Omit<HandlerOptions, 'engine'>> {
  /** How long a request waits for a host tab to hand over a port to the engine worker. */
  portWaitMs?: number;
}

/**
 * Mounts Lantern in a service worker: `/v1/*` on this origin is answered by the handler, with keys, stored responses,
 * files and vector stores in the origin's IndexedDB and models from the engine worker of whichever tab hosts it; every other request is left
 * alone. Call it
 * once, at the top level of your own service worker, before any other fetch listener that could answer `/v1`.
 *
 * @example
 * // my-service-worker.ts
 * import { mountLantern } from 'lantern/sw';
 * mountLantern(self);
 *
 * @returns the handler, for tests or for calling it directly.
 */
export function mountLantern(scope: ServiceWorkerGlobalScope, options: MountOptions = {}): Handler {
  // Without a port (a fresh start, or the browser stopped this worker while idle), ask every window for one: the
  // host tab answers with a new channel to its engine worker.
  const requestPort = async () => {
    const windows = await scope.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const client of windows) client.postMessage({ type: PORT_REQUEST });
  };
  /** Tells every window this worker controls `message` (they hear it whether or not they host). */
  const tellWindows = (message: Served | Indexing | Busy) =>
    void scope.clients.matchAll({ type: 'window' }).then((windows) => {
      for (const client of windows) client.postMessage(message);
    });
  // Each page's protocol version: a request that no open page can serve (each is another version of the app) is
  // answered at once, rather than after waiting for a port.
  const versions = new PageVersions(scope.clients);
  const worker = new EngineWorkerClient({
    requestPort: () => void requestPort(),
    hostless: () => versions.hostless(),
    ...(options.portWaitMs !== undefined && { portWaitMs: options.portWaitMs }),
  });
  // Each public ID's fallback chain is decided here, with the host page's profile, policy and device (which arrive with
  // its port): local candidates go to the engine worker; remote ones are forwarded with `fetch` from the service worker
  // itself, so an ID that only a server can serve on this device never touches the engine worker, and keeps answering
  // while no tab hosts one.
  const engine = createModelRouter({
    local: worker,
    routing: (signal) => worker.routing(signal),
    // Tell the pages when an ID starts being answered by another candidate (a server, when the device cannot serve it).
    onServed: (model, backend) => {
      tellWindows({ type: 'lantern:served', model, backend });
    },
  });
  const running = new Map<string, AbortController>();
  /**
   * Aborts that came before their request: a page's message and its fetch reach this worker by different ways, so a
   * request aborted at once (React's StrictMode aborts its first effect's request straight away) may be heard of
   * second. Its ID waits here, the last ABORTED_EARLY_KEPT of them, and the request is aborted when it arrives.
   */
  const abortedEarly = new Set<string>();
  /** A page's `lantern:abort`: the request it names stops, or, not heard of yet, is aborted when it arrives. */
  const abortRequest = (id: string) => {
    const request = running.get(id);
    if (request) return request.abort();
    abortedEarly.add(id);
    if (abortedEarly.size > ABORTED_EARLY_KEPT) abortedEarly.delete(abortedEarly.values().next().value!);
  };
  /**
   * The fetch events being answered. Work that a request starts and that outlasts its answer (a file's indexing, a
   * background response's run: the handler's `keepAlive`) would end when the browser next stops this worker, which it
   * does to an idle one within seconds (Chromium: 30): each such event is asked to wait for it (`waitUntil`, while its
   * answer is still pending, when the browser allows it), and the windows keep this worker awake while any is pending
   * (`outlasting`, see KEEP_AWAKE_MS), past the few minutes a browser grants one event.
   */
  const answering = new Set<FetchEventLike>();
  /** The work still running that outlasted the requests that started it. */
  const outlasting = new Set<Promise<void>>();
  const busy = () => answering.size > 0 || outlasting.size > 0;
  // A host page that goes without a word (its renderer crashed: no pagehide, no message, its ports silent) still
  // releases its locks: granted its lock, this worker knows the host is gone (see hostLock).
  const watched = new Set<string>();
  const watchHost = (host: string) => {
    const locks = (scope.navigator as WorkerNavigator | undefined)?.locks;
    if (!locks || watched.has(host)) return;
    watched.add(host);
    void locks.request(hostLock(host), () => {
      watched.delete(host);
      worker.disconnect(host);
    });
  };
  const ourVersion: ProtocolCheck = { type: 'lantern:protocol', protocol: PROTOCOL_VERSION };
  /** A page told its version: it hears this one's; requests waiting for a port learn whether any page can give one. */
  const told = (source: ExtendableMessageEvent['source'], protocol: number | undefined) => {
    if (source && 'id' in source) versions.note(source.id, protocol);
    source?.postMessage(ourVersion);
    void worker.recheck();
  };
  scope.addEventListener('message', (event) => {
    const port = event.ports[0];
    if (isPortOffer(event.data) && port) {
      const { protocol, host } = event.data;
      if (protocol === PROTOCOL_VERSION) {
        worker.connect(port, `${host}#${event.data.worker}`, event.data.routing);
        watchHost(host);
      } else {
        // A page of another version of the app: its engine worker may not speak this protocol. The page hears so (it
        // stops hosting, and tells its user to reload).
        port.close();
        told(event.source, protocol);
      }
    } else if (isProtocolCheck(event.data)) told(event.source, event.data.protocol);
    else if (isHostGone(event.data)) worker.disconnect(event.data.host);
    else if (isAbortRequest(event.data)) abortRequest(event.data.id);
    else if (isKeepAwake(event.data)) event.source?.postMessage({ type: 'lantern:busy', busy: busy() } satisfies Busy);
  });

  // WebRTC calls (`/v1/realtime/calls`) are answered by the page that made them: a service worker has no peer connection.
  const realtime = new PageAnswerer(scope.clients);
  const handler = createHandler({
    realtime,
    keys: new KeyRing({ storage: indexedDbKeyStorage() }),
    responses: indexedDbResponseStore(),
    conversations: indexedDbRecordStore('conversations'),
    chatCompletions: indexedDbRecordStore('chat_completions'),
    realtimeSecrets: indexedDbRecordStore('realtime_secrets', { limits: REALTIME_SECRET_LIMITS }),
    documents: indexedDbDocumentStorage(),
    ...options,
    keepAlive: (work) => {
      options.keepAlive?.(work);
      for (const event of answering) event.waitUntil?.(work);
      outlasting.add(work);
      void work.finally(() => outlasting.delete(work));
    },
    files: {
      ...options.files,
      // Every page hears how far indexing has got (the playground shows it; an app may too: LocalAPI's `indexing`).
      onProgress: (progress) => {
        options.files?.onProgress?.(progress);
        tellWindows({ type: 'lantern:indexing', ...progress });
      },
    },
    engine,
  });

  /**
   * Answers one request with a signal that fires when its page aborts it (a `lantern:abort` message) or goes away, so
   * that the engine stops generating for nobody. The watch ends when the answer starts: from then on, an abort or a
   * closed tab cancels a streamed body, which the handler hears by itself.
   */
  const answer = async (event: FetchEventLike): Promise<Response> => {
    const { request, clientId } = event;
    answering.add(event);
    // The first request in flight: the windows keep this worker awake until it has none (see KEEP_AWAKE_MS).
    if (answering.size === 1 && outlasting.size === 0) tellWindows({ type: 'lantern:busy', busy: true });
    const abort = new AbortController();
    const id = request.headers.get(REQUEST_ID_HEADER);
    if (id) running.set(id, abort);
    if (id && abortedEarly.delete(id)) abort.abort();
    const timer = clientId
      ? setInterval(async () => {
          if (!(await scope.clients.get(clientId))) abort.abort();
        }, CLIENT_CHECK_MS)
      : undefined;
    const done = () => {
      clearInterval(timer);
      if (id) running.delete(id);
      answering.delete(event);
    };
    try {
      const forHandler = new Request(request, { signal: abort.signal });
      realtime.noteClient(forHandler, clientId);
      return await handler(forHandler);
    } finally {
      done();
    }
  };

  scope.addEventListener('fetch', (event) => void routeFetch(event, answer, scope.location.origin));
  return handler;
}
