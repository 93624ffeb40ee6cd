import {
  EngineError,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
  type EmbedOptions,
  type EmbedRequest,
  type EmbedResult,
  type Engine,
  type LoadProgress,
  type ModelCard,
  type ModelTask,
} from '../engine/index.ts';
import type { ModelProfile, ModelSource } from './model-profile.ts';
import { TaskQueue } from './task-queue.ts';
import { TransformersChatModel } from './transformers/chat-model.ts';
import { TransformersEmbeddingModel } from './transformers/embedding-model.ts';
import type { TransformersDevice } from './transformers/load-pretrained.ts';

export interface EngineOptions {
  /** Public model IDs and what each runs, e.g. `bundledProfile(...)`. */
  profile: ModelProfile;
  /** Where transformers.js runs (default: `cpu` in Node, `wasm` in a browser). */
  device?: TransformersDevice;
  /** Model download and load progress. */
  onProgress?: (progress: LoadProgress) => void;
}

type LoadedModel = TransformersChatModel | TransformersEmbeddingModel;

/**
 * The engine for a model profile: each model is loaded on first use (and once, however many IDs share it), runs one
 * request at a time, and reports progress while it loads. A model that failed to load is tried again on the next
 * request, so fixing the cause (a missing file, a full disk) heals the engine without a restart.
 *
 * @example
 * const engine = createEngine({ profile: bundledProfile('public/models') });
 * await engine.chat('crimson-falcon-4', { messages: [{ role: 'user', content: 'Hello' }], ...defaults });
 */
export function createEngine(options: EngineOptions): Engine {
  const { profile, device, onProgress } = options;
  const loads = new Map<string, Promise<LoadedModel>>();
  const queue = new TaskQueue();

  const source = (id: string, task: ModelTask): ModelSource => {
    const entry = profile[id];
    if (!entry || entry.task !== task) {
      const valid = Object.keys(profile).filter((k) => profile[k]!.task === task);
      throw new EngineError(
        'model_not_found',
        `The model \`${id}\` does not exist. Models for ${task}: ${valid.join(', ')}.`,
        {
          param: 'model',
        },
      );
    }
    return entry;
  };

  const load = (id: string, entry: ModelSource): Promise<LoadedModel> => {
    const key = `${entry.task}\n${entry.model}\n${entry.dtype ?? ''}`;
    let loading = loads.get(key);
    if (!loading) {
      const loadOptions = { id, onProgress, ...(device && { device }), ...(entry.dtype && { dtype: entry.dtype }) };
      const Model = entry.task === 'chat' ? TransformersChatModel : TransformersEmbeddingModel;
      loading = Model.load(entry.model, loadOptions).then(
        (model) => {
          onProgress?.({ status: 'ready', model: id });
          return model;
        },
        (error: unknown) => {
          loads.delete(key);
          throw new EngineError(
            'load_failed',
            `Model \`${id}\` (${entry.model}) could not be loaded: ${message(error)}`,
            {
              cause: error,
            },
          );
        },
      );
      loads.set(key, loading);
    }
    return loading;
  };

  return {
    async models(): Promise<ModelCard[]> {
      return Object.entries(profile).map(([id, entry]) => ({ id, task: entry.task, created: entry.created }));
    },

    async chat(id: string, request: ChatRequest, chatOptions: ChatOptions = {}): Promise<ChatResult> {
      const model = (await load(id, source(id, 'chat'))) as TransformersChatModel;
      return queue.run(() => model.generate(request, chatOptions), chatOptions.signal);
    },

    async embed(id: string, request: EmbedRequest, embedOptions: EmbedOptions = {}): Promise<EmbedResult> {
      const model = (await load(id, source(id, 'embeddings'))) as TransformersEmbeddingModel;
      return queue.run(() => model.embed(request.input, embedOptions), embedOptions.signal);
    },
  };
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
