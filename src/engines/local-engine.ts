import {
  EngineError,
  failureMeaning,
  type LoadProgress,
  type ModelTask,
  type RunsOn,
  type TaskEvent,
  type TaskRequest,
  type TaskResult,
} from '../engine-interface/index.ts';
import { decodeAudioFile, type DecodeAudio } from '../inputs/audio-input.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import { checkConstraint } from '../grammar/constraint-check.ts';
import { DEFAULT_LOADERS, type ModelLoaders } from './loader-registry.ts';
import type { TaskModel } from './model-loaders.ts';
import { candidateKey, type LocalCandidate } from './engine-registry.ts';
import { refuseUnfittableInput, refuseUnfittablePrompt } from './prompt-budget.ts';
import type { LoadOptional } from '../audio/index.ts';
import { checkSpeechFormat, speakInPieces } from './speech/speak-in-pieces.ts';
import { TaskQueue } from './task-queue.ts';

/**
 * What a local call runs on: the public ID that asked (progress is reported under it) and the one candidate of its
 * fallback chain that the router's walk sends it to.
 */
export interface LocalTarget {
  id: string;
  task: ModelTask;
  candidate: LocalCandidate;
}

export interface LocalCallOptions {
  signal?: AbortSignal | undefined;
  /**
   * Told which candidate serves the call (its `candidateKey`), once it is loaded and before any output, and where its
   * model runs (`runsOn`, where its engine says).
   */
  onBackend?: ((backend: string, runsOn?: RunsOn) => void) | undefined;
}

/** What a local run of `task` takes: the call's options, and a listener for each event of the task as it happens. */
export interface LocalRunOptions<T extends ModelTask> extends LocalCallOptions {
  onEvent?: ((event: TaskEvent<T>) => void) | undefined;
}

/**
 * The models that run on this device, behind no routing: a call names its task and its target, and the engine serves
 * it from the target's candidate, loading it first if it must. It answers each call once, with its result or why its
 * candidate failed; which candidate comes next is the router's walk to decide. What the engine worker exposes to the
 * service worker's router.
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
  /**
   * How an encoder package under a copyleft licence is imported here, which Lantern never bundles with its own code
   * (`wasm-media-encoders` for mp3, `@mediabunny/aac-encoder` for aac). Absent: a dynamic `import()` by its name,
   * which Node resolves.
   */
  loadOptional?: LoadOptional | undefined;
}

type LoadedModel = TaskModel<ModelTask>;

/** What of the engine's realm a run may use: its queue, how it fetches images, decodes audio and imports encoders. */
interface Realm {
  queue: TaskQueue;
  imageAccess: ImageAccess | undefined;
  decodeAudio: DecodeAudio | undefined;
  loadOptional: LoadOptional | undefined;
}

/** How the local engine serves one task, once its model is loaded. */
interface Serve<T extends ModelTask> {
  /** Refuses what no model would do here, before any model loads (and before any waits for one). */
  check?(request: TaskRequest<T>, realm: Realm): void | Promise<void>;
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

  speech: {
    // A format whose encoder is not here (an optional package the app did not install) is refused before any load.
    check: (request, realm) => checkSpeechFormat(request.format, realm.loadOptional),
    serve: (model, request, options, realm) =>
      speakInPieces(model, request, { ...options, queue: realm.queue, loadOptional: realm.loadOptional }),
  },
};

/**
 * The local engine: a candidate is loaded on its first call, once however many IDs share it; a candidate that failed
 * to load is tried again on its next call, so fixing the cause heals the engine without a restart. Model runs go one at
 * a time through the realm's queue (a chat model batching concurrent requests into each forward pass). A failed load is
 * the call's answer, reported as progress too: `skipped` when the candidate was passed over before its engine touched
 * anything (no room for its download, no network for it), `failed` otherwise. Whether a failure leaves the realm
 * unusable is its caller's to act on (the engine worker's API: `src/worker/worker-api.ts`).
 */
export function createLocalEngine(options: LocalEngineOptions = {}): LocalEngine {
  const { onProgress } = options;
  const loaders = options.loaders ?? DEFAULT_LOADERS;
  const byCandidate = new Map<string, Promise<LoadedModel>>();
  /** The IDs each loaded model was announced `ready` under. */
  const announced = new WeakMap<LoadedModel, Set<string>>();
  /** The load each model came from (its entry in `byCandidate`). */
  const loadOf = new WeakMap<LoadedModel, Promise<LoadedModel>>();
  const queue = new TaskQueue();

  const load = async ({ id, task, candidate }: LocalTarget): Promise<LoadedModel> => {
    const key = candidateKey(candidate);
    let loading = byCandidate.get(key);
    if (!loading) {
      loading = loaders[task](candidate, { id, onProgress, queue });
      byCandidate.set(key, loading);
      loading.catch(() => byCandidate.delete(key));
    }
    try {
      const model = await loading;
      loadOf.set(model, loading);
      const ids = announced.get(model) ?? new Set();
      announced.set(model, ids);
      if (!ids.has(id)) {
        ids.add(id);
        onProgress?.({ status: 'ready', model: id, resolved: key, ...(model.runsOn && { runsOn: model.runsOn }) });
      }
      return model;
    } catch (thrown) {
      const failure = EngineError.from(thrown, 'load_failed');
      const status = failureMeaning(failure.kind) === 'passed-over' ? 'skipped' : 'failed';
      onProgress?.({ status, model: id, candidate: key, reason: failure.message });
      throw failure;
    }
  };

  /** Forgets a loaded model that can no longer run, unless another has taken its place already. */
  const forget = (candidate: LocalCandidate, model: LoadedModel) => {
    const key = candidateKey(candidate);
    if (byCandidate.get(key) === loadOf.get(model)) byCandidate.delete(key);
  };

  const realm: Realm = {
    queue,
    imageAccess: options.imageAccess,
    decodeAudio: options.decodeAudio,
    loadOptional: options.loadOptional,
  };
  return {
    async run(task, target, request, runOptions = {}) {
      const serve = SERVE[task];
      await serve.check?.(request, realm);
      const model = (await load(target)) as TaskModel<typeof task>;
      runOptions.onBackend?.(candidateKey(target.candidate), model.runsOn);
      try {
        return await serve.serve(model, request, runOptions, realm);
      } catch (error) {
        // The model's runtime went away under the call (wllama's worker failed): it is loaded again on the next call.
        if (error instanceof EngineError && error.kind === 'engine_lost') forget(target.candidate, model);
        throw error;
      }
    },
  };
}
