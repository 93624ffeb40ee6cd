import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'vite';
import { lantern } from '../../src/vite/index.ts';

/** Where the next release's build goes (git-ignored), for `startServer(port, {}, {}, NEXT_RELEASE)`. */
export const NEXT_RELEASE = 'dist-e2e-next';

const PROTOCOL = /export const PROTOCOL_VERSION = (\d+);/;

/**
 * Builds the harness page, the service worker and the engine worker as the app's next release would ship them: the
 * same code, with Lantern's `PROTOCOL_VERSION` one higher, into `dist-e2e-next`; resolves with the two versions. The
 * service worker and the engine worker are bundled apart from the app's Vite config (`src/vite/bundle.ts`), so no
 * plugin of this build reaches them: the build runs on a copy of the sources (in the OS's temporary folder, removed
 * after) whose protocol.ts says the next version. Only the harness page is built (about 10 s on two cores).
 */
export async function buildNextRelease(): Promise<{ current: number; next: number }> {
  const root = process.cwd();
  const copy = await mkdtemp(join(tmpdir(), 'lantern-next-release-'));
  try {
    for (const folder of ['src', 'sw', 'test']) await cp(join(root, folder), join(copy, folder), { recursive: true });
    await cp(join(root, 'tsconfig.json'), join(copy, 'tsconfig.json'));
    await symlink(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const protocolFile = join(copy, 'src/worker/protocol.ts');
    const source = await readFile(protocolFile, 'utf8');
    const current = Number(PROTOCOL.exec(source)?.[1]);
    if (!Number.isInteger(current)) throw new Error(`no PROTOCOL_VERSION in ${protocolFile}`);
    await writeFile(protocolFile, source.replace(PROTOCOL, `export const PROTOCOL_VERSION = ${current + 1};`));
    await build({
      configFile: false,
      root: copy,
      mode: 'e2e',
      logLevel: 'warn',
      publicDir: join(root, 'public'),
      build: {
        target: 'es2022',
        outDir: resolve(root, NEXT_RELEASE),
        emptyOutDir: true,
        reportCompressedSize: false,
        rollupOptions: { input: { harness: join(copy, 'test/e2e/harness.html') } },
      },
      plugins: [
        lantern({
          serviceWorker: 'sw/service-worker.ts',
          engineWorker: 'src/worker/engine-worker.ts',
          precache: (file) => !file.endsWith('/reference.json'),
        }),
      ],
    });
    return { current, next: current + 1 };
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}
