import * as Comlink from 'comlink';
import {
  EngineError,
  type ModelTask,
  type RunsOn,
  type TaskEvent,
  type TaskResult,
} from '../engine-interface/index.ts';
import { engineOf } from '../engines/engine-registry.ts';
import type { LocalEngine, LocalTarget } from '../engines/local-engine.ts';
import { candidateKey, type CandidateFailure } from '../models/model-profile.ts';
import {
  CALLER_ALIVE_MS,
  CALLER_SILENCE_MS,
  type CallMessage,
  type EngineStatus,
  type EngineWorkerApi,
  type RunReport,
  type WorkerAnswers,
} from './protocol.ts';

/** How the worker answers one task: the run report's token counts, and what crosses back (moved, not copied). */
interface WorkerTask<T extends ModelTask> {
  usage(result: TaskResult<T>): { promptTokens: number; completionTokens: number };
  answer(result: TaskResult<T>): WorkerAnswers[T];
  /** What of an event's memory moves to the caller rather than being copied (its owner never reads it again). */
  transfer?(event: TaskEvent<T>): Transferable[];
}

/** Each task's report and answer. */
const WORKER_TASKS: { [T in ModelTask]: WorkerTask<T> } = {
  // The events carried the choices: only the usage goes back.
  chat: { usage: (r) => r.usage, answer: (r) => r.usage },
  embeddings: {
    usage: (r) => ({ promptTokens: r.usage.promptTokens, completionTokens: 0 }),
    // Move the vectors' memory to the caller instead of copying it.
    answer: (r) =>
      Comlink.transfer(
        r,
        r.embeddings.map((v) => v.buffer as ArrayBuffer),
      ),
  },
  // The transcript's text came in `delta` events too; the result carries the segments and words the formats need.
  transcription: { usage: (r) => ({ promptTokens: 0, completionTokens: r.usage.outputTokens }), answer: (r) => r },
  // The audio came in `audio` events, each chunk's bytes moved rather than copied (the encoder made them for this call).
  speech: {
    usage: (r) => ({ promptTokens: r.usage.inputTokens, completionTokens: r.usage.outputTokens }),
    answer: (r) => r,
    transfer: (event) => (event.type === 'audio' ? [event.bytes.buffer as ArrayBuffer] : []),
  },
};

export interface WorkerApiHooks {
  /** Every finished run. */
  report(report: RunReport): void;
  /** Whether run reports carry each event's timestamp. */
  trace?: () => boolean;
  /**
   * The engine can no longer be trusted; called once, after the failing call's answer is on its way. With `failed`, a
   * candidate's load broke it: the realm that replaces this one should not load it again (the walk skips it).
   */
  fatal(reason: string, failed?: CandidateFailure): void;
  /**
   * A failure as the error that says why, when the call cannot tell (a lost GPU device: see GpuDeviceWatch); undefined
   * leaves it as it is.
   */
  explain?(thrown: unknown): Promise<EngineError | undefined>;
}

/** The caller's heartbeat, as this worker listens for it (see CALLER_ALIVE_MS, CALLER_SILENCE_MS); tests shorten it. */
export interface HeartbeatOptions {
  /** How often the caller says `alive`: the worker looks for a word from it as often. */
  aliveMs?: number;
  /** How long the worker may listen without a word from its caller before it aborts the call. */
  silenceMs?: number;
}

/**
 * The API that an engine worker exposes on each connected port: the local engine's `run`, each call with its own port for
 * pushed events and abort, a report of every run, and a call for help when the engine breaks. `status()` counts the
 * calls in flight, whichever port they came on.
 *
 * Once a failure broke the realm (its engine's descriptor says which do: `breaksRealm`), the realm answers nothing more: a call that arrives after, or
 * fails after (its failure may be the break's doing, not its candidate's), waits for its connection to go with the
 * worker, and the router's walk sends it to the next one (`engine_lost`).
 */
