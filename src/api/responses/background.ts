import type { Context } from 'hono';
import type { ResponseStore } from '../../response-store/index.ts';
import { ApiError } from '../errors.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import { eventStream } from '../sse.ts';
import { itemIds, ownResponse, type KeptResponse } from './conversation.ts';
import type { UnsequencedEvent } from './output.ts';
import type { Response, ResponseStreamEvent } from './wire.ts';

/*
 * Background responses (`background: true`, issue 66): the answer is the response, `queued`, at once; the generation
 * runs on, detached from its request (whose abort no longer stops it), its events kept in memory so that its stream
 * can be followed, dropped and resumed (`GET /v1/responses/{id}?stream=true&starting_after=N`), and its record in the
 * response store updated when it ends. `POST /v1/responses/{id}/cancel` stops it.
 */

/**
 * How long the events of a finished background response are kept, to stream it again: ten minutes, the time OpenAI
 * keeps a background response's data for polling ("roughly 10 minutes", its background mode guide). A client that
 * lost its stream reconnects within seconds, so this is ample; the bound is memory, about 300 bytes an event (one a
 * token), some 1.2 MB for a response of the largest `max_output_tokens` (4,096).
 */
export const FINISHED_EVENTS_MS = 10 * 60_000;

/**
 * Most finished background responses whose events one key keeps (its oldest let go first): with FINISHED_EVENTS_MS
 * it bounds memory whatever a key's traffic, and per key, so that no key's flood forgets another's events (issue 22).
 */
export const MAX_FINISHED_RUNS_PER_KEY = 16;

/** Statuses of a response that has not ended. */
const RUNNING = new Set(['queued', 'in_progress']);

/** One background response's run: its response as it stands and every event of its stream so far. */
export class BackgroundRun {
  readonly events: ResponseStreamEvent[] = [];
  /** Aborted by a cancel: the engine stops. */
  readonly abort = new AbortController();
  /** When it ended (ms since the epoch), or null while it runs. */
  finishedAt: number | null = null;
  /** Ends when the run has, however it did (it never rejects). */
  ended: Promise<void> = Promise.resolve();
  #wake: (() => void)[] = [];

  constructor(
    readonly owner: string,
    /** The response object the generation writes into; shown as it stands while the run is alive. */
    readonly response: Response,
  ) {}

  /** Logs an event with the next sequence number, and wakes the streams following the run. */
  readonly emit = (event: UnsequencedEvent): void => {
    // Events that carry the response carry it as it was then: the object goes on changing.
    const logged = 'response' in event ? { ...event, response: structuredClone(event.response) } : event;
    this.events.push({ ...logged, sequence_number: this.events.length } as ResponseStreamEvent);
    this.#wakeAll();
  };

  /** Resolves at the next event, at the run's end, or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    if (this.finishedAt !== null || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      this.#wake.push(done);
    });
  }

  finish(at: number): void {
    this.finishedAt = at;
    this.#wakeAll();
  }

  #wakeAll(): void {
    const waiting = this.#wake;
    this.#wake = [];
    for (const wake of waiting) wake();
  }
}

/**
 * The background runs of one handler, by response id: every one still running, and the finished ones of the last
 * FINISHED_EVENTS_MS (at most MAX_FINISHED_RUNS_PER_KEY a key), whose events can be streamed again.
 */
export class BackgroundRuns {
  readonly #runs = new Map<string, BackgroundRun>();
  readonly #now: () => number;
  readonly #keepAlive: ((work: Promise<void>) => void) | undefined;
  readonly #onError: (error: unknown) => void;

  constructor(options: {
    now: () => number;
    /** Told of each run as it starts: a service worker keeps itself alive for it. */
    keepAlive?: ((work: Promise<void>) => void) | undefined;
    /** Told of a run that failed outside its generation (a bug: the generation's own failures end it `failed`). */
    onError: (error: unknown) => void;
  }) {
    this.#now = options.now;
    this.#keepAlive = options.keepAlive;
    this.#onError = options.onError;
  }

