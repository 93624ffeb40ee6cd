import {
  EngineError,
  failureMeaning,
  type EngineErrorKind,
  type LoadProgress,
  type ModelTask,
  type TaskEvent,
  type TaskRequest,
  type TaskResult,
} from '../engine-interface/index.ts';
import { decodeAudioFile, type DecodeAudio } from '../inputs/audio-input.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import { checkConstraint } from '../grammar/constraint-check.ts';
import { formatBytes, type StorageShortfall } from '../downloads/index.ts';
import { DEFAULT_LOADERS, type ModelLoaders, type TaskModel } from './model-loaders.ts';
import { candidateKey, withoutFailures, type CandidateFailure, type LocalCandidate } from '../models/model-profile.ts';
import { engineOf } from './engine-registry.ts';
import { refuseUnfittableInput, refuseUnfittablePrompt } from './prompt-budget.ts';
import { TaskQueue } from './task-queue.ts';

/**
 * What a local call runs on: the public ID that asked (progress is reported under it) and the local candidates of its
 * fallback chain that this device can run, in the order the router tries them.
 */
export interface LocalTarget {
  id: string;
  task: ModelTask;
  candidates: LocalCandidate[];
}

export interface LocalCallOptions {
  signal?: AbortSignal | undefined;
  /** Told which candidate serves the call (its `candidateKey`), once it is loaded and before any output. */
  onBackend?: ((backend: string) => void) | undefined;
}

/** What a local run of `task` takes: the call's options, and a listener for each event of the task as it happens. */
export interface LocalRunOptions<T extends ModelTask> extends LocalCallOptions {
  onEvent?: ((event: TaskEvent<T>) => void) | undefined;
}

/**
 * The models that run on this device, behind no routing: a call names its task and its target, and the engine serves
 * it from the first of the target's candidates that loads. What the engine worker exposes to the service worker's
 * router.
 */
export interface LocalEngine {
  run<T extends ModelTask>(
    task: T,
    target: LocalTarget,
    request: TaskRequest<T>,
    options?: LocalRunOptions<T>,
  ): Promise<TaskResult<T>>;
}

export interface LocalEngineOptions {
  /** Model download and load progress. */
  onProgress?: ((progress: LoadProgress) => void) | undefined;
  /** How candidates are loaded (default: transformers.js and web-llm). */
  loaders?: ModelLoaders | undefined;
  /** Candidates that already failed to load on this page, in an earlier engine worker: skipped (`withoutFailures`). */
  failed?: readonly CandidateFailure[] | undefined;
  /**
   * Set where one failed load breaks every later load in the same realm (transformers.js in a browser creates every
   * session on one promise chain, which stays rejected): after the first failure of a candidate whose engine says so
   * (its descriptor's `failureBreaksRealm`) the engine loads nothing more in it, and calls `replaceRealm` once. When later candidates remain, it names the failed one, to be skipped in the
   * fresh realm, and the calls that needed the model are left unanswered, for their caller to send again there. When
   * the failed candidate was the last of its chain, those calls are answered with the error first.
   */
  replaceRealm?: ((reason: string, failed?: CandidateFailure) => void) | undefined;
  /**
   * Decodes audio that is not WAV (mp3, ogg, webm, m4a) to mono samples at a rate: in a browser, the page's audio
   * decoder (workers have none). Absent (Node): WAV only.
   */
  decodeAudio?: DecodeAudio | undefined;
  /**
   * How a request's images are fetched and decoded here: a browser's engine worker fetches as the page would
   * (`fetchAsPage`: its origin, CORS); Node's entry points give `nodeImageAccess()`: only allowed hosts at public
   * addresses, and sharp told the pixel limit (issue 41). Absent: no image URL is fetched (data URLs only), and images
   * are decoded by transformers.js' RawImage.
   */
  imageAccess?: ImageAccess | undefined;
}

type LoadedModel = TaskModel<ModelTask>;

/** What of the engine's realm a run may use: its queue, and how it fetches images and decodes audio. */
interface Realm {
  queue: TaskQueue;
  imageAccess: ImageAccess | undefined;
  decodeAudio: DecodeAudio | undefined;
}

