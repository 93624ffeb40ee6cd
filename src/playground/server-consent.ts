import type { RoutingPolicy } from '../client/index.ts';

/**
 * Whether the playground may send chats to a server. The page's URL can name one (`?remote=<baseURL>`, as the models
 * tab sets it), but a URL is anyone's to write: a crafted link would send a visitor's conversations to any server. So
 * a server named by the URL is used only once the person has said yes: in the prompt the page shows (with the
 * server's origin), or by setting it themselves in the models tab. A yes holds for the one page load it was given for,
 * or, when they ask to remember the server, for every later load in this browser (localStorage).
 */

/** A server the page's URL names for the chat models' chains. */
export interface ServerChoice {
  /** Absolute: what the chains get and what consent is keyed by (a path such as `/api/llm/v1` is on this origin). */
  baseURL: string;
  /** Where the chats would go: the URL's origin, which is what a person judges. */
  origin: string;
  /** The base URL to show: without any credentials it carries. */
  shown: string;
  /** The model's name on the server. */
  model: string;
  policy: RoutingPolicy;
}

const POLICIES: readonly RoutingPolicy[] = ['local-first', 'remote-first', 'local-only'];

/** localStorage: the base URLs a person asked to remember, as a JSON array. */
export const REMEMBERED_SERVERS = 'lantern-playground:servers';
/** sessionStorage: the base URL allowed for the next load of this tab only (the reload a yes or the models tab makes). */
export const ALLOWED_ONCE = 'lantern-playground:server-allowed-once';

/** The storages consent lives in: the page's own, or others in tests. */
export interface ConsentStores {
  remembered: Storage;
  once: Storage;
}

const pageStores = (): ConsentStores => ({ remembered: localStorage, once: sessionStorage });

/**
 * The server named by `?remote=` (with `remoteModel` and `policy`), resolved against the page's URL; undefined when
 * none is named or it is not an http(s) URL.
 */
export function serverFromParams(params: URLSearchParams, page: string): ServerChoice | undefined {
  const remote = params.get('remote')?.trim();
  if (!remote) return undefined;
  const url = parseServer(remote, page);
  if (!url) return undefined;
  const policy = params.get('policy') as RoutingPolicy | null;
  return {
    baseURL: url.href,
    origin: url.origin,
    shown: shownURL(url),
    model: params.get('remoteModel') ?? '',
    policy: policy && POLICIES.includes(policy) ? policy : 'local-first',
  };
}

/** An http(s) URL from what a person or a link gave, resolved against the page; undefined for anything else. */
export function parseServer(value: string, page: string): URL | undefined {
  try {
    const url = new URL(value, page);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** A URL as the page shows it: never with the user name or password it may carry. */
export function shownURL(url: URL): string {
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

/** The base URLs remembered in this browser. */
export function rememberedServers(stores = pageStores()): string[] {
  try {
    const list: unknown = JSON.parse(stores.remembered.getItem(REMEMBERED_SERVERS) ?? '[]');
    return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : [];
  } catch {
    return []; // unreadable or refused storage: nothing is remembered, so the person is asked
  }
}

export function rememberServer(baseURL: string, stores = pageStores()): void {
  const list = rememberedServers(stores);
  if (!list.includes(baseURL)) stores.remembered.setItem(REMEMBERED_SERVERS, JSON.stringify([...list, baseURL]));
}

export function forgetServer(baseURL: string, stores = pageStores()): void {
  const list = rememberedServers(stores).filter((item) => item !== baseURL);
  stores.remembered.setItem(REMEMBERED_SERVERS, JSON.stringify(list));
}

/** Lets the next page load of this tab use `baseURL` without asking: a yes, and the reload that applies it. */
export function allowOnce(baseURL: string, stores = pageStores()): void {
  stores.once.setItem(ALLOWED_ONCE, baseURL);
}

/**
 * Whether this page load may send chats to `baseURL`: remembered, or allowed once for this load. A one-time yes is
 * used up here, whatever the server, so the load after this one asks again.
 */
export function takeConsent(baseURL: string, stores = pageStores()): boolean {
  let once: string | null = null;
  try {
    once = stores.once.getItem(ALLOWED_ONCE);
    stores.once.removeItem(ALLOWED_ONCE);
  } catch {
    // refused storage: no one-time yes
  }
  return once === baseURL || rememberedServers(stores).includes(baseURL);
}