export function createWorkerApi(
  engine: () => LocalEngine,
  hooks: WorkerApiHooks,
  heartbeat: HeartbeatOptions = {},
): EngineWorkerApi & { status(): EngineStatus } {
  const { aliveMs = CALLER_ALIVE_MS, silenceMs = CALLER_SILENCE_MS } = heartbeat;
  let calls = 0;
  /** Set once a failure broke this realm: it answers nothing more. */
  let broken = false;
  const unanswered = () => new Promise<never>(() => {});

  /**
   * Runs one call with its own port: `abort` on the port aborts it; `end` is sent when it is over, after every event,
   * so that the caller can wait for the last event before it answers.
   */
  async function withCallPort<T>(
    port: MessagePort,
    target: LocalTarget,
    run: (
      signal: AbortSignal,
      onEvent: (event: TaskEvent<ModelTask>) => void,
      onBackend: (backend: string, runsOn?: RunsOn) => void,
    ) => Promise<T>,
    usage: (result: T) => { promptTokens: number; completionTokens: number },
    transfer?: (event: TaskEvent<ModelTask>) => Transferable[],
  ): Promise<T> {
    const abort = new AbortController();
    let heard = true;
    let silence = 0;
    port.onmessage = (message: MessageEvent<CallMessage>) => {
      heard = true;
      if (message.data.type === 'abort') abort.abort();
    };
    // Silence is counted by a timer, whose callbacks run only when this thread's event loop is free, and so could
    // have heard the caller; not by the clock. A forward pass that blocks the thread for seconds (a long prefill on the
    // CPU) then counts as one look, however long it took, and the `alive`s queued meanwhile are heard before the next.
    const watch = setInterval(() => {
      silence = heard ? 0 : silence + aliveMs;
      heard = false;
      if (silence >= silenceMs) abort.abort();
    }, aliveMs);
    abort.signal.addEventListener('abort', () => clearInterval(watch), { once: true }); // nothing left to watch for
    const started = performance.now();
    let events = 0;
    let eventsAfterAbort = 0;
    const tokenTimes: number[] | undefined = hooks.trace?.() ? [] : undefined;
    const send = (event: TaskEvent<ModelTask>) => {
      if (event.type === 'delta') tokenTimes?.push(performance.timeOrigin + performance.now());
      events += 1;
      if (abort.signal.aborted) eventsAfterAbort += 1;
      port.postMessage({ type: 'event', event } satisfies CallMessage, transfer?.(event) ?? []);
    };
    calls += 1;
    /** The candidate that took the call (its `candidateKey`), once one has. */
    let backend: string | undefined;
    const finish = (outcome: RunReport['outcome'], tokens = { promptTokens: 0, completionTokens: 0 }) =>
      hooks.report({
        model: target.id,
        task: target.task,
        outcome,
        ...tokens,
        events,
        eventsAfterAbort,
        milliseconds: performance.now() - started,
        ...(tokenTimes && { tokenTimes }),
      });
    try {
      const onBackend = (key: string, runsOn?: RunsOn) => {
        backend = key;
        port.postMessage({ type: 'backend', backend: key, ...(runsOn && { runsOn }) } satisfies CallMessage);
      };
      const result = await run(abort.signal, send, onBackend);
      finish('completed', usage(result));
      return result;
    } catch (thrown) {
      const error = (await hooks.explain?.(thrown)) ?? EngineError.from(thrown);
      if (broken) return unanswered();
      finish(error.kind);
      // A failure that breaks its realm, on an engine whose failures do (transformers.js: one failed load or run leaves
      // its shared promise chain rejected, failing every later call; transformers.js#1635, #1767): the worker cannot
      // be trusted. Ask for a replacement only once this call's answer is on its way: the host terminates the worker
      // at once. A failed load (no candidate took the call) names its candidate, for the next realm to skip.
      if (engineOf(target.candidate).breaksRealm(error.kind)) {
        broken = true;
        const failed =
          backend === undefined && error.kind === 'load_failed'
            ? { candidate: candidateKey(target.candidate), reason: error.message }
            : undefined;
        const reason = failed ? `${failed.candidate} could not be loaded (${error.message})` : error.message;
        setTimeout(() => hooks.fatal(reason, failed), 0);
      }
      throw error;
    } finally {
      clearInterval(watch);
      calls -= 1;
      port.postMessage({ type: 'end' } satisfies CallMessage);
      port.close();
    }
  }

  return {
    status: () => ({ calls }),

    run: async (task, target, request, port) => {
      if (broken) return unanswered();
      const { usage, answer, transfer } = WORKER_TASKS[task] as WorkerTask<typeof task>;
      const result = await withCallPort(
        port,
        target,
        (signal, onEvent, onBackend) => engine().run(task, target, request, { signal, onEvent, onBackend }),
        usage,
        transfer as ((event: TaskEvent<ModelTask>) => Transferable[]) | undefined,
      );
      return answer(result);
    },
  };
}