/** How the local engine serves one task, once its model is loaded. */
interface Serve<T extends ModelTask> {
  /** Refuses what no model would do, before any model loads (and before any waits for one). */
  check?(request: TaskRequest<T>): void;
  /** Runs the loaded model, told which candidate it is (`onBackend`) already. */
  serve(
    model: TaskModel<T>,
    request: TaskRequest<T>,
    options: LocalRunOptions<T>,
    realm: Realm,
  ): Promise<TaskResult<T>>;
}

/** Each task's serving: what it refuses before the model loads, and how its model runs. */
const SERVE: { [T in ModelTask]: Serve<T> } = {
  chat: {
    // A constraint no grammar would enforce is refused before any model loads. Compiled here, in the engine's realm
    // (the engine worker, Node's engine thread), not on the thread that answers every key: a compile is bounded
    // (schema-grammar.ts' budget), but it is still the request's own work (issue 41).
    check(request) {
      if (request.constraint) checkConstraint(request.constraint);
    },
    serve(model, request, options, realm) {
      // Before it waits in the queue, and before any tokenizing: a prompt that cannot fit costs nobody anything.
      if (model.contextLength !== undefined) refuseUnfittablePrompt(request, model.contextLength);
      // A chat model takes its turns in the realm's queue itself: a transformers.js model a pass at a time, batching.
      return model.generate(request, { ...options, imageAccess: realm.imageAccess });
    },
  },

  embeddings: {
    serve(model, request, options, realm) {
      if (model.maxInputTokens !== undefined) refuseUnfittableInput(request.input, model.maxInputTokens);
      return realm.queue.run(() => model.embed(request.input, options), options.signal);
    },
  },

  transcription: {
    async serve(model, request, options, realm) {
      const { audio, ...params } = request;
      // What the model cannot do is refused before the audio is decoded; audio too long, before it waits in the queue.
      model.check(params);
      // Measured from its headers and frames before anything decodes it (issue 41); checked again once decoded.
      const samples = await decodeAudioFile(audio, model.sampleRate, realm.decodeAudio, request.maxSeconds);
      const seconds = samples.length / model.sampleRate;
      if (request.maxSeconds !== undefined && seconds > request.maxSeconds) {
        throw new EngineError(
          'invalid_request',
          `The audio is ${seconds.toFixed(1)} s long; the limit is ${request.maxSeconds} s. Split it and send the parts.`,
          { param: 'file' },
        );
      }
      return model.transcribe(samples, params, options);
    },
  },
};

/**
 * The error of a chain none of whose candidates loaded. When every one was refused for storage, it says how much the
 * smallest needed and how much is free (503 `insufficient_storage`); when every one was passed over for a download,
 * the download's failure (503 `model_download_failed`); otherwise `load_failed`, listing why each failed.
 */
function chainFailure(id: string, failures: EngineError[], tried: string[]): EngineError {
  const list = `Tried ${tried.join('; ')}`;
  if (failures.length > 0 && failures.every((f) => f.kind === 'insufficient_storage')) {
    const shortfalls = failures.map((f) => f.cause).filter(isShortfall);
    const smallest = shortfalls.sort((a, b) => a.needed - b.needed)[0];
    const message = smallest
      ? `Model \`${id}\` needs more storage than this site has: its smallest download needs about ` +
        `${formatBytes(smallest.needed)}, and ${formatBytes(smallest.free)} of the site's ` +
        `${formatBytes(smallest.quota)} quota is free. Free space (remove stored models: lantern.storage.remove) or ` +
        `use a smaller model. ${list}`
      : `Model \`${id}\` needs more storage than this site has. ${list}`;
    return new EngineError('insufficient_storage', message, { cause: failures });
  }
  const kind: EngineErrorKind =
    failures.length > 0 && failures.every((f) => failureMeaning(f.kind) === 'passed-over')
      ? 'download_failed'
      : 'load_failed';
  return new EngineError(kind, `Model \`${id}\` could not be loaded on this device. ${list}`, { cause: failures });
}

const isShortfall = (cause: unknown): cause is StorageShortfall =>
  typeof cause === 'object' && cause !== null && 'needed' in cause && 'free' in cause;

/**
 * The local engine: each target is resolved on first use to the first of its candidates that loads. A candidate that
 * fails to load (unsupported, missing, too big for the storage quota) hands over to the next, in this realm or, with
 * `replaceRealm`, in a fresh one. A model is loaded once, however many IDs share it; model runs go one at a time through the realm's
 * queue (a chat model batching concurrent requests into each forward pass);
 * and a target that failed to load is tried again on its next request, so fixing the cause heals the engine without a
 * restart.
 */
