import type { ModelTask } from '../engine-interface/index.ts';
import { ENGINES, engineOf, type CandidateOf, type LocalCandidate, type LocalEngineName } from './engine-registry.ts';
import { LLAMA_CPP_LOADERS } from './llama-cpp/llama-cpp-loaders.ts';
import { prepareCandidate } from './model-downloads.ts';
import type { EngineLoaders, LoadContext, TaskModel } from './model-loaders.ts';
import { TRANSFORMERS_LOADERS } from './transformers/transformers-loaders.ts';
import { WEB_LLM_LOADERS } from './web-llm/web-llm-loaders.ts';

/** How candidates become loaded models, per task; `createEngine` takes other loaders in tests. */
export type ModelLoaders = {
  [T in ModelTask]: (candidate: LocalCandidate, context: LoadContext) => Promise<TaskModel<T>>;
};

/**
 * Each local engine's loaders, one line per engine: what imports the engine's library and its model classes (web-llm
 * on first use). Only the engine worker and Node load them; the descriptors (`engine-registry.ts`) say the rest.
 */
const ENGINE_LOADERS: { readonly [N in LocalEngineName]: EngineLoaders<CandidateOf<N>> } = {
  transformers: TRANSFORMERS_LOADERS,
  'web-llm': WEB_LLM_LOADERS,
  'llama.cpp': LLAMA_CPP_LOADERS,
};

/** How each task is named where a candidate's engine does not serve it (`web-llm candidates are for chat: …`). */
const TASK_WORDS: Readonly<Record<ModelTask, string>> = {
  chat: 'chat runs',
  embeddings: 'embeddings run',
  transcription: 'speech to text runs',
  speech: 'text to speech runs',
};

/** The candidate's loader for a task, or why its engine cannot serve it (before anything is downloaded). */
function loaderFor<T extends ModelTask>(
  task: T,
  candidate: LocalCandidate,
): NonNullable<EngineLoaders<LocalCandidate>[T]> {
  const engine = engineOf(candidate);
  const load = (ENGINE_LOADERS[candidate.engine] as EngineLoaders<LocalCandidate>)[task];
  if (!engine.tasks.includes(task) || !load) {
    const others = Object.values(ENGINES).filter((e) => e.local && e.tasks.includes(task));
    throw new Error(
      `${engine.name} candidates are for ${engine.tasks.join(' and ')}: ${TASK_WORDS[task]} on ` +
        `${others.map((e) => e.title).join(' or ')}.`,
    );
  }
  return load;
}

/**
 * The real loaders: each candidate's engine's (`ENGINE_LOADERS`: transformers.js; web-llm, imported on first use). In
 * a browser, a downloaded model's files are first made ready in Lantern's store (`prepareCandidate`: the quota
 * checked, transfers resumed and verified), so the engine reads them from there. A task the candidate's engine does not
 * serve is refused before anything is downloaded.
 */
export const DEFAULT_LOADERS: ModelLoaders = {
  chat: defaultLoader('chat'),
  embeddings: defaultLoader('embeddings'),
  transcription: defaultLoader('transcription'),
  speech: defaultLoader('speech'),
};

/** A task's loader: the candidate's engine's, once its files are ready. */
function defaultLoader<T extends ModelTask>(
  task: T,
): (candidate: LocalCandidate, context: LoadContext) => Promise<TaskModel<T>> {
  return async (candidate, context) => {
    const load = loaderFor(task, candidate);
    await prepareCandidate(candidate, context);
    return load(candidate, context);
  };
}
