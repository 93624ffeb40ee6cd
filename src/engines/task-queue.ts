import { EngineError } from '../engine-interface/index.ts';

/**
 * Runs tasks one at a time, in arrival order. transformers.js sends every run in a JS realm through one promise chain
 * and onnxruntime-web does not run one session concurrently, so an engine serialises its model runs here, where a
 * waiting task whose caller aborts is answered at once and skipped when its turn comes, instead of running for nobody.
 */
export class TaskQueue {
  #tail: Promise<void> = Promise.resolve();

  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(new EngineError('aborted', 'The request was cancelled by the client.'));
      // An already-aborted signal never fires `abort` again: answer now rather than wait a turn behind every task.
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      // The turn settles only when the task does, so the next task never overlaps this one.
      this.#tail = this.#tail.then(async () => {
        signal?.removeEventListener('abort', onAbort);
        if (signal?.aborted) return onAbort();
        try {
          resolve(await task());
        } catch (error) {
          reject(error);
        }
      });
    });
  }
}
