import { isDownloadedModel, storedModel } from '../engines/model-files.ts';
import { isRemote, type LocalCandidate, type ModelCandidate } from '../models/model-profile.ts';
import { describeStored } from './model-storage.ts';

/**
 * Whether this device can work offline, as Workbox apps say "ready to work offline": what a reload without the network
 * starts, and which models then answer.
 */
export interface OfflineStatus {
  /**
   * A reload without the network starts Lantern, and every model in `models` answers: the page and the engine worker
   * are in the service worker's caches, and so is this device's runtime (onnxruntime-web's build).
   */
  ready: boolean;
  /** While not ready: what is still being stored, or why it cannot be. */
  reason?: string;
  /** Public IDs that answer offline: a model the app serves and its service worker keeps, or one stored complete. */
  models: string[];
  /**
   * Public IDs that need the network first, each with what is missing: a real model downloads on its first request or
   * with `lantern.storage.prefetch(id)`; an ID served only by a server needs that server.
   */
  missing: { model: string; reason: string }[];
}

/** What the readiness is decided from. */
export interface OfflineContext {
  /** The engine worker's runtime: true when kept; a reason when it cannot be; undefined while it is being stored. */
  runtime: true | string | undefined;
  /** The files a reload needs: the page and the scripts it runs, and the engine worker's script (absolute URLs). */
  files: string[];
  /** Each public ID with the candidates this device would try, first to last. */
  chains: { id: string; candidates: ModelCandidate[] }[];
}

/** Whether `url` is in any of the origin's caches (a precache keeps a revision in its query: ignored). */
async function cached(url: string): Promise<boolean> {
  const options = { ignoreSearch: true };
  if (await caches.match(url, options)) return true;
  // A navigation to a folder is answered with its index.html, as workbox-precaching's `directoryIndex` does.
  return url.endsWith('/') && (await caches.match(`${url}index.html`, options)) !== undefined;
}

/**
 * Whether a candidate answers offline, or what it lacks. A model the app serves itself (the bundled ones) is kept by
 * the app's service worker, which is seen from its `config.json`, the first file any of its loads reads.
 */
async function offlineCandidate(candidate: LocalCandidate): Promise<true | string> {
  if (isDownloadedModel(candidate)) {
    const stored = await storedModel(candidate);
    return stored.state === 'complete' || `${candidate.model} is ${describeStored(stored)}`;
  }
  const config = new URL(`${candidate.model.replace(/\/+$/, '')}/config.json`, location.href).href;
  return (await cached(config)) || `${candidate.model} is not in the service worker's caches`;
}

/** This device's offline readiness now (see OfflineStatus). */
export async function offlineStatus(context: OfflineContext): Promise<OfflineStatus> {
  const models: string[] = [];
  const missing: OfflineStatus['missing'] = [];
  for (const { id, candidates } of context.chains) {
    const local = candidates.filter((c): c is LocalCandidate => !isRemote(c));
    const reasons: string[] = [];
    for (const candidate of local) {
      const answer = await offlineCandidate(candidate);
      if (answer === true) break;
      reasons.push(answer);
    }
    if (local.length > 0 && reasons.length < local.length) models.push(id);
    else missing.push({ model: id, reason: local.length === 0 ? 'served by a server only' : reasons.join('; ') });
  }
  const reason = await notReadyBecause(context);
  return { ready: reason === undefined, ...(reason !== undefined && { reason }), models, missing };
}

/** What keeps a reload without the network from starting Lantern, if anything. */
async function notReadyBecause({ runtime, files }: OfflineContext): Promise<string | undefined> {
  if (typeof runtime === 'string') return `the runtime for this device is not kept: ${runtime}`;
  if (runtime === undefined) return "the runtime for this device (onnxruntime-web's build) is still being stored";
  const absent: string[] = [];
  for (const file of files) if (!(await cached(file))) absent.push(new URL(file).pathname);
  return absent.length > 0 ? `not in the service worker's caches: ${absent.join(', ')}` : undefined;
}

/**
 * The files a reload of this page needs, by absolute URL: the page itself, the scripts it runs from its origin, and the
 * engine worker's script.
 */
export function pageFiles(engineWorker: URL): string[] {
  const page = new URL(location.href);
  page.hash = '';
  page.search = '';
  const scripts = [...document.querySelectorAll<HTMLScriptElement>('script[src]')]
    .map((script) => new URL(script.src, location.href))
    .filter((url) => url.origin === location.origin)
    .map((url) => url.href);
  return [page.href, ...scripts, engineWorker.href];
}
