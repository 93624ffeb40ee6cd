import type { Engine } from '../engine/index.ts';
import { fallbackChain } from '../engines/fallback-chain.ts';
import type { RemoteEngine } from './remote-engine.ts';

/**
 * The engine of a service worker: each public ID's fallback chain, decided here with the host page's profile, policy
 * and device (which arrive with its port). Local candidates go to the engine worker over `local`; remote ones are
 * forwarded with `fetch` from the service worker itself, so an ID that only a server can serve on this device never
 * touches the engine worker, and keeps answering while no tab hosts one.
 *
 * @param onServed - told when the candidate that answers an ID changes.
 */
export function serviceWorkerEngine(local: RemoteEngine, onServed?: (model: string, backend: string) => void): Engine {
  return fallbackChain({ local, routing: (signal) => local.routing(signal), ...(onServed && { onServed }) });
}
