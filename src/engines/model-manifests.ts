import { downloadFile, type DownloadTarget, type StoredFiles } from '../downloads/index.ts';
import {
  downloadKey,
  fromHub,
  hubBase,
  HUGGING_FACE,
  manifestName,
  storedManifest,
  type ModelManifest,
} from './model-files.ts';
import {
  candidateKey,
  isHubModel,
  type LocalCandidate,
  type TransformersCandidate,
  type WebLLMCandidate,
} from '../models/model-profile.ts';
import { WEB_LLM_CACHES, webLLMRepository } from './web-llm/web-llm-cache.ts';

/**
 * The candidate's files, from the manifest stored with them (so a stored model loads offline) or, the first time, from
 * the network: the small files that name the rest (config.json; web-llm's mlc-chat-config.json and tensor-cache.json)
 * are downloaded into the store first, and sizes and SHA-256s come from the hub's file listing where it has one. The
 * model library's pin (`modelLibIntegrity`) is the candidate's as it is now, not as it was at the first download.
 */
export async function modelManifest(
  candidate: LocalCandidate,
  store: StoredFiles,
  options: { fetch?: typeof fetch; signal?: AbortSignal | undefined } = {},
): Promise<ModelManifest> {
  const stored = await storedManifest(candidate, store);
  if (stored) return withPin(stored, candidate);
  const files =
    candidate.engine === 'web-llm'
      ? await webLLMFiles(candidate, store, options)
      : await transformersFiles(candidate, store, options);
  const manifest: ModelManifest = { candidate: candidateKey(candidate), key: downloadKey(candidate), files };
  await store.writeJSON(manifestName(manifest.key), manifest);
  return manifest;
}

/** The manifest with the SHA-256 the app pins web-llm's model library to now, if it pins one. */
function withPin(manifest: ModelManifest, candidate: LocalCandidate): ModelManifest {
  const pin = candidate.engine === 'web-llm' ? sha256OfIntegrity(candidate.modelLibIntegrity) : undefined;
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

/** Where a transformers.js model's files are asked for (`url`) and fetched from (`source`): a folder, ending in `/`. */
function transformersFolder(candidate: TransformersCandidate): { url: string; source: string; repo?: string } {
  if (!isHubModel(candidate.model)) {
    const folder = candidate.model.replace(/\/*$/, '/');
    return { url: folder, source: folder };
  }
  // transformers.js keys a hub file by its URL on the hub (`env.remoteHost`), whichever mirror it came from.
  const url = `${HUGGING_FACE}${candidate.model}/resolve/main/`;
  return { url, source: fromHub(url, candidate.hub), repo: candidate.model };
}

async function transformersFiles(
  candidate: TransformersCandidate,
  store: StoredFiles,
  options: { fetch?: typeof fetch; signal?: AbortSignal | undefined },
): Promise<DownloadTarget[]> {
  const folder = transformersFolder(candidate);
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
  const all = [...new Set([...names, 'tokenizer.json', 'tokenizer_config.json', ...processor])];
  return all
    .filter((name) => !listing || listing.has(name) || !optional.has(name))
    .map((name) => target(name, optional.has(name) && !listing));
}

/** A web-llm model's files: its configuration, its weights' shards, its tokenizer and its model library. */
async function webLLMFiles(
  candidate: WebLLMCandidate,
  store: StoredFiles,
  options: { fetch?: typeof fetch; signal?: AbortSignal | undefined },
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

/** What the hub's file listing says of each file of a repository: its size and, for LFS files, its SHA-256. */
type Listing = Map<string, { size: number; sha256?: string }>;

/**
 * The hub's listing of a repository (`/api/models/{repo}/tree/main?recursive=true`), or undefined when the host has
 * none (a plain mirror, a CDN) or cannot be reached: sizes then come from the servers' Content-Length.
 */
async function hubListing(
  hub: string,
  repo: string,
  options: { fetch?: typeof fetch; signal?: AbortSignal | undefined },
): Promise<Listing | undefined> {
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  try {
    const response = await fetchFn(`${hub}api/models/${repo}/tree/main?recursive=true`, {
      ...(options.signal && { signal: options.signal }),
    });
    if (!response.ok) return undefined;
    const entries = (await response.json()) as {
      type: string;
      path: string;
      size: number;
      lfs?: { oid: string; size: number };
    }[];
    if (!Array.isArray(entries)) return undefined;
    return new Map(
      entries
        .filter((entry) => entry.type === 'file')
        .map((entry) => [
          entry.path,
          { size: entry.lfs?.size ?? entry.size, ...(entry.lfs && { sha256: entry.lfs.oid }) },
        ]),
    );
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return undefined;
  }
}
