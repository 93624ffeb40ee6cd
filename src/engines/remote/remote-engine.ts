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
  failureBreaksRealm: false,
  needsOnnxRuntime: false,
});