  /**
   * Starts `work` detached from any request, as the run of `response` (its record already stored): `emit` logs its
   * events, and `signal` aborts when it is cancelled.
   */
  start(
    owner: string,
    response: Response,
    work: (emit: (event: UnsequencedEvent) => void, signal: AbortSignal) => Promise<void>,
  ): BackgroundRun {
    this.#prune();
    const run = new BackgroundRun(owner, response);
    this.#runs.set(response.id, run);
    run.ended = work(run.emit, run.abort.signal)
      .catch(this.#onError)
      .finally(() => run.finish(this.#now()));
    this.#keepAlive?.(run.ended);
    return run;
  }

  /** The run of this key's response `id`, running or finished within FINISHED_EVENTS_MS, if this handler has it. */
  get(owner: string, id: string): BackgroundRun | undefined {
    this.#prune();
    const run = this.#runs.get(id);
    return run?.owner === owner ? run : undefined;
  }

  /** Forgets the events of runs finished over FINISHED_EVENTS_MS ago, and each key's oldest past its count. */
  #prune(): void {
    const finished = new Map<string, BackgroundRun[]>();
    for (const [id, run] of this.#runs) {
      if (run.finishedAt === null) continue;
      if (this.#now() - run.finishedAt > FINISHED_EVENTS_MS) this.#runs.delete(id);
      else finished.set(run.owner, [...(finished.get(run.owner) ?? []), run]);
    }
    for (const runs of finished.values()) {
      runs.sort((a, b) => a.finishedAt! - b.finishedAt!);
      for (const run of runs.slice(0, Math.max(0, runs.length - MAX_FINISHED_RUNS_PER_KEY))) {
        this.#runs.delete(run.response.id);
      }
    }
  }
}

/**
 * Starts a response in the background: it is kept `queued` first (it is polled for by its id: one the store cannot keep
 * is refused), then `generate` runs detached from the request, its events logged, its end kept (`keepIt`: a completed
 * response is kept by `generate` itself). A cancel's abort ends it `cancelled`, its open items `incomplete`.
 */
export async function startInBackground(
  deps: Pick<RouteDeps, 'responses' | 'background' | 'now'>,
  c: Context<Env>,
  kept: KeptResponse,
  keepIt: () => Promise<boolean>,
  generate: (emit: (event: UnsequencedEvent) => void, signal: AbortSignal, start: () => void) => Promise<void>,
): Promise<BackgroundRun> {
  const owner = c.get('key').id;
  const { response } = kept;
  Object.assign(response, { status: 'queued', background: true } satisfies Partial<Response>);
  if (!(await keep(deps.responses, owner, kept, deps.now()))) {
    throw new ApiError(
      400,
      'This response is too large for the response store to keep, and a background response must be kept.',
      { param: 'input' },
    );
  }
  return deps.background.start(owner, response, async (emit, signal) => {
    emit({ type: 'response.created', response });
    emit({ type: 'response.queued', response });
    try {
      await generate(emit, signal, () => {
        response.status = 'in_progress';
        emit({ type: 'response.in_progress', response });
      });
    } catch (error) {
      // The generation ends every failure itself (`failed`) but an abort, which only a cancel makes.
      if (!signal.aborted) throw error;
      response.status = 'cancelled';
      for (const item of response.output) if (item.status === 'in_progress') item.status = 'incomplete';
    }
    if (response.status === 'failed' || response.status === 'cancelled') await keepIt();
  });
}

export const responseNotFound = (id: string) =>
  new ApiError(404, `Response with id '${id}' not found.`, { param: 'response_id', code: 'not_found' });

/**
 * A kept response as it stands. A background response the store still shows running is shown from its run, while it
 * runs here; with no run here, its run died with the process or service worker that ran it (nothing else ends one
 * without writing its end), so it reads as `failed`, as OpenAI shows a response its servers could not finish, and is
 * kept so (best effort: the next read concludes the same).
 */
export async function currentResponse(
  { responses, background, now }: Pick<RouteDeps, 'responses' | 'background' | 'now'>,
  owner: string,
  kept: KeptResponse,
): Promise<Response> {
  const { response } = kept;
  if (!response.background || !RUNNING.has(response.status)) return response;
  const run = background.get(owner, response.id);
  // A finished run whose end the store failed to keep is still shown as it ended, while its events are kept.
  if (run) return shown(run.response);
  Object.assign(response, {
    status: 'failed',
    error: {
      code: 'server_error',
      message:
        'The background run of this response stopped before it ended: the server or service worker running it ' +
        'was stopped or restarted. Create the response again.',
    },
  } satisfies Partial<Response>);
  await keep(responses, owner, kept, now()).catch(() => {});
  return response;
}

/** A running response as it stands, its `output_text` that of the output written so far. */
function shown(response: Response): Response {
  const copy = structuredClone(response);
  copy.output_text = copy.output
    .flatMap((item) => (item.type === 'message' ? item.content.map((part) => part.text) : []))
    .join('');
  return copy;
}

/** Writes a kept response's record again, as it now stands. */
export function keep(store: ResponseStore, owner: string, kept: KeptResponse, storedAt: number): Promise<boolean> {
  return store.put({ id: kept.response.id, owner, storedAt, itemIds: itemIds(kept), data: kept });
}

/**
 * The events of a background response after `startingAfter`, then its live ones until it ends: a stream a client
 * can drop and take up again after the last sequence number it read. Closing it leaves the run alone.
 */
export function followRun(
  run: BackgroundRun,
  startingAfter: number,
  c: Context<Env>,
  deps: Pick<RouteDeps, 'errorBody'>,
) {
  return eventStream(
    async (send, signal) => {
      let next = startingAfter + 1;
      for (;;) {
        for (; next < run.events.length; next++) send(run.events[next], run.events[next]!.type);
        if (run.finishedAt !== null || signal.aborted) return;
        await run.next(signal);
      }
    },
    {
      signal: c.req.raw.signal,
      errorBody: (error) => deps.errorBody(error, c.get('requestId')),
      doneFrame: false,
    },
  );
}

/**
 * `GET /v1/responses/{id}?stream=true`: a background response's stream from the start, or after `starting_after`.
 * Its events are kept while it runs and for FINISHED_EVENTS_MS after; later, or for a response that did not run in
 * the background, there is nothing to stream (400, as OpenAI refuses to stream a response it has no stream of).
 */
export async function streamResponse(deps: RouteDeps, c: Context<Env>, response: Response) {
  const after = c.req.query('starting_after');
  const startingAfter = after === undefined ? -1 : Number(after);
  if (!Number.isSafeInteger(startingAfter) || startingAfter < -1 || after === '') {
    throw new ApiError(400, "Invalid 'starting_after': expected a sequence number (an integer, 0 or more).", {
      param: 'starting_after',
      code: 'invalid_value',
    });
  }
  if (!response.background) {
    throw new ApiError(400, 'Only a response created with `background: true` can be streamed again.', {
      param: 'stream',
    });
  }
  const run = deps.background.get(c.get('key').id, response.id);
  if (!run) {
    throw new ApiError(
      400,
      `The events of response '${response.id}' are no longer kept (they are kept ${FINISHED_EVENTS_MS / 60_000} ` +
        'minutes after it ends): retrieve it without `stream`.',
      { param: 'stream' },
    );
  }
  return followRun(run, startingAfter, c, deps);
}

/** Stops this key's background response `id` if it runs here, resolving once its run has ended (and kept its end). */
export async function stopRun(runs: BackgroundRuns, owner: string, id: string): Promise<void> {
  const run = runs.get(owner, id);
  if (!run || run.finishedAt !== null) return;
  run.abort.abort();
  await run.ended;
}

/**
 * `POST /v1/responses/{id}/cancel`: stops a running background response, which ends `cancelled` with what it had
 * written, and answers with it once it has ended. Cancelling a cancelled one answers with it again, as OpenAI's API
 * does (cancelling is idempotent); one that ended otherwise, or a response that did not run in the background, is
 * a 400, as there.
 */
export function cancelResponse(deps: RouteDeps) {
  return async (c: Context<Env>) => {
    const id = c.req.param('id') ?? '';
    const owner = c.get('key').id;
    const kept = await ownResponse(deps.responses, owner, id);
    if (!kept) throw responseNotFound(id);
    if (!kept.response.background) throw new ApiError(400, 'Cannot cancel a synchronous response.');
    await stopRun(deps.background, owner, id);
    // Read again: the run wrote its end.
    const after = (await ownResponse(deps.responses, owner, id)) ?? kept;
    const response = await currentResponse(deps, owner, after);
    if (response.status !== 'cancelled') {
      const article = response.status === 'incomplete' ? 'an' : 'a';
      throw new ApiError(400, `Cannot cancel ${article} ${response.status} response.`);
    }
    return c.json<Response>(response);
  };
}
