import type { Engine, LoadProgress } from '../engine-interface/index.ts';
import type { ImageAccess } from '../inputs/image-input.ts';
import { createLocalEngine } from '../engines/local-engine.ts';
import type { ModelLoaders } from '../engines/loader-registry.ts';
import {
  NODE_CPU,
  type DeviceCapabilities,
  type ModelProfile,
  type RoutingPolicy,
  validateProfile,
} from './model-profile.ts';
import { createModelRouter } from './model-router.ts';
import { nodeImageAccess } from '../inputs/node-image-access.ts';

export interface EngineOptions {
  /** Public model IDs and what each runs: `DEFAULT_PROFILE`, `bundledProfile(...)`, or the app's own. */
  profile: ModelProfile;
  /** What the device offers (default: `NODE_CPU`, the CPU only, natively). Decides which candidates are tried. */
  device?: DeviceCapabilities;
  /** Model download and load progress. */
  onProgress?: (progress: LoadProgress) => void;
  /** How candidates are loaded (default: transformers.js and web-llm). */
  loaders?: ModelLoaders;
  /** Where IDs whose chains have remote candidates are served first (default `local-first`). */
  policy?: RoutingPolicy;
  /**
   * How images are fetched and decoded (default: `nodeImageAccess()`: URLs only from the handler's `imageUrlHosts`,
   * at public addresses; sharp told the pixel limit).
   */
  imageAccess?: ImageAccess;
}

/**
 * The engine of a process that runs its models itself (Node: tests, benchmarks, `npm run serve:node`): the model
 * router over a local engine in the same realm, with a fixed profile, policy and device. In a browser the router runs
 * in the service worker instead, and the local engine in the engine worker (see `src/worker/`). A profile that cannot be
 * served (an alias that is also an ID, or of two entries) is refused here, with a TypeError that says why.
 *
 * @example
 * const engine = createEngine({ profile: bundledProfile('/abs/path/public/models') });
 * await engine.chat('crimson-falcon-4', request);
 */
export function createEngine(options: EngineOptions): Engine {
  validateProfile(options.profile); // a TypeError saying what is wrong with it, rather than a 404 later
  const routing = {
    profile: options.profile,
    device: options.device ?? NODE_CPU,
    policy: options.policy ?? 'local-first',
  };
  const local = createLocalEngine({
    onProgress: options.onProgress,
    loaders: options.loaders,
    imageAccess: options.imageAccess ?? nodeImageAccess(),
  });
  return createModelRouter({ local, routing: () => routing });
}
