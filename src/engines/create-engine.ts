import {
  EngineError,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type EngineErrorKind,
  type LoadProgress,
  type ModelCard,
  type ModelTask,
} from '../engine/index.ts';
import { fallbackChain } from './fallback-chain.ts';
import { checkConstraint } from './generation/output-constraint.ts';
import { DEFAULT_LOADERS, type ChatModel, type EmbeddingModel, type ModelLoaders } from './model-loaders.ts';
import {
  candidateKey,
  CPU_ONLY,
  modelChain,
  usableCandidates,
  type CandidateFailure,
  type DeviceCapabilities,
  type LocalCandidate,
  type ModelEntry,
  type ModelProfile,
  type RoutingPolicy,
} from './model-profile.ts';
import { TaskQueue } from './task-queue.ts';

export interface EngineOptions {
  /** Public model IDs and what each runs: `DEFAULT_PROFILE`, `bundledProfile(...)`, or the app's own. */
  profile: ModelProfile;
  /** What the device offers (default: the CPU only, as in Node). Decides which candidates are tried. */
  device?: DeviceCapabilities;
  /** Model download and load progress. */
  onProgress?: (progress: LoadProgress) => void;
  /** How candidates are loaded (default: transformers.js and web-llm). */
  loaders?: ModelLoaders;
  /** Where IDs whose chains have remote candidates are served first (default `local-first`). */
  policy?: RoutingPolicy;
  /** Candidates that already failed to load on this page, in an earlier engine worker: skipped (see `modelChain`). */
  failed?: readonly CandidateFailure[];
  /**
   * Set where one failed load breaks every later load in the same realm (transformers.js in a browser creates every
   * session on one promise chain, which stays rejected): after the first failure the engine loads nothing more in
   * it, and calls `replaceRealm` once. When later candidates remain, it names the failed one, to be skipped in the
   * fresh realm, and the calls that needed the model are left unanswered, for their caller to send again there. When
   * the failed candidate was the last of its chain, those calls are answered with the error first.
   */
  replaceRealm?: (reason: string, failed?: CandidateFailure) => void;
}

type LoadedModel = ChatModel | EmbeddingModel;

/**
 * The engine for a model profile. Each public ID is resolved on first use to the first of its candidates that this
 * device can run and that loads: a candidate that fails to load (unsupported, missing, too big for the storage quota)
 * hands over to the next, in this realm or, with `replaceRealm`, in a fresh one. A model is loaded once, however many
 * IDs share it; models run one request at a time; and an ID that failed to load is tried again on its next request,
 * so fixing the cause heals the engine without a restart.
 *
 * @example
 * const engine = createEngine({ profile: bundledProfile('/abs/path/public/models') });
 * await engine.chat('crimson-falcon-4', request);
 */
