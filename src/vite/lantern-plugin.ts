import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import type { Connect, Plugin, ResolvedConfig } from 'vite';
import { bundle, type BuiltFiles } from './bundle.ts';
import { bundleOptionalEncoders, OPTIONAL_FOLDER } from './optional-encoder-bundles.ts';
import { PACKAGE_FILES } from './package-files.ts';
import { injectManifest, listFiles, precacheManifest, wantsManifest } from './precache-manifest.ts';

export interface LanternPluginOptions {
  /**
   * Your own service worker's source, to build instead of Lantern's: it calls `mountLantern(self)` from `lantern/sw`
   * (and `precacheApp(self.__WB_MANIFEST)` to work offline). Default: Lantern's service worker, which does both.
   */
  serviceWorker?: string;
  /**
   * Copies Lantern's bundled tiny models into the build under `models/` (and serves them in `vite dev`), for
   * `bundledProfile('/models')`: an offline demo and tests. Default false: the real models download from the
   * Hugging Face hub on first use.
   */
  models?: boolean;
  /**
   * Which files of the build the service worker precaches, by path relative to the build folder (`assets/x.js`).
   * Default: all of them (the app, the engine worker, onnxruntime-web's factories and the models copied in), except
   * source maps. onnxruntime-web's binaries are never precached: the engine worker keeps the build its device runs.
   */
  precache?: boolean | ((file: string) => boolean);
  /** An engine worker source to build instead of Lantern's prebuilt one (Lantern's own repository builds its source). */
  engineWorker?: string;
}

/** Where the built files go, relative to the build folder; `startLocalAPI()`'s defaults look for them there. */
const SERVICE_WORKER_FILE = 'service-worker.js';
const ENGINE_FOLDER = 'lantern';
const MODELS_FOLDER = 'models';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/**
 * Lantern's Vite plugin: one line in `vite.config.ts` (`plugins: [lantern()]`) makes a Vite app serve Lantern. A build
 * emits the service worker (`/service-worker.js`, precaching the whole build for offline use), the engine worker and
 * onnxruntime-web's files (`/lantern/`), the LGPL encoders (`/lantern/optional/`: `wasm-media-encoders` for mp3,
 * Lantern's dependency; `@mediabunny/aac-encoder` for aac where the app installed it), and with
 * `models: true` the bundled models (`/models/`); `vite dev` serves the same files, with nothing precached.
 *
 * @example
 * // vite.config.ts
 * import { defineConfig } from 'vite';
 * import { lantern } from 'lantern/vite';
 * export default defineConfig({ plugins: [lantern({ models: true })] });
 */
export function lantern(options: LanternPluginOptions = {}): Plugin {
  let config: ResolvedConfig;
  let engineFiles: Promise<BuiltFiles> | undefined;
  let serviceWorkerCode: Promise<string> | undefined;
  let optionalFiles: Promise<BuiltFiles> | undefined;

  const bundleOptions = () => ({ root: config.root, mode: config.mode });
  const engineWorker = () =>
    (engineFiles ??= options.engineWorker
      ? bundle(resolve(config.root, options.engineWorker), 'es', bundleOptions())
      : Promise.resolve(readFiles(join(PACKAGE_FILES.static, ENGINE_FOLDER))));
  const serviceWorker = () =>
    (serviceWorkerCode ??= options.serviceWorker
      ? bundle(resolve(config.root, options.serviceWorker), 'iife', bundleOptions()).then(
          (files) => files.get(SERVICE_WORKER_FILE) as string,
        )
      : Promise.resolve(readFileSync(PACKAGE_FILES.serviceWorkerTemplate, 'utf8')));
  // The LGPL encoders for the engine worker: mp3's (Lantern's dependency) and aac's where the app installed it, built
  // from the node_modules that holds each. Lantern's own files hold none of them.
  const optionalEncoders = () =>
    (optionalFiles ??= bundleOptionalEncoders(config.root, config.mode).then(({ files, built, failed }) => {
      // Said, as the app ships LGPL code with them (which is the app's to honour, as for any dependency it installs).
      if (built.length > 0) {
        config.logger.info(`[lantern] LGPL encoders built for the engine worker: ${built.join(', ')}`);
      }
      for (const { name, error } of failed) {
        config.logger.warn(`[lantern] ${name} is installed but could not be built for the engine worker: ${error}`);
      }
      return files;
    }));
  const precached = (file: string) =>
    file !== SERVICE_WORKER_FILE &&
    !file.endsWith('.map') &&
    (typeof options.precache === 'function' ? options.precache(file) : options.precache !== false);

  return {
    name: 'lantern',
    configResolved(resolved) {
      config = resolved;
    },
    buildStart() {
      // A watching build builds again; its sources may have changed.
      engineFiles = serviceWorkerCode = optionalFiles = undefined;
    },
    async generateBundle() {
      if (!isBrowserBuild(this)) return;
      const [engine, optional] = await Promise.all([engineWorker(), optionalEncoders()]);
      for (const [name, source] of engine) {
        this.emitFile({ type: 'asset', fileName: `${ENGINE_FOLDER}/${name}`, source });
      }
      // Beside the engine worker, which imports them from there (src/worker/optional-modules.ts); precached with it.
      for (const [name, source] of optional) {
        this.emitFile({ type: 'asset', fileName: `${ENGINE_FOLDER}/${OPTIONAL_FOLDER}/${name}`, source });
      }
      if (options.models) {
        for (const [name, source] of readFiles(PACKAGE_FILES.models)) {
          this.emitFile({ type: 'asset', fileName: `${MODELS_FOLDER}/${name}`, source });
        }
      }
    },
    // After every file of the build is written, public/ included, so that the precache list holds them all.
    async closeBundle() {
      if (!isBrowserBuild(this)) return;
      const outDir = resolve(config.root, config.build.outDir);
      let code = await serviceWorker();
      if (wantsManifest(code)) code = injectManifest(code, precacheManifest(outDir, precached));
      else if (options.precache !== false) {
        config.logger.warn(`[lantern] ${options.serviceWorker} does not use self.__WB_MANIFEST: nothing is precached.`);
      }
      await mkdir(outDir, { recursive: true });
      await writeFile(join(outDir, SERVICE_WORKER_FILE), code);
    },
    configureServer(server) {
      // A relative base (`./`) is served from the root in dev.
      const base = () => (config.base.startsWith('/') ? config.base : '/');
      server.middlewares.use(
        devFiles(base, { engineWorker, serviceWorker, optionalEncoders }, options.models === true),
      );
    },
    configurePreviewServer(server) {
      server.middlewares.use(weightsUncompressed);
    },
  };
}

