import type { LoadProgress, RunsOn } from '../engine-interface/index.ts';
import { BROWSER_REALMS } from '../engines/browser-realms.ts';
import { engineOfKey, type LocalEngineName } from '../engines/engine-registry.ts';
import { createLocalEngine, type LocalEngine, type LocalTarget } from '../engines/local-engine.ts';
import type { RealmRuntime } from '../engines/model-loaders.ts';
import { fetchAsPage } from '../inputs/image-input.ts';
import { detectDevice } from './device.ts';
import { loadOptionalModule } from './optional-modules.ts';
import type { DecodeAudioInPage, DeviceInfo, EngineWorkerConfig } from './protocol.ts';

/**
 * The local engine of a browser worker, on the device this browser offers (see detectDevice), with each engine's
 * runtime set up as the worker starts (`BROWSER_REALMS`). After a failure that breaks its realm (its descriptor's
 * `breaksRealm`), the worker's API asks for a fresh worker (see createWorkerApi).
 */
export async function createBrowserEngine(
  config: EngineWorkerConfig,
  hooks: {
    onProgress?: (progress: LoadProgress) => void;
    /** The host page's decoder, for audio that is not WAV. */
    decodeAudio?: DecodeAudioInPage;
  } = {},
): Promise<{ engine: LocalEngine; device: DeviceInfo; runtimeKept: Promise<true | string> }> {
  const { onProgress, decodeAudio } = hooks;
  const device = await detectDevice(config.device);
  // Read or downloaded while the worker waits for its first call, rather than by the engine once a model loads: a page
  // that is ready can go offline before it runs a model (issue 42).
  const runtimes = new Map(
    Object.entries(BROWSER_REALMS).map(([name, realm]) => [name, realm.start(device.device, self.location.href)]),
  );
  const engine = createLocalEngine({
    onProgress,
    decodeAudio,
    // Image URLs as the page fetches them: its origin, its CORS rules; it reaches nothing its own scripts could not.
    imageAccess: { fetch: fetchAsPage },
    // The app's optional encoders (mp3, aac), which Lantern's Vite plugin builds beside this worker.
    loadOptional: loadOptionalModule,
  });
  return { engine: afterRuntimes(engine, runtimes), device, runtimeKept: allKept([...runtimes.values()]) };
}

/** True once every engine's runtime is kept for offline starts; otherwise the first reason one is not. */
async function allKept(runtimes: RealmRuntime[]): Promise<true | string> {
  const kept = await Promise.all(runtimes.map((runtime) => runtime.kept));
  return kept.find((k): k is string => k !== true) ?? true;
}

/**
 * `engine`, whose calls start once the runtime of the candidate's engine is ready (at once, but on a first visit whose
 * first call comes before its download ends), and which tells that runtime once a model of its engine has loaded.
 * Candidates of engines without a runtime to set up (web-llm, llama.cpp) need not wait for another's, nor fail where
 * it cannot download.
 */
function afterRuntimes(engine: LocalEngine, runtimes: ReadonlyMap<string, RealmRuntime>): LocalEngine {
  const needed = async (target: LocalTarget) => runtimes.get(target.candidate.engine)?.ready();
  const loaded = (onBackend?: (backend: string, runsOn?: RunsOn) => void) => (backend: string, runsOn?: RunsOn) => {
    const name: LocalEngineName | string | undefined = engineOfKey(backend)?.name;
    if (name !== undefined) runtimes.get(name)?.loaded();
    onBackend?.(backend, runsOn);
  };
  return {
    run: async (task, target, request, options = {}) => {
      await needed(target);
      return engine.run(task, target, request, { ...options, onBackend: loaded(options.onBackend) });
    },
  };
}
