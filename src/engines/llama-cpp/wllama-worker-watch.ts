import { EngineError } from '../../engine-interface/index.ts';

/** The part of wllama 2's proxy to its worker (`ProxyToWorker`, 2.3.7) that Lantern stops when the worker fails. */
interface WorkerProxy {
  worker?: Worker;
  /** Rejects every call waiting on the worker (private in wllama: what it does on llama.cpp's own abort). */
  abort(message: string): void;
}

/** What {@link watchWorker} gives: the constructor's logger, and what became of the worker. */
export interface WorkerWatch {
  /** The logger to construct the Wllama with: its `error` is also wllama's `worker.onerror`. */
  logger: { debug(): void; log(): void; warn(): void; error(...args: unknown[]): void };
  /** Starts watching a Wllama just constructed with `logger`. */
  watch(wllama: object): void;
  /** Why the worker was lost, once it was. */
  lost(): string | undefined;
  /** `call`, failing as `engine_lost` once the worker is lost (whatever wllama said, or that it is not loaded). */
  guard<A extends unknown[], R>(call: (...args: A) => Promise<R>): (...args: A) => Promise<R>;
}

/**
 * A watch on wllama 2's worker. wllama only logs a failure of its worker (`worker.onerror = logger.error`), so every
 * call waiting on that worker, and every one after, would wait forever (seen in Firefox). Here a failure of the
 * worker, or llama.cpp's own abort (after which its WebAssembly answers nothing sensible again), loses it: the worker
 * is stopped, the calls waiting on it fail (the proxy's own `abort`), and wllama is left unloaded, so that later calls
 * fail at once and `exit()` has nothing to wait for. Those failures are `engine_lost`: the local engine forgets the
 * model and loads it again for the retry.
 */
export function watchWorker(): WorkerWatch {
  let lost: string | undefined;
  let lose = (_why: string) => {};
  return {
    logger: {
      debug: () => {},
      log: () => {},
      warn: () => {},
      // The worker's `error` event (an ErrorEvent, or a plain Event where its script failed to load), else wllama's
      // own error logs, kept.
      error: (...args) => {
        const [first] = args;
        if (typeof Event === 'function' && first instanceof Event) return lose(eventMessage(first));
        console.error(...args);
      },
    },
    watch(wllama) {
      // wllama creates its proxy when it loads a model: it is watched as it is set.
      let proxy: WorkerProxy | null = null;
      /** wllama's own abort: rejects every call waiting on the worker. */
      let abort: WorkerProxy['abort'] = () => {};
      lose = (why) => {
        if (lost !== undefined || !proxy) return;
        lost = why;
        const failed = proxy;
        proxy = null; // wllama unloaded
        failed.worker?.terminate();
        abort.call(failed, why);
      };
      Object.defineProperty(wllama, 'proxy', {
        configurable: true,
        get: () => proxy,
        set(value: WorkerProxy | null) {
          if (value) {
            const original = (Object.getPrototypeOf(value) as Partial<WorkerProxy>).abort;
            if (typeof original !== 'function') {
              throw new Error(
                'wllama no longer has the worker proxy this project guards: install the version package.json pins',
              );
            }
            abort = original;
            // llama.cpp's own abort (the worker's `signal.abort`) loses the worker too.
            Object.defineProperty(value, 'abort', {
              configurable: true,
              value: (text: string) => lose(`llama.cpp aborted: ${text || 'no reason given'}`),
            });
          }
          proxy = value;
        },
      });
    },
    lost: () => lost,
    guard:
      (call) =>
      async (...args) => {
        try {
          return await call(...args);
        } catch (error) {
          if (lost === undefined) throw error;
          throw new EngineError('engine_lost', `llama.cpp's worker failed (${lost}): the model loads again; retry.`, {
            cause: error,
          });
        }
      },
  };
}

/** What an error event of a worker says. */
function eventMessage(event: Event): string {
  const message = (event as Partial<ErrorEvent>).message;
  return message ? message : `its worker fired ${event.type}`;
}
