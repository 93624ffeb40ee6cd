import {
  EngineError,
  type ChatOptions,
  type EmbedOptions,
  type Engine,
  type EngineErrorKind,
  type ModelCard,
  type ModelTask,
} from '../engine/index.ts';
import {
  candidateChain,
  candidateKey,
  isRemote,
  type ModelEntry,
  type RemoteCandidate,
  type RoutingConfig,
} from './model-profile.ts';
import { CircuitBreaker } from './remote/circuit-breaker.ts';
import { RemoteModel } from './remote/remote-model.ts';

export interface FallbackChainOptions {
  /**
   * What serves the local candidates of every chain: `createEngine`'s own loaders in Node, the engine worker (over a
   * port) in a service worker. It walks them itself, in order, so here they are one link.
   */
  local: Engine;
  /** The profile, its policy and what the device can run: asked for on each request (a service worker learns them). */
  routing: (signal?: AbortSignal) => RoutingConfig | Promise<RoutingConfig>;
  /** Told when the candidate that answers an ID changes (the service worker tells its pages). */
  onServed?: (model: string, backend: string) => void;
  now?: () => number;
}

/** One link of a chain: every local candidate this device can run (as one), or one remote server. */
type Link = { local: true } | { local: false; candidate: RemoteCandidate };

/** Failures of a local link after which a remote one may still answer: the device could not serve it. */
const LOCAL_FALLS_OVER: ReadonlySet<EngineErrorKind> = new Set([
  'load_failed',
  'insufficient_storage',
  'unavailable',
  'internal',
]);

/** Failures of a remote link that count against its server and hand the request to the next link. */
const SERVER_FAILED: ReadonlySet<EngineErrorKind> = new Set(['upstream_error', 'upstream_unavailable']);

/**
 * The fallback chain of each public ID across both kinds of candidate: the local ones this device can run (served by
 * `local`) and remote servers (forwarded with `fetch`), in the order the profile's policy gives (`candidateChain`).
 *
 * A request goes to the first link that can take it. It moves on to the next link when its link could not serve it
 * before producing any output: a local model that cannot load (or whose engine went away), a server that cannot be
 * reached, does not answer in time or fails (5xx, refused credentials, an unknown model). A server that failed is
 * skipped for a cool-down (a circuit breaker per candidate), so a dead server costs one attempt, not one per request.
 * A client error (400), a rate limit (429) or an abort ends the request where it is, as does any failure after output
 * began (a stream cut mid-way ends in an error event). When every link failed, the error is the one that can heal
 * (a server to retry, with its cool-down as `retry-after`), and the message lists what each link said.
 *
 * `onBackend` names the candidate that serves each request, and `models()` lists each ID's chain and the candidate
 * that answered it last: what `x-lantern-backend` and `/v1/models` show.
 */
