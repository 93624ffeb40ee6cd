import { EngineError } from '../engine-interface/index.ts';
import { candidateKey, candidateSecrets, isRemote, redactURL, type ModelProfile } from './model-profile.ts';
import { lastPart } from '../engines/engine-descriptor.ts';
import { engineOf, engineOfKey } from '../engines/engine-registry.ts';
import { scrub } from '../engines/remote/upstream-errors.ts';

/**
 * What a key holder may learn of a profile's candidates, and the one place where what they are told is cleaned.
 *
 * Anyone with a key reads `/v1/models`, the `x-lantern-backend` header and every error message; in Node that is every
 * client of a server, who must not learn where the models live: a server's URL (let alone the user, password or query
 * key in it), a folder's absolute path. The page that configured the profile knows all of it and keeps seeing
 * `candidateKey`s (`LocalAPI.models()`, its `served` events, progress events); over `/v1` a candidate is called by
 * its public name instead:
 *
 * - a remote candidate: `remote:1`, `remote:2`, … in the order the profile first lists each server: that a server
 *   answers, and which of them, never where it is or its name for the model;
 * - a local one: its engine, model and variant, the model by what it is rather than where it lives (a hub ID as it
 *   is, a folder or URL by its last part): `transformers:tiny-chat@fp32/cpu`, `web-llm:SmolLM2-360M-Instruct-q4f16_1-MLC`.
 *
 * Messages are cleaned by text, because that is all that survives the engine worker's port: every candidate key, URL
 * and model path the profile holds becomes the candidate's public name, any URL's user and query go, every configured
 * secret becomes `[redacted]`, and (in the failures of local models, which come from file systems) any other absolute
 * path is cut to its last part. A server's own words are cleaned the same way, as a server may echo its URL.
 */
export class PublicView {
  /** `candidateKey` → public name. */
  readonly #names = new Map<string, string>();
  /** Text that says where a candidate lives, longest first (a URL before its origin), and what replaces it. */
  #locations: [string, string][] = [];
  readonly #secrets: string[] = [];
  /** A server's name for its model, quoted as servers quote it (`model 'qwen2.5-7b' not found`), and its public name. */
  readonly #serverModels: [RegExp, string][] = [];

  constructor(profile: ModelProfile) {
    let servers = 0;
    for (const entry of Object.values(profile)) {
      for (const candidate of entry.candidates) {
        const key = candidateKey(candidate);
        let name = this.#names.get(key);
        if (name === undefined) {
          // By its engine's descriptor; a server's (no public name) by its number instead.
          const own = engineOf(candidate).publicName(candidate);
          this.#names.set(key, (name = `${candidate.engine}:${own ?? ++servers}`));
        }
        this.#locations.push([key, name]);
        if (isRemote(candidate)) {
          for (const location of urlForms(candidate.baseURL)) this.#locations.push([location, name]);
          // Only quoted: a bare `chat` or `default` is a word of the message as often as a model's name.
          const quoted = new RegExp(`(['"\`])${candidate.model.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\1`, 'g');
          this.#serverModels.push([quoted, `$1${name}$1`]);
          this.#secrets.push(...candidateSecrets(candidate));
        } else {
          // A folder or URL the app keeps the model at, by its last part (`engineOf(…).locations`).
          for (const path of engineOf(candidate).locations(candidate)) this.#locations.push([path, lastPart(path)]);
        }
      }
    }
    // A server's origin or host shared by several candidates names none of them: it is only `remote` then.
    const named = new Map<string, string>();
    for (const [location, name] of this.#locations) {
      const before = named.get(location);
      named.set(location, before === undefined || before === name ? name : 'remote');
    }
    this.#locations = [...named].sort((a, b) => b[0].length - a[0].length);
  }

  /**
   * The public name of a candidate, by its `candidateKey`. A key the profile does not hold (a profile since changed)
   * is cleaned as text, and a server's is only `remote`: its URL is nobody's business either way.
   */
  name(key: string): string {
    const known = this.#names.get(key);
    if (known !== undefined) return known;
    const engine = engineOfKey(key);
    return engine && !engine.local ? engine.name : this.text(key, { paths: true });
  }

