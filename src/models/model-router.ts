import {
  EngineError,
  failureMeaning,
  modelNotFound,
  movesOnLocally,
  watchOutput,
  type CallOptions,
  type ChatMessage,
  type Engine,
  type OutputListeners,
  type ModelCard,
  type ModelTask,
  type ReasoningEffort,
  type RunsOn,
  type StoredState,
  type TaskRequest,
  thinksAt,
  withTaskMethods,
} from '../engine-interface/index.ts';
import { formatBytes, type StorageShortfall } from '../downloads/index.ts';
import { browserStore, isDownloadedModel, storedModel } from '../engines/model-files.ts';
import type { LocalEngine, LocalTarget } from '../engines/local-engine.ts';
import {
  candidateChain,
  candidateKey,
  isRemote,
  profileAliases,
  resolveModelName,
  usableCandidates,
  withoutFailures,
  type LocalCandidate,
  type ModelCandidate,
  type ModelEntry,
  type CandidateFailure,
  type RemoteCandidate,
  type RoutingConfig,
} from './model-profile.ts';
import { publicView, type PublicView } from './public-view.ts';
import { voiceNames } from '../engines/speech/voices.ts';
import { CircuitBreaker } from '../engines/remote/circuit-breaker.ts';
import { RemoteModel } from '../engines/remote/remote-model.ts';

export interface ModelRouterOptions {
  /**
   * What serves the local candidates of every chain: a local engine in Node, the engine worker (over a port) in a
   * service worker. It answers each call from the one candidate it names, once; the walk here decides what is next.
   */
  local: LocalEngine;
  /** The profile, its policy and what the device can run: asked for on each request (a service worker learns them). */
  routing: (signal?: AbortSignal) => RoutingConfig | Promise<RoutingConfig>;
  /**
   * Told when the candidate that answers an ID changes (the service worker tells its pages). `backend` is its
   * `candidateKey`: the page configured the profile and may know where its candidates live, unlike a key holder.
   */
  onServed?: (model: string, backend: string) => void;
  now?: () => number;
}

/** One link of a chain: a local candidate this device can run, or one remote server. */
type Link = { local: LocalTarget } | { remote: RemoteCandidate };

/**
 * How many times one call's chain is walked again after its engine went away under it (`engine_lost`): once per engine
 * replaced while it waited (a failed load, a closed host tab); after that, a lost engine is its candidate's failure.
 */
const MAX_ENGINE_LOSSES = 8;

/** What a link's call takes: the caller's options, and who to tell that a candidate has taken the call. */
type LinkOptions<O extends CallOptions> = Omit<O, 'onServe'> & {
  onBackend: (backend: string, runsOn?: RunsOn) => void;
};

/**
 * A public ID found for a task: its card, the links of its chain in the order they are tried, and what a key holder
 * may be told of them.
 */
interface Route {
  card: ModelCard;
  links: Link[];
  view: PublicView;
  /**
   * The effort of a request that names none (its `defaultReasoningEffort`): whether a model with a thinking mode
   * thinks, and how long its thought may run.
   */
  effort: ReasoningEffort | undefined;
  /** The local candidates left out for having failed to load here (see `failuresOf`), named when all fail. */
  skipped: CandidateFailure[];
  /** The local load failures this route's walk adds to (see `failuresOf`). */
  loadFailures: Map<string, CandidateFailure>;
  /** Where the local candidates loaded on this route's engine run, by `candidateKey` (see `runsOnOf`). */
  loaded: Map<string, RunsOn>;
}

/**
 * What this device has stored of each downloaded candidate of a chain, by public name (`complete`: it loads offline;
 * `partial`; `none`), where there is a store (a browser). Models the app serves itself and servers are not listed.
 */
async function storedStates(chain: ModelCandidate[], view: PublicView): Promise<Pick<ModelCard, 'stored'>> {
  const store = browserStore();
  if (!store) return {};
  const local = chain.filter((c): c is LocalCandidate => !isRemote(c) && isDownloadedModel(c));
  const states = await Promise.all(
    local.map(async (c) => [view.name(candidateKey(c)), (await storedModel(c, store)).state]),
  );
  return { stored: Object.fromEntries(states) as Record<string, StoredState> };
}

