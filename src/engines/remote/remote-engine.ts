import type { EngineDescriptor, ReadsImages } from '../engine-descriptor.ts';

/*
 * An OpenAI-compatible server as routing and the page see it: its candidates and its descriptor. Light (the service
 * worker bundles it). The requests themselves are `remote-model.ts`'s, which the model router calls.
 */

/**
 * A model served by an OpenAI-compatible server (vLLM, Ollama, llama.cpp's server, the app's own backend): Lantern
 * forwards the request and streams the answer back, under the public ID. See `src/engines/remote/`.
 */
export interface RemoteCandidate extends ReadsImages {
  engine: 'remote';
  /**
   * The server's base URL, up to and including its `/v1` (`http://127.0.0.1:11434/v1`). In a browser, best a path of
   * the app's own backend (`/api/llm/v1`), which adds the server's key there: anything in a profile reaches the page.
   * A server on another origin must allow this one (CORS).
   */
  baseURL: string;
  /** The model's name on that server (never shown to clients: answers carry the public ID). */
  model: string;
  /** Sent as `Authorization: Bearer …`; never logged or echoed. For Node: in a browser every visitor can read it. */
  apiKey?: string;
  /** More request headers; their values are treated as secrets too. */
  headers?: Readonly<Record<string, string>>;
  /** Overrides of the timeouts, in milliseconds (see `REMOTE_DEFAULTS` in `src/engines/remote/`). */
  timeouts?: Readonly<Partial<RemoteTimeouts>>;
  /** How long a server that failed is left alone before it is tried again, in milliseconds. */
  coolDownMs?: number;
}

/** How long Lantern waits on a remote server, in milliseconds. */
export interface RemoteTimeouts {
  /**
   * Until a streamed answer's response headers: the server accepted the request (some send them only with the first
   * token, after loading a cold model).
   */
  connect: number;
  /** Until the first event of a streamed answer, or the whole answer of a JSON one (servers send it when done). */
  firstByte: number;
  /** Longest silence between two events of a stream. */
  idle: number;
}

/** A URL without its user, password, query and fragment (they can hold secrets), or a path without its query. */
export function redactURL(url: string): string {
  try {
    const { origin, pathname } = new URL(url);
    return origin + pathname.replace(/\/+$/, '');
  } catch {
    return url.replace(/[?#].*$/, '').replace(/\/+$/, ''); // a path of the app's own origin
  }
}

export const REMOTE_ENGINE: EngineDescriptor<RemoteCandidate, false> = Object.freeze({
  name: 'remote',
  title: 'remote',
  local: false,
  tasks: Object.freeze(['chat', 'embeddings', 'transcription', 'speech'] as const),
  runsOnGPU: () => false,
  needsShaderF16: () => false,
  limits: Object.freeze({}),
  key: (candidate: RemoteCandidate) => `${candidate.model}@${redactURL(candidate.baseURL)}`,
  // Numbered by the public view (`remote:1`, `remote:2`, …): neither where the server is nor its name for the model.
  publicName: () => undefined,
  // The public view finds every form of the server's URL itself (`urlForms`).
  locations: () => [],
  label: () => 'remote',
  usesHub: () => false,
  downloads: () => false,
  codeSource: () => undefined,
  // A server: whatever this device is, it can call it.
  whyNotRunnable: () => undefined,
  breaksRealm: () => false,
});

/**
 * What a remote candidate is configured with that must never be shown or logged: its `apiKey`, the values of its
 * `headers`, and what its `baseURL` carries besides a location: a user and password (`https://user:pass@host/v1`)
 * and the values of its query (`?api_key=…`).
 */
export function candidateSecrets(candidate: RemoteCandidate): string[] {
  const secrets = [candidate.apiKey ?? '', ...Object.values(candidate.headers ?? {})];
  try {
    const url = new URL(candidate.baseURL, 'http://path.invalid');
    // A user alone is a token (`https://TOKEN@host`); beside a password it is a name, left readable.
    if (url.password) secrets.push(url.password, decodeURIPart(url.password), `${url.username}:${url.password}`);
    else secrets.push(url.username, decodeURIPart(url.username));
    secrets.push(basicCredentials(candidate.baseURL) ?? '');
    url.searchParams.forEach((value) => secrets.push(value));
    if (url.search.length > 1) secrets.push(url.search.slice(1));
  } catch {
    // Not a URL: nothing in it to tell apart from its location.
  }
  return [...new Set(secrets.filter(Boolean))];
}

/** The user and password of a URL (`https://user:pass@host/v1`) as HTTP Basic credentials (base64), if it has them. */
export function basicCredentials(baseURL: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return undefined; // a path of the page's origin: no user in it
  }
  if (!url.username && !url.password) return undefined;
  const bytes = new TextEncoder().encode(`${decodeURIPart(url.username)}:${decodeURIPart(url.password)}`);
  return btoa(String.fromCharCode(...bytes));
}

function decodeURIPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
