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
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bundle, type BuiltFiles } from '../src/vite/bundle.ts';
import { PACKAGE_FILES } from '../src/vite/package-files.ts';
import { injectManifest, precacheManifest } from '../src/vite/precache-manifest.ts';

const started = performance.now();

/**
 * Everything dist/ is built from: the sources, the bundled models, the build's own settings and the locked
 * dependencies. `npm pack` runs `prepare` again right after `npm install` ran it: dist/ built from the same inputs (as
 * their digest, kept beside the installed packages, says) is then kept rather than built again.
 */
const INPUTS = ['src', 'sw', 'public/models', 'scripts/build-package.ts', 'tsconfig.json', 'tsconfig.lib.json'];
const DIGEST = 'node_modules/.cache/lantern/dist-inputs.sha256';
function inputsDigest(): string {
  const hash = createHash('sha256');
  const files = INPUTS.flatMap((input) =>
    statSync(input).isDirectory()
      ? readdirSync(input, { recursive: true, withFileTypes: true })
          .filter((entry) => entry.isFile())
          .map((entry) => join(entry.parentPath, entry.name))
      : [input],
  );
  for (const file of [...files, 'package.json', 'package-lock.json'].sort()) {
    hash.update(`${file}\0`).update(existsSync(file) ? readFileSync(file) : '');
  }
  return hash.digest('hex');
}
const digest = inputsDigest();
if (existsSync('dist') && existsSync(DIGEST) && readFileSync(DIGEST, 'utf8') === digest) {
  console.log('dist/ is up to date: built from these sources already');
  process.exit(0);
}

const options = { root: process.cwd(), mode: 'production' };
const write = (folder: string, files: BuiltFiles) => {
  for (const [name, content] of files) {
    mkdirSync(dirname(join(folder, name)), { recursive: true });
    writeFileSync(join(folder, name), content);
  }
};
const serviceWorker = async (entry: string) => String((await bundle(entry, 'iife', options)).get('service-worker.js'));

rmSync('dist', { recursive: true, force: true });
rmSync(DIGEST, { force: true });
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
mkdirSync(dirname(DIGEST), { recursive: true });
writeFileSync(DIGEST, digest);
console.log(`dist/ built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
