import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running the TypeScript module `entry` as this process does, through tsx. An evaluated worker script
 * starts as CommonJS, with `require`, `module` and `exports` on its global object: they are removed first, so that
 * the module sees the ES module realm the main thread sees (web-xgrammar's UMD bundle would otherwise register itself
 * on that `exports`).
 */
export function typescriptWorker(entry: URL, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  return new Worker(
    `for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) delete globalThis[name];
    import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`,
    { ...options, eval: true },
  );
}
