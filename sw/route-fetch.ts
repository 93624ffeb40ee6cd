import type { Handler } from '../src/api/index.ts';

/** The part of a service worker's FetchEvent that Lantern uses, so tests can hand-make one. */
export interface FetchEventLike {
  readonly request: Request;
  respondWith(response: Response | Promise<Response>): void;
}

/**
 * Answers a fetch event with the /v1 handler when it is a request to `/v1/…` on the worker's own origin, and leaves
 * every other request alone (no `respondWith`, so the browser fetches it as usual). A /v1 URL the API does not know
 * still goes to the handler, which answers it with an OpenAI-shaped 404 rather than a network fetch.
 *
 * @returns whether the event was answered.
 * @example
 * self.addEventListener('fetch', (event) => routeFetch(event, handler, self.location.origin));
 */
export function routeFetch(event: FetchEventLike, handler: Handler, origin: string): boolean {
  const url = new URL(event.request.url);
  if (url.origin !== origin || !(url.pathname === '/v1' || url.pathname.startsWith('/v1/'))) return false;
  event.respondWith(handler(event.request));
  return true;
}