/**
 * The one routing layer: each call's public ID (or an alias of one: `gpt-4o-mini`) is looked up once in the profile (a
 * 404 listing the task's models when it is not there, or is a model of another task), and its fallback chain walked
 * across both kinds of candidate — the local ones this device can run (served by `local`, as one link) and remote
 * servers (forwarded with `fetch`) — in the order the profile's policy gives (`candidateChain`). A request's
 * constraint is not compiled here: this is the thread that answers every key (a service worker, or Node's event loop),
 * and a schema's compile is work of the request's own; the local engine compiles it, before any model loads.
 *
 * A request goes to the first link that can take it. It moves on to the next link when its link could not serve it
 * before producing any output: a local model that cannot load (or whose engine went away; one that loaded and then
 * failed hands over to the local candidates after it first), a server that cannot be
 * reached, does not answer in time or fails (5xx, refused credentials, an unknown model). A server that failed is
 * skipped for a cool-down (a circuit breaker per candidate), so a dead server costs one attempt, not one per request.
 * A client error (400), a rate limit (429) or an abort ends the request where it is, as does any failure after output
 * began (a stream cut mid-way ends in an error event). When every link failed, the error is the one that can heal
 * (a server to retry, with its cool-down as `retry-after`), and the message lists what each link said.
 *
 * `onServe` names the model (by its ID, whatever name the call used) and the candidate that serve each request, and
 * `models()` lists each ID (with its aliases), its chain and the candidate that answered it last: what the answers'
 * `model`, `system_fingerprint`, `x-lantern-backend` and `/v1/models` show. All of that, and every error that leaves
 * the router, goes to key holders: it names candidates by their public names and is cleaned of where they live and of
 * every secret (`PublicView`); only `onServed`, for the page, has `candidateKey`s.
 */
