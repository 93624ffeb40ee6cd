import type { Connect, Plugin } from 'vite';
import { preview } from 'vite';

export interface TestServer {
  origin: string;
  /** While true, files under `/e2e/late-chat/` answer 404, as if their download failed. */
  withhold: boolean;
  close(): Promise<void>;
}

/**
 * A server of its own for a test that needs one: to go offline (close it), to withhold files, or to send other
 * headers (cross-origin isolation, a Content-Security-Policy) than the shared one.
 */
export async function startServer(port: number, headers: Record<string, string> = {}): Promise<TestServer> {
  const state = { withhold: false };
  const withholding: Connect.NextHandleFunction = (req, res, next) => {
    if (!state.withhold || !req.url?.startsWith('/e2e/late-chat/')) return next();
    res.statusCode = 404;
    res.setHeader('cache-control', 'no-store');
    res.end('withheld by the test');
  };
  const plugin: Plugin = {
    name: 'lantern-test-server',
    configurePreviewServer: (server) => void server.middlewares.use(withholding),
  };
  const server = await preview({
    mode: 'e2e',
    configFile: false,
    plugins: [plugin],
    build: { outDir: 'dist-e2e' },
    preview: { host: '127.0.0.1', port, strictPort: true, headers },
    logLevel: 'silent',
  });
  let closed = false;
  return {
    origin: `http://127.0.0.1:${port}`,
    get withhold() {
      return state.withhold;
    },
    set withhold(value: boolean) {
      state.withhold = value;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
    },
  };
}