/** Model weights: binary, which gzip barely shrinks. */
const WEIGHTS = /\.(onnx|onnx_data|gguf|bin|safetensors)$/i;

/**
 * `vite preview`: model weights are sent as they are. Vite's preview server gzips every file whose type it does not
 * know as text (an `.onnx` or a `.gguf` has none), on every request: about 3 s of CPU for the 65 MB of bundled models
 * that a first visit stores, for a few percent of their size.
 */
const weightsUncompressed: Connect.NextHandleFunction = (req, _res, next) => {
  if (WEIGHTS.test(new URL(req.url ?? '/', 'http://preview').pathname)) delete req.headers['accept-encoding'];
  next();
};

/** Whether a hook runs in the build of the app's browser code (not a server-side build, nor `vite dev`). */
function isBrowserBuild(context: { environment?: { mode: string; config: { consumer: string } } }): boolean {
  const environment = context.environment;
  return environment === undefined || (environment.mode === 'build' && environment.config.consumer === 'client');
}

/** Every file under `folder` (of the package's prebuilt files), read, by path relative to it. */
function readFiles(folder: string): BuiltFiles {
  if (!existsSync(folder)) {
    throw new Error(`[lantern] ${folder} is missing: Lantern's package is not built (npm run build:lib builds it).`);
  }
  return new Map([...listFiles(folder)].map(([name, path]) => [name, readFileSync(path)]));
}

/**
 * `vite dev`: serves the service worker (precaching nothing), the engine worker with the app's optional encoders and,
 * if asked, the bundled models.
 */
function devFiles(
  base: () => string,
  built: {
    engineWorker: () => Promise<BuiltFiles>;
    serviceWorker: () => Promise<string>;
    optionalEncoders: () => Promise<BuiltFiles>;
  },
  models: boolean,
): Connect.NextHandleFunction {
  return (req, res, next) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://dev').pathname);
    if (!path.startsWith(base())) return next();
    const file = path.slice(base().length);
    const send = (body: string | Uint8Array) => {
      res.setHeader('content-type', CONTENT_TYPES[extname(file)] ?? 'application/octet-stream');
      res.setHeader('cache-control', 'no-cache');
      res.end(body);
    };
    const found = async (): Promise<string | Uint8Array | undefined> => {
      if (file === SERVICE_WORKER_FILE) {
        const code = await built.serviceWorker();
        return wantsManifest(code) ? injectManifest(code, []) : code;
      }
      const [folder, ...rest] = file.split('/');
      const name = rest.join('/');
      if (folder === ENGINE_FOLDER && name.startsWith(`${OPTIONAL_FOLDER}/`)) {
        return (await built.optionalEncoders()).get(name.slice(OPTIONAL_FOLDER.length + 1));
      }
      if (folder === ENGINE_FOLDER) return (await built.engineWorker()).get(name);
      if (models && folder === MODELS_FOLDER) {
        const path = listFiles(PACKAGE_FILES.models).get(name);
        return path && readFileSync(path);
      }
      return undefined;
    };
    found().then((body) => (body === undefined ? next() : send(body)), next);
  };
}
