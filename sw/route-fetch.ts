/** The part of a service worker's FetchEvent that Lantern uses, so tests can hand-make one. */
export interface FetchEventLike {
  readonly request: Request;
  /** The page that sent the request ('' for navigations). */
  readonly clientId: string;
  respondWith(response: Response | Promise<Response>): void;
  /** Keeps the worker alive for work that outlasts the answer (indexing a vector store's files). */
  waitUntil?(work: Promise<unknown>): void;
}

/** Whether a request is for Lantern: `/v1` or below it, on the worker's own origin. */
export function isLanternRequest(request: Request, origin: string): boolean {
  const url = new URL(request.url);
  return url.origin === origin && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'));
}

/**
 * Answers a fetch event with `answer` when it is a request to `/v1/…` on the worker's own origin, and leaves every
 * other request alone (no `respondWith`, so the browser fetches it as usual). A /v1 URL the API does not know still
 * goes to Lantern, which answers it with an OpenAI-shaped 404 rather than a network fetch.
 *
 * @returns whether the event was answered.
 * @example
 * self.addEventListener('fetch', (event) => routeFetch(event, (e) => handler(e.request), self.location.origin));
 */
export function routeFetch(
  event: FetchEventLike,
  answer: (event: FetchEventLike) => Promise<Response>,
  origin: string,
): boolean {
  if (!isLanternRequest(event.request, origin)) return false;
  event.respondWith(answer(event));
  return true;
}