  /**
   * Text for a key holder: locations the profile knows become public names; any URL loses its user, password and
   * query; configured secrets become `[redacted]`; with `paths` (text from a local model's failure), any absolute
   * file path is cut to its last part.
   */
  text(text: string, options: { paths?: boolean } = {}): string {
    // URLs first lose their user and query, so that an echoed URL (`http://user:pass@host/v1/…?key=…`) is found
    // by its location and named.
    let out = withoutURLSecrets(text);
    for (const [location, name] of this.#locations) if (location.length >= 2) out = out.split(location).join(name);
    for (const [quoted, name] of this.#serverModels) out = out.replace(quoted, name);
    if (options.paths) out = withoutPaths(out);
    return scrub(out, this.#secrets);
  }

  /**
   * An engine error as a key holder may see it (its message, `param` and the candidate in `backend` cleaned), with
   * the error as it was for its `cause`: the operator's log (`onServerError`) keeps where it happened. That log gets
   * no secret either: the configured secrets and any URL's user and query are cleaned from the whole cause chain.
   */
  error(error: EngineError, options: { paths?: boolean } = {}): EngineError {
    // Named first: cleaning the chain in place may change the keys and URLs that are replaced by names here.
    const message = this.text(error.message, options);
    const param = error.param === undefined ? undefined : this.text(error.param);
    const backend = error.backend === undefined ? undefined : this.name(error.backend);
    this.#scrubChain(error, new Set());
    if (message === error.message && param === error.param && backend === error.backend) return error;
    return new EngineError(error.kind, message, {
      ...(param !== undefined && { param }),
      ...(error.retry !== undefined && { retry: error.retry }),
      ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }),
      ...(backend !== undefined && { backend }),
      headers: { ...error.headers },
      cause: error,
    });
  }

  /**
   * Cleans the secrets out of an error and its causes, in place, keeping locations: what the operator reads in a log.
   * In place, because the errors are the ones a log prints (their stack too), wherever a thrower put them.
   */
  #scrubChain(value: unknown, seen: Set<unknown>): void {
    if (typeof value !== 'object' || value === null || seen.has(value)) return;
    seen.add(value);
    if (Array.isArray(value)) return value.forEach((item) => this.#scrubChain(item, seen));
    if (!(value instanceof Error)) return;
    const clean = (text: string) => scrub(withoutURLSecrets(text), this.#secrets);
    try {
      if (clean(value.message) !== value.message) value.message = clean(value.message);
      if (value.stack !== undefined && clean(value.stack) !== value.stack) value.stack = clean(value.stack);
    } catch {
      // A frozen error: nothing to do but leave it.
    }
    this.#scrubChain(value.cause, seen);
    if (value instanceof AggregateError) this.#scrubChain(value.errors, seen);
  }
}

/** The public view of each profile, built once per profile object. */
const views = new WeakMap<ModelProfile, PublicView>();

export function publicView(profile: ModelProfile): PublicView {
  let view = views.get(profile);
  if (!view) views.set(profile, (view = new PublicView(profile)));
  return view;
}

/** Every way a message may spell a server's URL: as configured, without its secrets, resolved, its origin and host. */
function urlForms(baseURL: string): string[] {
  const forms = [baseURL, baseURL.replace(/\/+$/, ''), redactURL(baseURL)];
  try {
    const url = new URL(baseURL, globalThis.location?.href);
    forms.push(url.href, redactURL(url.href), url.origin, url.host);
    url.username = url.password = url.search = url.hash = '';
    forms.push(url.href);
  } catch {
    // A path, and no page to resolve it against: the forms above are all there are.
  }
  return [...new Set(forms.filter(Boolean))];
}

/** Any URL's user and password, and its query, which may carry a key (`?api_key=`). */
function withoutURLSecrets(text: string): string {
  return (
    text
      .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"`<>]*@/gi, '$1')
      // A query ends where the URL does; the punctuation that ends a sentence after it is the sentence's.
      .replace(
        /\b([a-z][a-z0-9+.-]*:\/\/[^\s?#'"`<>()]*)\?[^\s#'"`<>()]*?(?=[.,;:!]*(?:[\s#'"`<>()]|$))/gi,
        '$1?[redacted]',
      )
  );
}

/**
 * Absolute file paths (and `file:` URLs), cut to their last part. Only for what a local model's failure says: its
 * paths are the machine's folders, while a server's words may hold URL paths that are its API's.
 */
function withoutPaths(text: string): string {
  return text
    .replace(/\bfile:\/\/[^\s'"`<>]+/gi, (url) => lastPart(url))
    .replace(/(?<=^|[\s'"`(<[=,])(?:\/[^\s/'"`<>()]+){2,}\/?/g, (path) => lastPart(path))
    .replace(/\b[a-z]:\\(?:[^\s\\'"`<>]+\\)+[^\s\\'"`<>]*/gi, (path) => lastPart(path));
}