export function createEngine(options: EngineOptions): Engine {
  const { profile, onProgress } = options;
  const device = options.device ?? CPU_ONLY;
  const loaders = options.loaders ?? DEFAULT_LOADERS;
  const byId = new Map<string, Promise<LoadedModel>>();
  const byCandidate = new Map<string, Promise<LoadedModel>>();
  /** The candidate key of each loaded model, for `onBackend`. */
  const keys = new WeakMap<LoadedModel, string>();
  const queue = new TaskQueue();

  const entryFor = (id: string, task: ModelTask): ModelEntry => {
    const entry = profile[id];
    if (entry && entry.task === task && usableCandidates(entry, device).length > 0) return entry;
    const valid = Object.keys(profile).filter((k) => profile[k]!.task === task);
    throw new EngineError(
      'model_not_found',
      entry?.task === task
        ? `The model \`${id}\` cannot run on this device.`
        : `The model \`${id}\` does not exist. Models for ${task}: ${valid.join(', ')}.`,
      { param: 'model' },
    );
  };

  /** Set once a load failed in a realm that `replaceRealm` must replace: nothing more is loaded in it. */
  let realmBroken = false;
  /** What a call gets in a broken realm: no answer; its caller sends it again to the next realm. */
  const stalled = () => new Promise<never>(() => {});

  const loadCandidate = (id: string, task: ModelTask, candidate: LocalCandidate): Promise<LoadedModel> => {
    if (realmBroken) return stalled();
    const key = candidateKey(candidate);
    let loading = byCandidate.get(key);
    if (!loading) {
      const context = { id, onProgress };
      loading = task === 'chat' ? loaders.chat(candidate, context) : loaders.embeddings(candidate, context);
      byCandidate.set(key, loading);
      loading.catch(() => byCandidate.delete(key));
    }
    return loading;
  };

  const resolve = (id: string, entry: ModelEntry): Promise<LoadedModel> => {
    let loading = byId.get(id);
    if (!loading) {
      loading = (async () => {
        const chain = modelChain(entry, device, options.failed);
        const failures: EngineError[] = [];
        const tried = chain.failed.map((f) => `${f.candidate}: ${f.reason}`);
        for (const [index, candidate] of chain.candidates.entries()) {
          const key = candidateKey(candidate);
          try {
            const model = await loadCandidate(id, entry.task, candidate);
            keys.set(model, key);
            onProgress?.({ status: 'ready', model: id, resolved: key });
            return model;
          } catch (error) {
            // A failure after the realm broke may be the break's doing, not the candidate's: say nothing of it.
            if (realmBroken) return stalled();
            const failure = EngineError.from(error, 'load_failed');
            onProgress?.({ status: 'failed', model: id, candidate: key, reason: failure.message });
            failures.push(failure);
            tried.push(`${key}: ${failure.message}`);
            if (options.replaceRealm) {
              realmBroken = true;
              if (index < chain.candidates.length - 1) {
                const reason = `${key} failed to load (${failure.message}); \`${id}\` tries its next candidate in a fresh realm.`;
                options.replaceRealm(reason, { candidate: key, reason: failure.message });
                return stalled();
              }
            }
          }
        }
        const kind: EngineErrorKind = failures.every((f) => f.kind === 'insufficient_storage')
          ? 'insufficient_storage'
          : 'load_failed';
        const error = new EngineError(
          kind,
          `Model \`${id}\` could not be loaded on this device. Tried ${tried.join('; ')}`,
          { cause: failures },
        );
        // Once this answer is on its way: the realm is replaced at once.
        if (options.replaceRealm) setTimeout(() => options.replaceRealm!(error.message), 0);
        throw error;
      })();
      byId.set(id, loading);
      loading.catch(() => byId.delete(id));
    }
    return loading;
  };

  // Every local candidate of the profile; the fallback chain adds the remote ones.
  const local: Engine = {
    async models(): Promise<ModelCard[]> {
      return Object.entries(profile)
        .filter(([, entry]) => usableCandidates(entry, device).length > 0)
        .map(([id, entry]) => ({ id, task: entry.task, created: entry.created }));
    },

    async chat(id: string, request: ChatRequest, chatOptions: ChatOptions = {}): Promise<ChatResult> {
      // A constraint the engines would not enforce is refused before any model loads.
      if (request.constraint) checkConstraint(request.constraint);
      const model = (await resolve(id, entryFor(id, 'chat'))) as ChatModel;
      chatOptions.onBackend?.(keys.get(model)!);
      return queue.run(() => model.generate(request, chatOptions), chatOptions.signal);
    },

    async embed(id: string, request: EmbedRequest, embedOptions: EmbedOptions = {}): Promise<EmbedResult> {
      const model = (await resolve(id, entryFor(id, 'embeddings'))) as EmbeddingModel;
      embedOptions.onBackend?.(keys.get(model)!);
      return queue.run(() => model.embed(request.input, embedOptions), embedOptions.signal);
    },
  };
  return fallbackChain({ local, routing: () => ({ profile, device, policy: options.policy ?? 'local-first' }) });
}
