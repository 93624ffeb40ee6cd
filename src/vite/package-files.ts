import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of Lantern's package: the first with a package.json above this file, which lies in `src/vite/` of the
 * repository and in `dist/src/vite/` of the published package.
 */
export function packageRoot(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'package.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('[lantern] cannot find the package folder of the Vite plugin.');
    folder = parent;
  }
  return folder;
}

/** Where the package build (`npm run build:lib`, run by `npm pack`) puts what the Vite plugin and other apps serve. */
export const PACKAGE_FILES = {
  /** A web root's worth of prebuilt files: `service-worker.js` (for apps without the plugin) and `lantern/`. */
  static: join(packageRoot(), 'dist', 'static'),
  /** Lantern's service worker with `self.__WB_MANIFEST` still in it, for the plugin to fill in. */
  serviceWorkerTemplate: join(packageRoot(), 'dist', 'templates', 'service-worker.js'),
  /** The bundled tiny models, one folder each (`tiny-chat`, `tiny-think`, `tiny-embed`). */
  models: join(packageRoot(), 'dist', 'models'),
} as const;
