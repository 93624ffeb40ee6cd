/// <reference lib="webworker" />
import { createHandler, type Handler, type HandlerOptions } from '../src/api/index.ts';
import { indexedDbKeyStorage, KeyRing } from '../src/keys/index.ts';
import { isHostGone, isPortOffer, PORT_REQUEST } from '../src/worker/protocol.ts';
import { RemoteEngine } from '../src/worker/remote-engine.ts';
import { routeFetch } from './route-fetch.ts';

export interface MountOptions extends Partial<Omit<HandlerOptions, 'engine'>> {
  /** How long a request waits for a host tab to hand over a port to the engine worker. */
  portWaitMs?: number;
}

/**
 * Mounts Lantern in a service worker: `/v1/*` on this origin is answered by the handler, with keys from the origin's
 * IndexedDB and models from the engine worker of whichever tab hosts it; every other request is left alone. Call it
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
  const engine = new RemoteEngine({
    requestPort: () => void requestPort(),
    ...(options.portWaitMs !== undefined && { portWaitMs: options.portWaitMs }),
  });
  scope.addEventListener('message', (event) => {
    const port = event.ports[0];
    if (isPortOffer(event.data) && port) engine.connect(port, `${event.data.host}#${event.data.generation}`);
    else if (isHostGone(event.data)) engine.disconnect(event.data.host);
  });

  const handler = createHandler({ keys: new KeyRing({ storage: indexedDbKeyStorage() }), ...options, engine });
  scope.addEventListener('fetch', (event) => void routeFetch(event, handler, scope.location.origin));
  return handler;
}
