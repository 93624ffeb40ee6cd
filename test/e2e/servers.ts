import { test } from '@playwright/test';
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import type { Connect, Plugin } from 'vite';
import { preview } from 'vite';
import { lantern } from '../../src/vite/lantern-plugin.ts';

export interface TestServer {
  origin: string;
  /** While true, files under `/e2e/late-chat/` answer 404, as if their download failed. */
  withhold: boolean;
  /** While true, onnxruntime-web's binaries answer 503, as if the network went before their download. */
  withholdRuntime: boolean;
  /** The next file asked for under `/e2e/late-chat/` starts this many milliseconds late, as over a slow network. */
  stallMs: number;
  /**
   * While set, `/service-worker.js` is served with this text appended (a comment): a service worker that differs from
   * the one installed, as an app update deploys, without another build.
   */
  serviceWorkerSuffix: string | undefined;
  close(): Promise<void>;
}

/**
 * A port of this Playwright worker's own: `base` in the first worker, `base + 100` in the second, and so on, so that
 * the servers (and drivers) of tests running side by side in two workers never ask for the same port.
 */
export function workerPort(base: number, parallelIndex = test.info().parallelIndex): number {
  return base + 100 * parallelIndex;
}

const TYPES: Record<string, string> = { '.json': 'application/json', '.onnx': 'application/octet-stream' };

/** Serves the files of `folder` under the URL prefix `at` (a model kept outside the project, such as ../shared). */
function mount(at: string, folder: string): Connect.NextHandleFunction {
  return (req, res, next) => {
    const path = decodeURIComponent(req.url?.split('?')[0] ?? '');
    if (!path.startsWith(at)) return next();
    const file = normalize(join(folder, path.slice(at.length)));
    if (!file.startsWith(normalize(folder))) return next();
    let size: number;
    try {
      const stat = statSync(file);
      if (!stat.isFile()) return next();
      size = stat.size;
    } catch {
      return next();
    }
    res.setHeader('content-type', TYPES[extname(file)] ?? 'application/octet-stream');
    res.setHeader('content-length', size);
    createReadStream(file).pipe(res);
  };
}

/**
 * A server of its own for a test that needs one: to go offline (close it), to withhold files, to send other headers
 * (cross-origin isolation, a Content-Security-Policy) than the shared one, or to serve folders from outside the
 * project (`mounts`: URL prefix → folder), or to serve another build (`outDir`: the next release of the app).
 */
export async function startServer(
  port: number,
  headers: Record<string, string> = {},
  mounts: Record<string, string> = {},
  outDir = 'dist-e2e',
): Promise<TestServer> {
  // What the test sets, read by the middlewares on each request: the object startServer returns.
  const state: Omit<TestServer, 'close'> = {
    origin: `http://127.0.0.1:${port}`,
    withhold: false,
    withholdRuntime: false,
    stallMs: 0,
    serviceWorkerSuffix: undefined,
  };
  const updating: Connect.NextHandleFunction = (req, res, next) => {
    if (state.serviceWorkerSuffix === undefined || req.url?.split('?')[0] !== '/service-worker.js') return next();
    res.setHeader('content-type', 'text/javascript');
    res.setHeader('cache-control', 'no-cache');
    res.end(readFileSync(join(outDir, 'service-worker.js'), 'utf8') + state.serviceWorkerSuffix);
  };
  const withholding: Connect.NextHandleFunction = (req, res, next) => {
    if (state.withholdRuntime && /\/ort-wasm[^/]*\.wasm$/.test(req.url ?? '')) {
      res.statusCode = 503;
      res.end('withheld by the test');
      return;
    }
    if (state.stallMs && req.url?.startsWith('/e2e/late-chat/')) {
      const stall = state.stallMs;
      state.stallMs = 0; // (the first file only: the others follow it)
      setTimeout(next, stall);
      return;
    }
    if (!state.withhold || !req.url?.startsWith('/e2e/late-chat/')) return next();
    res.statusCode = 404;
    res.setHeader('cache-control', 'no-store');
    res.end('withheld by the test');
  };
  const plugin: Plugin = {
    name: 'lantern-test-server',
    configurePreviewServer: (server) => {
      server.middlewares.use(withholding);
      server.middlewares.use(updating);
      for (const [at, folder] of Object.entries(mounts)) server.middlewares.use(mount(at, folder));
    },
  };
  const server = await preview({
    mode: 'e2e',
    configFile: false,
    // Lantern's plugin too, as the app's `vite preview` has it (model weights sent uncompressed).
    plugins: [plugin, lantern()],
    build: { outDir },
    preview: { host: '127.0.0.1', port, strictPort: true, headers },
    logLevel: 'silent',
  });
  let closed = false;
  return Object.assign(state, {
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
    },
  });
}
