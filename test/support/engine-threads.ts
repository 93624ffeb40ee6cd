import { Worker } from 'node:worker_threads';
import type { RunReport } from '../../src/worker/protocol.ts';
import type { EngineThreadOptions } from './engine-thread.ts';

/**
 * Starts test/support/engine-thread.ts in a worker thread (through tsx, which runs its TypeScript) and resolves once
 * it listens: `port` leads to its engine API, `reports` fills with its run reports.
 */
export async function startEngineThread(options: EngineThreadOptions) {
  const { port1, port2 } = new MessageChannel();
  const entry = new URL('./engine-thread.ts', import.meta.url).href;
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, workerData: { ...options, port: port1 }, transferList: [port1 as never] },
  );
  const reports: RunReport[] = [];
  await new Promise<void>((resolve, reject) => {
    worker.on('error', reject);
    worker.on('message', (message: RunReport | 'ready') => {
      if (message === 'ready') resolve();
      else reports.push(message);
    });
  });
  return { port: port2, reports, stop: () => worker.terminate() };
}
