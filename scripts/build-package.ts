/**
 * Builds the package that `npm pack` and `npm publish` ship (`npm run build:lib`, run by `prepack`), into dist/:
 *
 * - `src/`, `sw/`: the entry points as ES modules with type declarations (tsc, tsconfig.lib.json);
 * - `static/`: what an app serves: `lantern/` (the engine worker, bundled with the engines, and onnxruntime-web's
 *   files) and `service-worker.js`, a complete service worker for apps built without the Vite plugin;
 * - `templates/service-worker.js`: Lantern's service worker, whose precache list the Vite plugin fills in;
 * - `models/`: the bundled tiny models, which the Vite plugin copies into an app that asks for them.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bundle, type BuiltFiles } from '../src/vite/bundle.ts';
import { PACKAGE_FILES } from '../src/vite/package-files.ts';
import { injectManifest, precacheManifest } from '../src/vite/precache-manifest.ts';

const started = performance.now();
const options = { root: process.cwd(), mode: 'production' };
const write = (folder: string, files: BuiltFiles) => {
  for (const [name, content] of files) {
    mkdirSync(dirname(join(folder, name)), { recursive: true });
    writeFileSync(join(folder, name), content);
  }
};
const serviceWorker = async (entry: string) => String((await bundle(entry, 'iife', options)).get('service-worker.js'));

rmSync('dist', { recursive: true, force: true });
execFileSync(
  process.execPath,
  [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.lib.json'],
  {
    stdio: 'inherit',
  },
);
write(join(PACKAGE_FILES.static, 'lantern'), await bundle('src/worker/engine-worker.ts', 'es', options));
write(
  dirname(PACKAGE_FILES.serviceWorkerTemplate),
  new Map([['service-worker.js', await serviceWorker('sw/service-worker.ts')]]),
);
const standalone = await serviceWorker('sw/standalone-service-worker.ts');
const ownFiles = precacheManifest(PACKAGE_FILES.static, (file) => file.startsWith('lantern/'));
writeFileSync(join(PACKAGE_FILES.static, 'service-worker.js'), injectManifest(standalone, ownFiles));
// The bundled models, without the reference outputs that only Lantern's own tests read.
cpSync('public/models', PACKAGE_FILES.models, { recursive: true, filter: (path) => !path.endsWith('reference.json') });
console.log(`dist/ built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
