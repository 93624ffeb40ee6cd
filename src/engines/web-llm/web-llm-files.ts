import { downloadFile, type DownloadTarget, type StoredFiles } from '../../downloads/index.ts';
import {
  fromHub,
  hubBase,
  hubListing,
  HUGGING_FACE,
  type EngineFiles,
  type FetchOptions,
  type ModelManifest,
} from '../model-files.ts';
import { WEB_LLM_CACHES, webLLMRepository } from './web-llm-cache.ts';
import type { WebLLMCandidate } from './web-llm-engine.ts';

/*
 * The files a web-llm candidate reads, as Lantern downloads them (`ENGINE_FILES` in `model-manifests.ts`). web-llm's
 * prebuilt list is imported on demand: the page bundles this file.
 */

export const WEB_LLM_FILES: EngineFiles<WebLLMCandidate> = { list: webLLMFiles, pinned: withPin };

/** The manifest with the SHA-256 the app pins web-llm's model library to now, if it pins one. */
function withPin(manifest: ModelManifest, candidate: WebLLMCandidate): ModelManifest {
  const pin = sha256OfIntegrity(candidate.modelLibIntegrity);
  if (pin === undefined) return manifest;
  const files = manifest.files.map((file) => (file.cache === WEB_LLM_CACHES.wasm ? { ...file, sha256: pin } : file));
  return { ...manifest, files };
}

/**
 * The SHA-256 (hex) of a Subresource Integrity value (`sha256-<base64>`, as HTML's `integrity` and web-llm's
 * `ModelIntegrity` write it); undefined for none. Lantern hashes with SHA-256 only: an integrity value without a
 * `sha256-` hash is refused rather than left unchecked.
 */
export function sha256OfIntegrity(integrity: string | undefined): string | undefined {
  if (integrity === undefined) return undefined;
  const base64 = integrity
    .split(/\s+/)
    .find((hash) => hash.startsWith('sha256-'))
    ?.slice('sha256-'.length)
    .replace(/\?.*$/, ''); // SRI allows options after a `?`
  if (!base64) throw new Error(`"${integrity}" has no SHA-256 (an integrity value "sha256-<base64>").`);
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  if (bytes.length !== 32) throw new Error(`"${integrity}" is not a SHA-256 (32 bytes in base64).`);
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** A web-llm model's files: its configuration, its weights' shards, its tokenizer and its model library. */
async function webLLMFiles(
  candidate: WebLLMCandidate,
  store: StoredFiles,
  options: FetchOptions,
): Promise<DownloadTarget[]> {
  const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
  const record = prebuiltAppConfig.model_list.find((r) => r.model_id === candidate.model);
  if (!record) throw new Error(`${candidate.model} is not a model of web-llm's prebuilt list.`);
  const repository = webLLMRepository(candidate.model); // https://huggingface.co/mlc-ai/<name>/
  const base = `${repository}resolve/main/`;
  const listing = await hubListing(hubBase(candidate.hub), repository.slice(HUGGING_FACE.length, -1), options);
  const target = (name: string, cache: string): DownloadTarget => ({
    url: base + name,
    source: fromHub(base + name, candidate.hub),
    cache,
    ...listing?.get(name),
  });
  const chatConfig = target('mlc-chat-config.json', WEB_LLM_CACHES.config);
  const tensorCache = target('tensor-cache.json', WEB_LLM_CACHES.model);
  await Promise.all([downloadFile(store, chatConfig, options), downloadFile(store, tensorCache, options)]);
  const { tokenizer_files: tokenizerFiles = [] } = (await readStored(store, chatConfig)) as {
    tokenizer_files?: string[];
  };
  const { records } = (await readStored(store, tensorCache)) as { records: { dataPath: string; nbytes: number }[] };
  const shards = records.map(({ dataPath, nbytes }) => ({ ...target(dataPath, WEB_LLM_CACHES.model), size: nbytes }));
  // web-llm keys the library by its record's URL; a candidate may fetch it from elsewhere (the app's own copy). It is
  // code: hashed again on every reuse, and against a hash where the app pins one or web-llm's record gives one (no
  // record of web-llm 0.2.86's prebuilt list does; web-llm checks its own against the bytes it instantiates).
  const pin = sha256OfIntegrity(candidate.modelLibIntegrity) ?? webLLMLibraryHash(record.integrity?.model_lib);
  const library: DownloadTarget = {
    url: record.model_lib,
    source: candidate.modelLib ?? record.model_lib,
    cache: WEB_LLM_CACHES.wasm,
    executable: true,
    ...(pin && { sha256: pin }),
  };
  return [
    chatConfig,
    tensorCache,
    ...tokenizerFiles.map((name) => target(name, WEB_LLM_CACHES.model)),
    ...shards,
    library,
  ];
}

/** The SHA-256 of web-llm's own integrity value for a library, when it is one (sha384 and sha512 web-llm checks). */
function webLLMLibraryHash(integrity: string | undefined): string | undefined {
  try {
    return sha256OfIntegrity(integrity);
  } catch {
    return undefined;
  }
}

/** A stored file's JSON: from Lantern's parts, or from the engine cache it was placed in. */
async function readStored(store: StoredFiles, file: DownloadTarget): Promise<unknown> {
  const response = await store.response(file);
  if (!response) throw new Error(`${file.url} is not stored.`);
  return response.json();
}