export function createModelRouter(options: ModelRouterOptions): Engine {
  const { local, routing, onServed } = options;
  const now = options.now ?? Date.now;
  // Per candidate, not per server: a wrong key or model name fails one candidate, not the others on its server. Keyed
  // by the candidate's whole configuration, so that a profile rebuilt (or sent again to a service worker) keeps them.
  const breakers = new Map<string, CircuitBreaker>();
  const servers = new Map<string, RemoteModel>();
  const lastServed = new Map<string, string>();
  /**
   * The local candidates that failed to load, per routing (a routing is one engine's: a host's port offer in a
   * service worker, the process's in Node): skipped by later walks, as a model that loaded is used again without
   * trying the candidates before it. The last local candidate of a chain is never skipped (`withoutFailures`), so
   * fixing what broke it heals the model. Failures that broke an engine (`RoutingConfig.failed`) are its host's to
   * remember across engines; this memory goes with its routing (a new engine, a restarted one, tries them again).
   */
  const failuresByRouting = new WeakMap<RoutingConfig, Map<string, CandidateFailure>>();
  const failuresOf = (config: RoutingConfig) => {
    let failures = failuresByRouting.get(config);
    if (!failures) failuresByRouting.set(config, (failures = new Map()));
    return failures;
  };
  /**
   * Where each local candidate that took a call on a routing's engine runs, as its engine reported it once loaded
   * (`onBackend`): `/v1/models`' `runsOn`. Per routing, as the failures are: a new engine has loaded nothing yet.
   */
  const loadedByRouting = new WeakMap<RoutingConfig, Map<string, RunsOn>>();
  const runsOnOf = (config: RoutingConfig) => {
    let loaded = loadedByRouting.get(config);
    if (!loaded) loadedByRouting.set(config, (loaded = new Map()));
    return loaded;
  };

  const breakerFor = (candidate: RemoteCandidate) => {
    const key = JSON.stringify(candidate);
    let breaker = breakers.get(key);
    if (!breaker) breakers.set(key, (breaker = new CircuitBreaker(candidate.coolDownMs, now)));
    return breaker;
  };
  const serverFor = (candidate: RemoteCandidate) => {
    const key = JSON.stringify(candidate);
    let server = servers.get(key);
    if (!server) servers.set(key, (server = new RemoteModel(candidate)));
    return server;
  };

  /** Every candidate of the chain, in the policy's order, without the local ones that failed to load here. */
  const linksOf = (id: string, entry: ModelEntry, config: RoutingConfig, failed: CandidateFailure[]): Link[] =>
    candidateChain(entry, config.device, config.policy, failed).map((candidate) =>
      isRemote(candidate) ? { remote: candidate } : { local: { id, task: entry.task, candidate } },
    );

  /**
   * The one lookup of a call's model, by its ID or an alias: the route's card names the ID, which answers name. A name
   * of a model of another task is not found, whichever name it goes by.
   */
  const lookup = async (name: string, task: ModelTask, signal: AbortSignal | undefined): Promise<Route> => {
    const config = await routing(signal);
    const id = resolveModelName(config.profile, name);
    const entry = id === undefined ? undefined : config.profile[id];
    if (id === undefined || entry?.task !== task) {
      const valid = Object.keys(config.profile).filter((k) => config.profile[k]!.task === task);
      throw modelNotFound(name, `Models for ${task}: ${valid.join(', ')}.`);
    }
    const loadFailures = failuresOf(config);
    const failed = [...(config.failed ?? []), ...loadFailures.values()];
    const links = linksOf(id, entry, config, failed);
    if (links.length === 0) {
      throw new EngineError('model_not_found', `The model \`${id}\` cannot run on this device.`, { param: 'model' });
    }
    const { failed: skipped } = withoutFailures(usableCandidates(entry, config.device), failed);
    const view = publicView(config.profile);
    const effort = entry.defaultReasoningEffort;
    const loaded = runsOnOf(config);
    return { card: { id, task, created: entry.created }, links, view, effort, skipped, loadFailures, loaded };
  };

  const served = (id: string, backend: string) => {
    if (lastServed.get(id) === backend) return;
    lastServed.set(id, backend);
    onServed?.(id, backend);
  };

  /**
   * Sends the call down the chain; see above for when it moves on. With `rewalk`, an engine lost under a local
   * candidate ends the walk with `engine_lost`, for `run` to walk the chain again on the next engine; without, it is
   * that candidate's failure.
   */
  async function walk<T, O extends CallOptions & OutputListeners>(
    route: Route,
    callerOptions: O,
    rewalk: boolean,
    call: (link: Link, options: LinkOptions<O>) => Promise<T>,
  ) {
    const { card, view } = route;
    const failures: { link: Link; error: EngineError }[] = [];
    for (let at = 0; at < route.links.length; at++) {
      const link = route.links[at]!;
      let breaker: CircuitBreaker | undefined;
      if ('remote' in link) {
        breaker = breakerFor(link.remote);
        if (!breaker.tryAcquire()) {
          failures.push({ link, error: coolingDown(view.name(candidateKey(link.remote)), breaker) });
          continue;
        }
      }
      let backend = 'local';
      const watched = watchOutput(callerOptions);
      const onBackend = (name: string, runsOn?: RunsOn) => {
        backend = name;
        if (runsOn) route.loaded.set(name, runsOn);
        callerOptions.onServe?.({ model: card, backend: view.name(name) });
      };
      try {
        const result = await call(link, { ...watched.options, onBackend });
        breaker?.succeeded();
        served(card.id, backend);
        return result;
      } catch (thrown) {
        // What leaves here reaches a key holder. A local model's own failure (not a request's fault, whose message may
        // hold a schema's JSON pointers) comes from the file system: its absolute paths are cut too.
        const raw = EngineError.from(thrown);
        const error = view.error(raw, { paths: !breaker && movesOnLocally(raw.kind) });
        const meaning = failureMeaning(error.kind);
        if (breaker) {
          if (meaning === 'server') breaker.failed();
          else if (error.kind === 'aborted') breaker.released();
          else breaker.succeeded(); // it answered: it is alive, whatever it said
        }
        const fallsOver = breaker ? meaning === 'server' : movesOnLocally(error.kind);
        if (watched.started() || !fallsOver) throw error;
        if (meaning === 'engine-lost' && rewalk) throw error;
        failures.push({ link, error });
        if ('local' in link && error.kind === 'load_failed') {
          const candidate = candidateKey(link.local.candidate);
          route.loadFailures.set(candidate, { candidate, reason: error.message });
        }
        // No engine to run local candidates on: the others would find none either; the servers may answer.
        if (meaning === 'engine-gone') {
          while (route.links[at + 1] && 'local' in route.links[at + 1]!) at += 1;
        }
      }
    }
    throw exhausted(route, failures);
  }

  return withTaskMethods({
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
        const servedBy = lastIsUp ? last : up[0] ? candidateKey(up[0]) : null;
        const view = publicView(config.profile);
        const loaded = runsOnOf(config);
        const runsOn = chain.flatMap((c) => {
          const on = loaded.get(candidateKey(c));
          return on ? [[view.name(candidateKey(c)), on] as const] : [];
        });
        const aliases = [...profileAliases(config.profile)].flatMap(([alias, of]) => (of === id ? [alias] : []));
        cards.push({
          id,
          task: entry.task,
          created: entry.created,
          ...(aliases.length > 0 && { aliases }),
          inputs:
            entry.task === 'transcription' ? ['audio'] : chain.some((c) => c.images) ? ['text', 'image'] : ['text'],
          ...(entry.task !== 'embeddings' && { outputs: entry.task === 'speech' ? ['audio'] : ['text'] }),
          ...(entry.task === 'speech' && { voices: chainVoices(chain) }),
          candidates: chain.map((c) => view.name(candidateKey(c))),
          servedBy: servedBy === null ? null : view.name(servedBy),
          ...(await storedStates(chain, view)),
          ...(runsOn.length > 0 && { runsOn: Object.fromEntries(runsOn) }),
        });
      }
      return cards;
    },

    async run(task, id, request, callerOptions = {}) {
      // Every task's options are its listeners' (embeddings have none): watched across walks, as the walk watches links.
      const watched = watchOutput(callerOptions as typeof callerOptions & OutputListeners);
      for (let losses = 0; ; losses++) {
        // Looked up again after each engine lost: the next engine's routing says what broke the last one.
        const found = await lookup(id, task, callerOptions.signal);
        const prepared = ROUTES[task].prepare?.(found, request) ?? { route: found, localRequest: request };
        const { route, localRequest } = prepared;
        try {
          return await walk(route, watched.options as typeof callerOptions, losses < MAX_ENGINE_LOSSES, (link, o) =>
            'remote' in link
              ? serverFor(link.remote).run(task, request, o)
              : local.run(task, link.local, localRequest, o),
          );
        } catch (error) {
          // The engine went away under the call before any output (its host tab closed, its worker was replaced):
          // the chain is walked again, on the next engine, as many times as the walk was told it may be (past that,
          // a chain whose last failure was a loss ends with it).
          const lost = error instanceof EngineError && error.kind === 'engine_lost';
          if (!lost || watched.started() || losses >= MAX_ENGINE_LOSSES) throw error;
        }
      }
    },
  });
}

