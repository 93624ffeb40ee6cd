import { typescriptWorker } from '../../scripts/typescript-worker.ts';
import type { RunReport } from '../../src/worker/protocol.ts';
import type { EngineThreadOptions } from './engine-thread.ts';

/**
 * Starts test/support/engine-thread.ts in a worker thread (through tsx, which runs its TypeScript) and resolves once
 * it listens: `port` leads to its engine API, `reports` fills with its run reports.
 */
export async function startEngineThread(options: EngineThreadOptions) {
  const { port1, port2 } = new MessageChannel();
  const worker = typescriptWorker(new URL('./engine-thread.ts', import.meta.url), {
    workerData: { ...options, port: port1 },
    transferList: [port1 as never],
  });
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
