import { StoredFiles } from '../../downloads/index.ts';
import { isDownloadedModel, modelFolder, storedManifest } from '../model-files.ts';
import { ggufParts, type LlamaCppCandidate } from './llama-cpp-engine.ts';

/*
 * What both wllama runtimes hand their worker: a candidate's GGUF parts and wllama's WebAssembly binary, as blobs, so
 * that wllama's nested worker never needs the network (the binary comes from this origin, precached).
 */

/** The GGUF's parts as blobs: downloaded ones from Lantern's store, the app's own (the bundled models) by fetch. */
export async function ggufBlobs(candidate: LlamaCppCandidate): Promise<{ blobs: Blob[]; urls: string[] }> {
  const folder = modelFolder(candidate.model, candidate.hub);
  const store = new StoredFiles(caches);
  // Each file from the source the candidate's manifest names (a hub file may be stored from the hub and a mirror).
  const manifest = isDownloadedModel(candidate) ? await storedManifest(candidate, store) : undefined;
  const files = new Map(manifest?.files.map((file) => [file.url, file]));
  const urls = ggufParts(candidate.file).map((name) => new URL(folder.url + name, self.location.href).href);
  const blobs = await Promise.all(
    urls.map(async (url) => {
      const stored = await store.response(files.get(url) ?? store.engineFile(url));
      const response = stored ?? (await fetch(url));
      if (!response.ok) throw new Error(`${url} could not be read: HTTP ${response.status}`);
      return response.blob();
    }),
  );
  return { blobs, urls };
}

/** A wllama binary (a `?url` import of the build) as a blob URL, read from this origin (the precache when offline). */
export async function wasmBlobUrl(url: string): Promise<string> {
  const response = await fetch(new URL(url, self.location.href));
  if (!response.ok) throw new Error(`wllama's WebAssembly (${url}) could not be read: HTTP ${response.status}`);
  return URL.createObjectURL(await response.blob());
}