/** What the router does for one task beyond looking its model up and walking the chain. */
interface TaskRoute<T extends ModelTask> {
  /**
   * The route as this request may take it (only the links that can serve it), and the request as the local
   * candidates get it (with what the model's profile entry decides). Absent: both as they are.
   */
  prepare?(route: Route, request: TaskRequest<T>): { route: Route; localRequest: TaskRequest<T> };
}

/** Each task's routing, where it differs from the walk every task takes. */
const ROUTES: { [T in ModelTask]: TaskRoute<T> } = {
  chat: {
    prepare(found, request) {
      const route = readingImages(found, request.messages);
      // A request that does not say whether to think gets the model's default on this device (a server has its own).
      const localRequest = {
        ...request,
        thinking: request.thinking ?? thinksAt(route.effort),
        ...((request.reasoningEffort ?? route.effort) !== undefined && {
          reasoningEffort: request.reasoningEffort ?? route.effort,
        }),
      };
      return { route, localRequest };
    },
  },
  embeddings: {},
  transcription: {},
  speech: {},
};

/** The voices a speech chain's candidates have (OpenAI's names, then each one's own), in the chain's order. */
function chainVoices(chain: readonly ModelCandidate[]): string[] {
  const tables = chain.flatMap((c) => ('speech' in c && c.speech ? [c.speech] : []));
  return [...new Set(tables.flatMap((table) => voiceNames({ ...table, voices: Object.keys(table.voices) })))];
}