export function createLocalEngine(options: LocalEngineOptions = {}): LocalEngine {
  const { onProgress, replaceRealm } = options;
  const loaders = options.loaders ?? DEFAULT_LOADERS;
  const byTarget = new Map<string, Promise<LoadedModel>>();
  const byCandidate = new Map<string, Promise<LoadedModel>>();
  /** The candidate key of each loaded model, for `onBackend`. */
  const keys = new WeakMap<LoadedModel, string>();
  const queue = new TaskQueue();

  /** Set once a load failed in a realm that `replaceRealm` must replace: nothing more is loaded in it. */
  let realmBroken = false;
  /** What a call gets in a broken realm: no answer; its caller sends it again to the next realm. */
  const stalled = () => new Promise<never>(() => {});

  const loadCandidate = (target: LocalTarget, candidate: LocalCandidate): Promise<LoadedModel> => {
    if (realmBroken) return stalled();
    const key = candidateKey(candidate);
    let loading = byCandidate.get(key);
    if (!loading) {
      const context = { id: target.id, onProgress, queue };
      loading = loaders[target.task](candidate, context);
      byCandidate.set(key, loading);
      loading.catch(() => byCandidate.delete(key));
    }
    return loading;
  };

  const walk = async (target: LocalTarget): Promise<LoadedModel> => {
    const { id } = target;
    const chain = withoutFailures(target.candidates, options.failed);
    const failures: EngineError[] = [];
    const tried = chain.failed.map((f) => `${f.candidate}: ${f.reason}`);
    /** Whether a candidate of this chain broke the realm. */
    let broke = false;
    for (const [index, candidate] of chain.candidates.entries()) {
      const key = candidateKey(candidate);
      try {
        const model = await loadCandidate(target, candidate);
        keys.set(model, key);
        onProgress?.({ status: 'ready', model: id, resolved: key });
        return model;
      } catch (error) {
        // A failure after the realm broke may be the break's doing, not the candidate's: say nothing of it.
        if (realmBroken) return stalled();
        const failure = EngineError.from(error, 'load_failed');
        failures.push(failure);
        tried.push(`${key}: ${failure.message}`);
        // Passed over before its engine loaded anything (no room for its download, or no network for it): the realm
        // is intact, the next candidate loads here, and this one is tried again next time.
        if (failureMeaning(failure.kind) === 'passed-over') {
          onProgress?.({ status: 'skipped', model: id, candidate: key, reason: failure.message });
          continue;
        }
        onProgress?.({ status: 'failed', model: id, candidate: key, reason: failure.message });
        // Its engine's descriptor says whether a failed load leaves the realm unable to load anything more.
        if (replaceRealm && engineOf(candidate).failureBreaksRealm) {
          realmBroken = broke = true;
          if (index < chain.candidates.length - 1) {
            const reason = `${key} failed to load (${failure.message}); \`${id}\` tries its next candidate in a fresh realm.`;
            replaceRealm(reason, { candidate: key, reason: failure.message });
            return stalled();
          }
        }
      }
    }
    const error = chainFailure(id, failures, tried);
    // Once this answer is on its way: the realm is replaced at once, unless no candidate broke it.
    if (replaceRealm && broke) setTimeout(() => replaceRealm(error.message), 0);
    throw error;
  };

  const resolve = (target: LocalTarget): Promise<LoadedModel> => {
    const key = `${target.id}\n${target.candidates.map(candidateKey).join('\n')}`;
    let loading = byTarget.get(key);
    if (!loading) {
      loading = walk(target);
      byTarget.set(key, loading);
      loading.catch(() => byTarget.delete(key));
    }
    return loading;
  };

  const realm: Realm = { queue, imageAccess: options.imageAccess, decodeAudio: options.decodeAudio };
  return {
    async run(task, target, request, runOptions = {}) {
      const serve = SERVE[task];
      serve.check?.(request);
      const model = (await resolve(target)) as TaskModel<typeof task>;
      runOptions.onBackend?.(keys.get(model)!);
      return serve.serve(model, request, runOptions, realm);
    },
  };
}
