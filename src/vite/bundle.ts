import type { InlineConfig, Rollup } from 'vite';

/** Built files by name (relative to the entry's own file): code as text, assets as bytes or text. */
export type BuiltFiles = Map<string, string | Uint8Array>;

export interface BundleOptions {
  /** The project folder that the entry's imports resolve from. */
  root: string;
  /** The Vite mode; `development` keeps workbox's logging, any other mode drops it. */
  mode: string;
  /** The name of an ES module entry's file; default `engine-worker.js`. */
  entryFileName?: string;
  /** Imports left as they are, resolved when the built module runs. */
  external?: string[];
  /** What an external import becomes in the built code (a path relative to the importing file, say). */
  paths?: Record<string, string>;
}

/**
 * Builds one browser entry with Vite, in memory and apart from the app's own config: an engine worker as an ES module
 * (`es`) named `engine-worker.js` (or an optional encoder's module, named as asked), its chunks and assets
 * (onnxruntime-web's files) beside it and found relative to it wherever it is served; or a service worker as one
 * classic script (`iife`) named `service-worker.js`, as every browser can register it.
 */
export async function bundle(entry: string, format: 'es' | 'iife', options: BundleOptions): Promise<BuiltFiles> {
  const { build } = await import('vite');
  const config: InlineConfig = {
    configFile: false,
    envDir: false,
    root: options.root,
    mode: options.mode,
    publicDir: false,
    logLevel: 'warn',
    // Asset URLs relative to the importing file (`new URL(…, import.meta.url)`), not to the page.
    base: './',
    // workbox logs in development builds only.
    define: { 'process.env.NODE_ENV': JSON.stringify(options.mode === 'development' ? 'development' : 'production') },
    build: {
      write: false,
      target: 'es2022',
      modulePreload: false,
      reportCompressedSize: false,
      assetsDir: '',
      // A strict Content-Security-Policy refuses data: URLs for scripts and WebAssembly: always emit files.
      assetsInlineLimit: 0,
      rollupOptions: {
        input: entry,
        ...(options.external ? { external: options.external } : {}),
        onLog: withoutExpectedWarnings(format),
        // An app's build drops its entries' exports; a module that others import (an optional encoder) keeps them.
        preserveEntrySignatures: 'exports-only',
        output:
          format === 'iife'
            ? { format: 'iife', entryFileNames: 'service-worker.js' }
            : {
                format: 'es',
                entryFileNames: options.entryFileName ?? 'engine-worker.js',
                ...(options.paths ? { paths: options.paths } : {}),
                chunkFileNames: '[name]-[hash].js',
                assetFileNames: '[name]-[hash][extname]',
              },
      },
    },
  };
  const result = await build(config);
  const outputs = (Array.isArray(result) ? result : [result]) as Rollup.RollupOutput[];
  const files: BuiltFiles = new Map();
  for (const item of outputs.flatMap((output) => output.output)) {
    files.set(item.fileName, item.type === 'chunk' ? item.code : item.source);
  }
  return files;
}

/**
 * The warnings of these builds that need no one's attention, each for a reason that holds in every build:
 * - `EMPTY_IMPORT_META` in a service worker (a classic script, `iife`, has no `import.meta`: it becomes `{}`): the code
 *   that reads it there never runs in a service worker. unpdf's is on its Node path (`createRequire(import.meta.url)`
 *   for Node's canvas and streams), and Vite's preload helper's (wrapping `import('unpdf')`, a base for preloads) is
 *   for chunks, which a one-file script does not have.
 * - `@mlc-ai/web-xgrammar`'s imports of Node's `module` and `url`, which Vite leaves out of a browser build: its
 *   Emscripten glue makes them only under `ENVIRONMENT_IS_NODE`.
 * Anything else, and every error, is reported as Vite would.
 */
function expectedWarning(log: Rollup.RollupLog, format: 'es' | 'iife'): boolean {
  if (log.code === 'EMPTY_IMPORT_META') return format === 'iife';
  return (
    log.plugin === 'rolldown:vite-resolve' &&
    /Module "(module|url)" has been externalized for browser compatibility/.test(log.message) &&
    log.message.includes('@mlc-ai/web-xgrammar')
  );
}

/** A build's `onLog`: Vite's own handling, without the warnings {@link expectedWarning} lets pass. */
export function withoutExpectedWarnings(format: 'es' | 'iife'): NonNullable<Rollup.InputOptions['onLog']> {
  return (level, log, handler) => {
    if (level === 'warn' && expectedWarning(log, format)) return;
    handler(level, log);
  };
}