/**
 * A chat route for a conversation with images: only the links whose candidates read images (the others would answer
 * as if there were none), and a 400 naming the first image when the ID has none here.
 */
function readingImages(route: Route, messages: ChatMessage[]): Route {
  const image = messages.find((m) => m.images?.length)?.images![0];
  if (!image) return route;
  const links = route.links.filter((link) => ('remote' in link ? link.remote.images : link.local.candidate.images));
  if (links.length === 0) {
    throw new EngineError(
      'invalid_request',
      `Invalid content type. image_url is only supported by certain models: \`${route.card.id}\` reads text only ` +
        'on this device. Send the text alone, or ask a model that reads images.',
      { param: image.param },
    );
  }
  return { ...route, links };
}

function coolingDown(backend: string, breaker: CircuitBreaker): EngineError {
  const wait = breaker.retryInMs();
  return new EngineError(
    'upstream_unavailable',
    `The model server (${backend}) failed recently and is left alone for ${Math.ceil(wait / 1000)} s more.`,
    { backend, retry: true, retryAfterMs: wait },
  );
}

/**
 * Every link failed: one error that names each failure. When every candidate was refused for storage, it says how much
 * the smallest needed and how much is free (503 `insufficient_storage`); when every one was passed over for its download,
 * the download's failure (503 `model_download_failed`). Otherwise the failure that can heal by itself (a server to
 * retry) if there is one, else the last: a chain of local candidates none of which loaded is `load_failed`, listing
 * why each failed.
 */
function exhausted(route: Route, failures: { link: Link; error: EngineError }[]): EngineError {
  const { card, view, skipped } = route;
  const id = card.id;
  const errors = failures.map((f) => f.error);
  const loads = failures.every(
    (f) => 'local' in f.link && (f.error.kind === 'load_failed' || failureMeaning(f.error.kind) === 'passed-over'),
  );
  /** Each failure as a key holder reads it: a local candidate's named (a server's names its server itself). */
  const said = failures.map((f) =>
    'local' in f.link ? `${view.name(candidateKey(f.link.local.candidate))}: ${f.error.message}` : f.error.message,
  );
  if (loads) {
    const reasons = [
      ...skipped.map((s) => `${view.name(s.candidate)}: ${view.text(s.reason, { paths: true })}`),
      ...said,
    ];
    const tried = `Tried ${reasons.join('; ')}`;
    if (errors.every((e) => e.kind === 'insufficient_storage')) {
      const smallest = errors
        .map((e) => e.cause)
        .filter(isShortfall)
        .sort((a, b) => a.needed - b.needed)[0];
      const message = smallest
        ? `Model \`${id}\` needs more storage than this site has: its smallest download needs about ` +
          `${formatBytes(smallest.needed)}, and ${formatBytes(smallest.free)} of the site's ` +
          `${formatBytes(smallest.quota)} quota is free. Free space (remove stored models: lantern.storage.remove) or ` +
          `use a smaller model. ${tried}`
        : `Model \`${id}\` needs more storage than this site has. ${tried}`;
      return new EngineError('insufficient_storage', message, { cause: errors });
    }
    const kind = errors.every((e) => failureMeaning(e.kind) === 'passed-over') ? 'download_failed' : 'load_failed';
    return new EngineError(kind, `Model \`${id}\` could not be loaded on this device. ${tried}`, { cause: errors });
  }
  if (errors.length === 1) return errors[0]!;
  const pick = errors.find((f) => f.retry === true) ?? errors.at(-1)!;
  return new EngineError(pick.kind, `No candidate could serve \`${id}\`: ${said.join(' ')}`, {
    ...(pick.retry !== undefined && { retry: pick.retry }),
    ...(pick.retryAfterMs !== undefined && { retryAfterMs: pick.retryAfterMs }),
    ...(pick.backend !== undefined && { backend: pick.backend }),
    headers: { ...pick.headers },
    cause: errors,
  });
}

const isShortfall = (cause: unknown): cause is StorageShortfall =>
  typeof cause === 'object' && cause !== null && 'needed' in cause && 'free' in cause;
