import { downloadFile, type DownloadTarget, type StoredFiles } from '../../downloads/index.ts';
import { hubBase, hubListing, modelFolder, type EngineFiles, type FetchOptions } from '../model-files.ts';
import type { TransformersCandidate } from './transformers-engine.ts';

/*
 * The files a transformers.js candidate reads, as Lantern downloads them (`ENGINE_FILES` in `model-manifests.ts`).
 * transformers.js' registry of model files is imported on demand: the page bundles this file.
 */

export const TRANSFORMERS_FILES: EngineFiles<TransformersCandidate> = { list: transformersFiles };

async function transformersFiles(
  candidate: TransformersCandidate,
  store: StoredFiles,
  options: FetchOptions,
): Promise<DownloadTarget[]> {
  const own = await modelFiles(candidate, store, options);
  // A draft model is read as the model is, beside it.
  if (candidate.draft === undefined) return own;
  const draft = await modelFiles({ ...candidate, model: candidate.draft, draft: undefined }, store, options);
  return [...own, ...draft];
}

/** The files of the candidate's model folder alone. */
async function modelFiles(
  candidate: TransformersCandidate,
  store: StoredFiles,
  options: FetchOptions,
): Promise<DownloadTarget[]> {
  const folder = modelFolder(candidate.model, candidate.hub);
  const listing = folder.repo ? await hubListing(hubBase(candidate.hub), folder.repo, options) : undefined;
  const target = (name: string, optional = false): DownloadTarget => ({
    url: folder.url + name,
    source: folder.source + name,
    ...listing?.get(name),
    ...(optional && { optional }),
  });
  // The weights' files depend on the configuration: transformers.js' own registry says which it will read.
  const config = target('config.json');
  await downloadFile(store, config, options);
  const configuration: unknown = await (await store.response(config))!.json();
  const { ModelRegistry } = await import('@huggingface/transformers');
  const names = await ModelRegistry.get_model_files(folder.repo ?? candidate.model, {
    config: configuration as never,
    ...(candidate.dtype && { dtype: candidate.dtype }),
    device: candidate.device === 'webgpu' ? 'webgpu' : 'wasm',
  });
  const optional = new Set(['generation_config.json']);
  // A speech model's processor turns audio into the encoder's input, a vision model's images into pixels: its
  // configuration is read at load too.
  const processor =
    (configuration as { model_type?: string }).model_type === 'whisper' || candidate.images
      ? ['preprocessor_config.json']
      : [];
  // A text-to-speech model's voices are files of its folder that only Lantern reads.
  const voices = Object.keys(candidate.speech?.voices ?? {}).map((voice) => `voices/${voice}.bin`);
  const all = [...new Set([...names, 'tokenizer.json', 'tokenizer_config.json', ...processor, ...voices])];
  return all
    .filter((name) => !listing || listing.has(name) || !optional.has(name))
    .map((name) => target(name, optional.has(name) && !listing));
}