export function fallbackChain(options: FallbackChainOptions): Engine {
  const { local, routing, onServed } = options;
  const now = options.now ?? Date.now;
  // Per candidate, not per server: a wrong key or model name fails one candidate, not the others on its server. Keyed
  // by the candidate's whole configuration, so that a profile rebuilt (or sent again to a service worker) keeps them.
  const breakers = new Map<string, CircuitBreaker>();
  const models = new Map<string, RemoteModel>();
  const lastServed = new Map<string, string>();

  const breakerFor = (candidate: RemoteCandidate) => {
    const key = JSON.stringify(candidate);
    let breaker = breakers.get(key);
    if (!breaker) breakers.set(key, (breaker = new CircuitBreaker(candidate.coolDownMs, now)));
    return breaker;
  };
  const modelFor = (candidate: RemoteCandidate) => {
    const key = JSON.stringify(candidate);
    let model = models.get(key);
    if (!model) models.set(key, (model = new RemoteModel(candidate)));
    return model;
  };

  const linksOf = (entry: ModelEntry, config: RoutingConfig): Link[] => {
    const links: Link[] = [];
    for (const candidate of candidateChain(entry, config.device, config.policy)) {
      if (isRemote(candidate)) links.push({ local: false, candidate });
      else if (!links.some((link) => link.local)) links.push({ local: true });
    }
    return links;
  };

  const plan = async (id: string, task: ModelTask, signal: AbortSignal | undefined) => {
    const config = await routing(signal);
    const entry = config.profile[id];
    const links = entry?.task === task ? linksOf(entry, config) : [];
    if (links.length > 0) return links;
    const valid = Object.keys(config.profile).filter((k) => config.profile[k]!.task === task);
    throw new EngineError(
      'model_not_found',
      entry?.task === task
        ? `The model \`${id}\` cannot run on this device.`
        : `The model \`${id}\` does not exist. Models for ${task}: ${valid.join(', ')}.`,
      { param: 'model' },
    );
  };

  const served = (id: string, backend: string) => {
    if (lastServed.get(id) === backend) return;
    lastServed.set(id, backend);
    onServed?.(id, backend);
  };

  /** Sends the call down the chain; see above for when it moves on. */
  async function walk<T, O extends ChatOptions | EmbedOptions>(
    id: string,
    links: Link[],
    callerOptions: O,
    call: (link: Link, options: O) => Promise<T>,
  ): Promise<T> {
    const failures: EngineError[] = [];
    for (const link of links) {
      const breaker = link.local ? undefined : breakerFor(link.candidate);
      if (!link.local && !breaker!.tryAcquire()) {
        failures.push(coolingDown(candidateKey(link.candidate), breaker!));
        continue;
      }
      let output = false;
      let backend = link.local ? 'local' : candidateKey(link.candidate);
      const options: O = {
        ...callerOptions,
        onBackend: (name: string) => {
          backend = name;
          callerOptions.onBackend?.(name);
        },
      };
      const chat = callerOptions as ChatOptions;
      if (chat.onEvent) {
        (options as ChatOptions).onEvent = (event) => {
          output = true;
          chat.onEvent!(event);
        };
      }
      if (chat.onWire) {
        (options as ChatOptions).onWire = (chunk) => {
          output = true;
          chat.onWire!(chunk);
        };
      }
      try {
        const result = await call(link, options);
        breaker?.succeeded();
        served(id, backend);
        return result;
      } catch (thrown) {
        const error = EngineError.from(thrown);
        if (breaker) {
          if (SERVER_FAILED.has(error.kind)) breaker.failed();
          else if (error.kind === 'aborted') breaker.released();
          else breaker.succeeded(); // it answered: it is alive, whatever it said
        }
        const fallsOver = link.local ? LOCAL_FALLS_OVER.has(error.kind) : SERVER_FAILED.has(error.kind);
        if (output || !fallsOver) throw error;
        failures.push(error);
      }
    }
    throw exhausted(id, failures);
  }

  return {
    async models(): Promise<ModelCard[]> {
      const config = await routing();
      const cards: ModelCard[] = [];
      for (const [id, entry] of Object.entries(config.profile)) {
        const chain = candidateChain(entry, config.device, config.policy);
        if (chain.length === 0) continue;
        const up = chain.filter((c) => !isRemote(c) || breakerFor(c).available);
        const last = lastServed.get(id);
        // The one that answered last, unless it is a server now cooling down; before any request, the first in line.
        const lastIsUp =
          last !== undefined && !chain.some((c) => isRemote(c) && candidateKey(c) === last && !up.includes(c));
        cards.push({
          id,
          task: entry.task,
          created: entry.created,
          candidates: chain.map(candidateKey),
          servedBy: lastIsUp ? last : up[0] ? candidateKey(up[0]) : null,
        });
      }
      return cards;
    },

    async chat(id, request, chatOptions = {}) {
      const links = await plan(id, 'chat', chatOptions.signal);
      return walk(id, links, chatOptions, (link, o) =>
        link.local ? local.chat(id, request, o) : modelFor(link.candidate).chat(request, o),
      );
    },

    async embed(id, request, embedOptions = {}) {
      const links = await plan(id, 'embeddings', embedOptions.signal);
      return walk(id, links, embedOptions, (link, o) =>
        link.local ? local.embed(id, request, o) : modelFor(link.candidate).embed(request, o),
      );
    },
  };
}

function coolingDown(backend: string, breaker: CircuitBreaker): EngineError {
  const wait = breaker.retryInMs();
  return new EngineError(
    'upstream_unavailable',
    `The model server (${backend}) failed recently and is left alone for ${Math.ceil(wait / 1000)} s more.`,
    { backend, retry: true, retryAfterMs: wait },
  );
}

/** Every link failed: the error that can heal by itself (a server to retry) if there is one, naming every failure. */
function exhausted(id: string, failures: EngineError[]): EngineError {
  if (failures.length === 1) return failures[0]!;
  const pick = failures.find((f) => f.retry === true) ?? failures.at(-1)!;
  return new EngineError(pick.kind, `No candidate could serve \`${id}\`: ${failures.map((f) => f.message).join(' ')}`, {
    ...(pick.retry !== undefined && { retry: pick.retry }),
    ...(pick.retryAfterMs !== undefined && { retryAfterMs: pick.retryAfterMs }),
    ...(pick.backend !== undefined && { backend: pick.backend }),
    headers: { ...pick.headers },
    cause: failures,
  });
}
