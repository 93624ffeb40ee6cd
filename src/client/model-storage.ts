import type { LoadProgress } from '../engine-interface/index.ts';
import { EngineError } from '../engine-interface/index.ts';
import { formatBytes, storageEstimate } from '../downloads/index.ts';
import { prepareCandidate } from '../engines/model-downloads.ts';
import {
  browserStore,
  isDownloadedModel,
  removeStoredModel,
  storedModel,
  type StoredModel,
} from '../engines/model-files.ts';
import { candidateKey, isRemote, type LocalCandidate, type ModelProfile } from '../models/model-profile.ts';

/** What the storage page needs of the LocalAPI: its profile, the chains on this device, and its progress events. */
export interface StorageContext {
  profile(): ModelProfile;
  /** Each public ID's local candidates this device would try, first to last. */
  chains(): Promise<{ id: string; candidates: LocalCandidate[] }[]>;
  progress(progress: LoadProgress): void;
  /** Asks the browser to keep this origin's storage, once a model is stored; resolves with its answer. */
  persist(): Promise<boolean>;
  persisted(): Promise<boolean>;
}

/** What a model ID has stored on this device, candidate by candidate. */
export interface StoredModelEntry {
  id: string;
  /** Each candidate Lantern downloads (hub IDs, URLs, web-llm models), with what is stored of it. */
  candidates: (StoredModel & { candidateConfig: LocalCandidate })[];
  /** Bytes stored for this ID, all its candidates together. */
  bytes: number;
}

/** This origin's storage, as the browser reports it. */
export interface StorageReport {
  /** Bytes the origin stores now (models, the app's precache, keys, stored responses). */
  usage: number;
  /** Bytes it may store. */
  quota: number;
  /** Whether the browser keeps it until the user clears it (`navigator.storage.persist()` granted). */
  persisted: boolean;
}

/**
 * The models stored on this device, for a page: what each ID has stored (complete, partial, how much, when last
 * used), a download ahead of need (`prefetch`, with progress), removal, and the origin's quota. Downloads go to the
 * same store the engine worker loads from, resumed where any tab or worker left them.
 *
 * @example
 * for (const { id, candidates } of await lantern.storage.list()) console.log(id, candidates.map((c) => c.state));
 * await lantern.storage.prefetch('crimson-falcon-4', { onProgress: (p) => console.log(p) });
 */
export class ModelStorage {
  readonly #context: StorageContext;

  constructor(context: StorageContext) {
    this.#context = context;
  }

  /** Every public ID of the profile with what is stored of each of its downloaded candidates. */
  async list(): Promise<StoredModelEntry[]> {
    return Promise.all(
      Object.entries(this.#context.profile()).map(async ([id, entry]) => {
        const local = entry.candidates.filter((c): c is LocalCandidate => !isRemote(c) && isDownloadedModel(c));
        const candidates = await Promise.all(
          local.map(async (candidate) => ({ ...(await storedModel(candidate)), candidateConfig: candidate })),
        );
        return { id, candidates, bytes: candidates.reduce((sum, c) => sum + c.bytes, 0) };
      }),
    );
  }

  /** The origin's usage and quota, and whether it is persisted. */
  async estimate(): Promise<StorageReport> {
    const estimate = await storageEstimate();
    return {
      usage: estimate?.usage ?? 0,
      quota: estimate?.quota ?? 0,
      persisted: await this.#context.persisted(),
    };
  }

  /**
   * Downloads a model ahead of its first request, without loading it: the first candidate of its chain on this device
   * that fits the storage quota (as a request would choose), or the one named by `candidate` (its `candidateKey`).
   * Progress goes to `onProgress` and to the LocalAPI's `progress` events in every tab. Resolves with what is stored;
   * rejects with the EngineError of the last candidate tried (`insufficient_storage` saying what is needed and free,
   * `download_failed` saying what is missing). A model the app serves itself needs nothing: it resolves at once.
   */
  async prefetch(
    id: string,
    options: { candidate?: string; signal?: AbortSignal; onProgress?: (progress: LoadProgress) => void } = {},
  ): Promise<StoredModel> {
    const chain = (await this.#context.chains()).find((c) => c.id === id);
    if (!chain) throw new EngineError('model_not_found', `The model \`${id}\` does not exist.`);
    const candidates = options.candidate
      ? chain.candidates.filter((c) => candidateKey(c) === options.candidate)
      : chain.candidates;
    if (candidates.length === 0) {
      throw new EngineError(
        'model_not_found',
        options.candidate
          ? `\`${options.candidate}\` is not a candidate of \`${id}\` that this device can run.`
          : `This device can run no local candidate of \`${id}\`.`,
      );
    }
    const onProgress = (progress: LoadProgress) => {
      options.onProgress?.(progress);
      this.#context.progress(progress);
    };
    let last: EngineError | undefined;
    for (const candidate of candidates) {
      try {
        await prepareCandidate(candidate, { id, onProgress, signal: options.signal });
        return await storedModel(candidate);
      } catch (error) {
        last = EngineError.from(error, 'download_failed');
        if (last.kind === 'aborted') throw last;
        onProgress({ status: 'skipped', model: id, candidate: candidateKey(candidate), reason: last.message });
      }
    }
    throw last!;
  }

  /**
   * Deletes the stored files of a model ID (all its candidates, or the one named by `candidate`, its `candidateKey`),
   * except files another stored model shares; resolves with the bytes freed. A loaded model stays in memory until
   * `restartEngine()`; it downloads again on its next load.
   */
  async remove(id: string, candidate?: string): Promise<number> {
    const entry = this.#context.profile()[id];
    if (!entry) throw new EngineError('model_not_found', `The model \`${id}\` does not exist.`);
    let freed = 0;
    for (const c of entry.candidates) {
      if (isRemote(c) || (candidate !== undefined && candidateKey(c) !== candidate)) continue;
      freed += await removeStoredModel(c);
    }
    return freed;
  }

  /** Asks the browser to keep this origin's storage until the user clears it; resolves with its answer. */
  persist(): Promise<boolean> {
    return this.#context.persist();
  }

  /** Whether the browser has a store for downloads here (the Cache API: secure contexts). */
  get available(): boolean {
    return browserStore() !== undefined;
  }
}

/** A one-line account of a stored model, for logs and the playground. */
export function describeStored(model: StoredModel): string {
  if (model.state === 'none') return 'not stored';
  const of = model.totalBytes ? ` of ${formatBytes(model.totalBytes)}` : '';
  return model.state === 'complete'
    ? `stored (${formatBytes(model.bytes)})`
    : `partly stored (${formatBytes(model.bytes)}${of}; missing ${model.missing.join(', ')})`;
}
