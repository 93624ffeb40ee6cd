import type { DocumentStorage } from '../document-store/index.ts';
import { LibraryError, type FileLibrary, type ListPage, type Metadata } from '../file-search/index.ts';
import { readBatchInput, type BatchRequest } from './batch-input.ts';
import { DEFAULT_BATCH_LIMITS, type BatchLimits } from './batch-limits.ts';
import type { Batch, BatchEndpoint, BatchError, BatchOutputLine, BatchStatus } from './records.ts';

/**
 * Sends one line's request through the API as the batch's key would: the same routes, middleware and limits as a
 * request over HTTP. `owner` is the key's id (its secret is kept nowhere); the dispatch checks that the key is still
 * valid, and answers 401 once it is revoked.
 */
export type BatchDispatch = (owner: string, request: Request) => Promise<Response>;

export interface BatchRunnerOptions {
  /** Where batches and each finished line's result are kept (the Files API's storage). */
  storage: DocumentStorage;
  /** Where input files are read and output and error files written. */
  files: FileLibrary;
  dispatch: BatchDispatch;
  /** Lines of one key's batches running at once, all its batches together. */
  concurrency: number;
  limits?: Partial<BatchLimits>;
  now?: () => number;
  /** Told of each spell of batch work as it starts, and again on each request while it lasts (a service worker waits for it). */
  keepAlive?: (work: Promise<void>) => void;
  /** Told of a failure that is not a line's own (storage failing under a running batch). */
  onError?: (error: unknown) => void;
}

export interface CreateBatchParams {
  inputFileId: string;
  endpoint: BatchEndpoint;
  metadata?: Metadata | null | undefined;
  /** `output_expires_after.seconds`: the output and error files expire this long after they are written. */
  outputExpiresAfterS?: number | undefined;
}

export interface BatchListParams {
  limit?: number | undefined;
  order?: 'asc' | 'desc' | undefined;
  after?: string | undefined;
}

/** How a batch's processing ended, kept from the moment it is known until its files are written. */
type Ending = 'completed' | 'cancelled' | 'expired';

interface BatchRow {
  batch: Batch;
  owner: string;
  createdMs: number;
  outputExpiresAfterS?: number;
  /** Set when the lines are over: a context that finds it writes the files (again, under the same ids) and ends there. */
  ending?: Ending;
  /** The ids of the output and error files, decided before they are written, so that writing them again replaces them. */
  fileIds?: { output: string; error: string };
}

/** A finished line, kept before it counts as done: a resumed batch runs only the lines without one. */
interface ResultRow {
  index: number;
  ok: boolean;
  line: BatchOutputLine;
}

const COMPLETION_WINDOW_S = 24 * 60 * 60;
const UNFINISHED: readonly BatchStatus[] = ['validating', 'in_progress', 'finalizing', 'cancelling'];
/**
 * Answers a line waits out however long they last (until the batch expires): the key's or the engine's limits (429,
 * which a batch shares with the key's other requests), and an engine not there yet (a service worker that no tab hosts
 * an engine for, a GPU being replaced, a remote server restarting).
 */
const WAIT_CODES = new Set(['engine_unavailable', 'gpu_device_lost', 'upstream_unavailable']);
/** Tries of a line whose failure the API says a retry may heal (`x-should-retry`), before it counts as failed. */
const RETRY_TRIES = 3;
const RETRY_MS = { min: 250, default: 1000, max: 30_000 };
/** The origin of dispatched requests: the routes read only the path. */
const INTERNAL_ORIGIN = 'http://lantern.internal';

/**
 * The Batch API of every key: a JSONL file of requests, validated and then run in the background, each line through
 * the API as its key (so the engine batches them with every other request), a few at a time, and an output file and
 * an error file written at the end, in the Files API.
 *
 * Durable: a batch's state and each finished line's result are written to `storage` before the line counts as done.
 * A context stopped mid-batch (a service worker stopped by the browser, a process killed) leaves the batch
 * `in_progress`; {@link wake}, which the handler calls on every request it is given, resumes it once per context:
 * lines with a kept result are never run again, the others run, and the files hold every line once.
 */
export class BatchRunner {
  readonly #storage: DocumentStorage;
  readonly #files: FileLibrary;
  readonly #options: BatchRunnerOptions;
  readonly #limits: BatchLimits;
  readonly #now: () => number;
  /** Batches running in this context, by `owner/id`: their rows as they are now, and how to stop them. */
  readonly #running = new Map<string, { row: BatchRow; stop: AbortController; done: Promise<void> }>();
  /** Each batch's writes, one after another: a later row never lands before an earlier one. */
  readonly #writes = new Map<string, Promise<void>>();
  /** Each key's free line slots, all its batches together. */
  readonly #slots = new Map<string, Slots>();
  #resumed: Promise<void> | undefined;

  constructor(options: BatchRunnerOptions) {
    this.#options = options;
    this.#storage = options.storage;
    this.#files = options.files;
    this.#limits = { ...DEFAULT_BATCH_LIMITS, ...options.limits };
    this.#now = options.now ?? Date.now;
  }

  get limits(): Readonly<BatchLimits> {
    return this.#limits;
  }

  /**
   * Resumes the unfinished batches of every key, once per context (retried on the next call if reading them failed),
   * and tells `keepAlive` of the work under way, so that the request calling it keeps a service worker alive for it.
   */
  wake(): void {
    this.#resumed ??= this.#resume().catch((error: unknown) => {
      this.#resumed = undefined;
      this.#options.onError?.(error);
    });
    if (this.#running.size > 0) this.#options.keepAlive?.(this.#allDone());
  }

  /** Resolves once no batch runs in this context: for tests. */
  async idle(): Promise<void> {
    await this.#resumed;
    while (this.#running.size > 0) await this.#allDone();
  }

  async create(owner: string, params: CreateBatchParams): Promise<Batch> {
    const file = await this.#files.retrieveFile(owner, params.inputFileId).catch((error: unknown) => {
      throw error instanceof LibraryError && error.status === 404
        ? new LibraryError(404, `No file found with id '${params.inputFileId}'.`, {
            param: 'input_file_id',
            code: 'not_found',
          })
        : error;
    });
    if (file.purpose !== 'batch') {
      throw new LibraryError(
        400,
        `File '${file.id}' has purpose '${file.purpose}': a batch's input file is uploaded with purpose 'batch'.`,
        { param: 'input_file_id', code: 'invalid_file' },
      );
    }
    if (file.bytes > this.#limits.maxInputBytes) {
      throw new LibraryError(
        400,
        `The input file is ${file.bytes} bytes, over the limit of ${this.#limits.maxInputBytes} bytes of a batch ` +
          '(batches.limits.maxInputBytes).',
        { param: 'input_file_id', code: 'file_too_large' },
      );
    }
    const rows = await this.#storage.list<BatchRow>('batches', [owner]);
    const active = rows.filter((row) => UNFINISHED.includes(row.batch.status)).length;
    if (active >= this.#limits.maxActiveBatches) {
      throw new LibraryError(
        429,
        `This key has ${active} unfinished batches, the limit (batches.limits.maxActiveBatches). Wait for one to ` +
          'finish, or cancel one.',
        { code: 'rate_limit_exceeded' },
      );
    }
    const createdMs = this.#now();
    const createdAt = Math.floor(createdMs / 1000);
    const row: BatchRow = {
      batch: {
        id: 'batch_' + crypto.randomUUID().replace(/-/g, ''),
        object: 'batch',
        endpoint: params.endpoint,
        errors: null,
        input_file_id: file.id,
        completion_window: '24h',
        status: 'validating',
        output_file_id: null,
        error_file_id: null,
        created_at: createdAt,
        in_progress_at: null,
        expires_at: createdAt + COMPLETION_WINDOW_S,
        finalizing_at: null,
        completed_at: null,
        failed_at: null,
        expired_at: null,
        cancelling_at: null,
        cancelled_at: null,
        request_counts: { total: 0, completed: 0, failed: 0 },
        metadata: params.metadata ?? null,
      },
      owner,
      createdMs,
      ...(params.outputExpiresAfterS !== undefined && { outputExpiresAfterS: params.outputExpiresAfterS }),
    };
    await this.#storage.put('batches', [owner, row.batch.id], row);
    this.#start(row);
    return structuredClone(row.batch);
  }

  async retrieve(owner: string, id: string): Promise<Batch> {
    return structuredClone((await this.#row(owner, id)).batch);
  }

  async list(owner: string, params: BatchListParams): Promise<ListPage<Batch>> {
    const live = (row: BatchRow) => this.#running.get(runKey(owner, row.batch.id))?.row ?? row;
    const rows = (await this.#storage.list<BatchRow>('batches', [owner])).map(live);
    rows.sort((a, b) => a.createdMs - b.createdMs || a.batch.id.localeCompare(b.batch.id));
    if (params.order !== 'asc') rows.reverse();
    let start = 0;
    if (params.after !== undefined) {
      const at = rows.findIndex((row) => row.batch.id === params.after);
      start = at < 0 ? rows.length : at + 1;
    }
    const limit = params.limit ?? 20;
    const data = rows.slice(start, start + limit).map((row) => structuredClone(row.batch));
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: rows.length > start + limit,
    };
  }

  /**
   * Cancels a batch that is validating or in progress: `cancelling` at once, no line starts from then on, the lines
   * running are stopped, and once they have, `cancelled`, with an output and an error file of the lines that finished.
   * A batch already cancelling or cancelled is answered as it is; one that has ended otherwise cannot be cancelled.
   */
  async cancel(owner: string, id: string): Promise<Batch> {
    const row = await this.#row(owner, id);
    const { status } = row.batch;
    if (status === 'cancelling' || status === 'cancelled') return structuredClone(row.batch);
    if (status !== 'validating' && status !== 'in_progress') {
      throw new LibraryError(
        400,
        `Batch '${id}' is ${status}: only a validating or in-progress batch can be cancelled.`,
        {
          param: 'batch_id',
          code: 'invalid_batch_status',
        },
      );
    }
    row.batch.status = 'cancelling';
    row.batch.cancelling_at = this.#seconds();
    await this.#save(row);
    const running = this.#running.get(runKey(owner, id));
    if (running) running.stop.abort();
    else this.#start(row);
    return structuredClone(row.batch);
  }

  // ---- Running ----

  async #resume(): Promise<void> {
    for (const row of await this.#storage.list<BatchRow>('batches', [])) {
      if (UNFINISHED.includes(row.batch.status) && !this.#running.has(runKey(row.owner, row.batch.id))) {
        this.#start(row);
      }
    }
  }

  #start(row: BatchRow): void {
    const key = runKey(row.owner, row.batch.id);
    if (this.#running.has(key)) return;
    const stop = new AbortController();
    const done = this.#run(row, stop.signal)
      .catch((error: unknown) => this.#options.onError?.(error))
      .finally(() => this.#running.delete(key));
    this.#running.set(key, { row, stop, done });
    this.#options.keepAlive?.(this.#allDone());
  }

  /** Resolves when every batch running now has stopped. */
  async #allDone(): Promise<void> {
    await Promise.all([...this.#running.values()].map((run) => run.done));
  }

  async #run(row: BatchRow, stop: AbortSignal): Promise<void> {
    if (row.batch.status === 'validating') await this.#validate(row);
    if (row.batch.status === 'in_progress' && !row.ending) await this.#process(row, stop);
    if (row.batch.status === 'cancelling' && !row.ending) row.ending = 'cancelled';
    if (row.ending) await this.#finalize(row, row.ending);
  }

  async #validate(row: BatchRow): Promise<void> {
    const input = await this.#readInput(row);
    if (!input) return;
    // A cancel that arrived while the file was read: the batch has nothing to run, and ends cancelled.
    if (row.batch.status !== 'validating') return;
    row.batch.status = 'in_progress';
    row.batch.in_progress_at = this.#seconds();
    if (input.model !== undefined) row.batch.model = input.model;
    row.batch.request_counts = { total: input.requests.length, completed: 0, failed: 0 };
    await this.#save(row);
  }

  /** Reads and validates the input file; fails the batch (and answers undefined) when it cannot be run. */
  async #readInput(row: BatchRow): Promise<{ requests: BatchRequest[]; model: string | undefined } | undefined> {
    let bytes: Uint8Array;
    try {
      bytes = (await this.#files.fileContent(row.owner, row.batch.input_file_id)).bytes;
    } catch (error) {
      if (!(error instanceof LibraryError)) throw error;
      await this.#fail(row, [
        {
          code: 'invalid_file',
          line: null,
          message: `The input file could not be read: ${error.message}`,
          param: 'input_file_id',
        },
      ]);
      return undefined;
    }
    const input = readBatchInput(bytes, row.batch.endpoint, this.#limits);
    if (!input.ok) {
      await this.#fail(row, input.errors);
      return undefined;
    }
    return input;
  }

  async #fail(row: BatchRow, errors: BatchError[]): Promise<void> {
    row.batch.status = 'failed';
    row.batch.failed_at = this.#seconds();
    row.batch.errors = { object: 'list', data: errors };
    await this.#save(row);
  }

  /** Runs the lines without a kept result, `concurrency` of the key's at once, until they are done, stopped or expired. */
  async #process(row: BatchRow, stop: AbortSignal): Promise<void> {
    const input = await this.#readInput(row);
    if (!input) return;
    const { owner } = row;
    const id = row.batch.id;
    const kept = await this.#storage.list<ResultRow>('batch_results', [owner, id]);
    const done = new Set(kept.map((result) => result.index));
    row.batch.request_counts = {
      total: input.requests.length,
      completed: kept.filter((result) => result.ok).length,
      failed: kept.filter((result) => !result.ok).length,
    };
    await this.#save(row);

    const pending = input.requests.filter((request) => !done.has(request.index));
    const expired = () => this.#seconds() >= row.batch.expires_at;
    const slots = this.#slotsOf(owner);
    let revoked: BatchError | undefined;
    let next = 0;
    const lane = async () => {
      while (next < pending.length && !stop.aborted && !revoked && !expired()) {
        const release = await slots.acquire(stop);
        if (!release) return;
        try {
          if (next >= pending.length || stop.aborted || revoked || expired()) return;
          const request = pending[next++]!;
          const outcome = await this.#runLine(row, request, stop);
          if (outcome === 'revoked') {
            revoked = {
              code: 'invalid_api_key',
              line: null,
              message: "The batch's API key has been revoked: its remaining lines were not run.",
              param: null,
            };
          } else if (outcome) await this.#keep(row, outcome);
        } finally {
          release();
        }
      }
    };
    await Promise.all(Array.from({ length: this.#options.concurrency }, lane));

    if (revoked) return this.#fail(row, [revoked]);
    if (row.batch.status === 'cancelling') {
      row.ending = 'cancelled';
    } else if (expired() && next < pending.length) {
      // OpenAI's expired lines: in the error file, with no response.
      for (const request of pending.slice(next)) {
        await this.#keep(row, {
          index: request.index,
          ok: false,
          line: {
            id: newLineId(),
            custom_id: request.customId,
            response: null,
            error: {
              code: 'batch_expired',
              message: 'This request could not be executed before the completion window expired.',
            },
          },
        });
      }
      row.ending = 'expired';
    } else if (stop.aborted) {
      return; // Stopped without a cancel: a context going away. The next one resumes.
    } else {
      row.ending = 'completed';
      row.batch.status = 'finalizing';
      row.batch.finalizing_at = this.#seconds();
    }
    await this.#save(row);
  }

  /**
   * One line through the API, tried again while the API says to wait (see {@link retryWait}). Undefined when it was
   * stopped before it finished.
   */
  async #runLine(row: BatchRow, request: BatchRequest, stop: AbortSignal): Promise<ResultRow | 'revoked' | undefined> {
    const result = (status_code: number, request_id: string, body: unknown): ResultRow => ({
      index: request.index,
      ok: status_code >= 200 && status_code < 300,
      line: { id: newLineId(), custom_id: request.customId, response: { status_code, request_id, body }, error: null },
    });
    if (request.body.stream === true) {
      return result(400, '', {
        error: {
          message: "Streaming is not supported in a batch: leave out 'stream'.",
          type: 'invalid_request_error',
          param: 'stream',
          code: null,
        },
      });
    }
    for (let tries = 1; ; tries++) {
      if (stop.aborted) return undefined;
      const response = await this.#options.dispatch(
        row.owner,
        new Request(INTERNAL_ORIGIN + row.batch.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(request.body),
          signal: stop,
        }),
      );
      const text = await response.text().catch(() => '');
      if (stop.aborted) return undefined;
      if (response.status === 401) return 'revoked';
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Not JSON: kept as the text it is.
      }
      const wait = retryWait(response, errorCode(body), tries);
      if (wait !== undefined) {
        if (!(await sleep(wait, stop))) return undefined;
        continue;
      }
      return result(response.status, response.headers.get('x-request-id') ?? '', body);
    }
  }

  /** Keeps a line's result, then counts it: a result is written before its line counts as done. */
  async #keep(row: BatchRow, result: ResultRow): Promise<void> {
    await this.#storage.put('batch_results', [row.owner, row.batch.id, indexKey(result.index)], result);
    row.batch.request_counts[result.ok ? 'completed' : 'failed'] += 1;
    await this.#save(row);
  }

  /** Writes the output and error files from the kept results (again, under the same ids, when resumed), and ends. */
  async #finalize(row: BatchRow, ending: Ending): Promise<void> {
    if (!row.fileIds) {
      row.fileIds = { output: newFileId(), error: newFileId() };
      await this.#save(row);
    }
    const { owner } = row;
    const id = row.batch.id;
    const results = await this.#storage.list<ResultRow>('batch_results', [owner, id]);
    const outputs = results.filter((result) => result.ok);
    const errors = results.filter((result) => !result.ok);
    try {
      if (outputs.length > 0) {
        row.batch.output_file_id = await this.#writeFile(row, row.fileIds.output, 'output', outputs);
      }
      if (errors.length > 0) row.batch.error_file_id = await this.#writeFile(row, row.fileIds.error, 'error', errors);
    } catch (error) {
      // The key's storage is full (or the origin's): the results stay kept, and the batch says why it failed.
      const message = error instanceof Error ? error.message : String(error);
      return this.#fail(row, [
        {
          code: 'output_file_failed',
          line: null,
          message: `The output files could not be written: ${message}`,
          param: null,
        },
      ]);
    }
    row.batch.request_counts.completed = outputs.length;
    row.batch.request_counts.failed = errors.length;
    const now = this.#seconds();
    row.batch.status = ending;
    if (ending === 'completed') row.batch.completed_at = now;
    else if (ending === 'cancelled') row.batch.cancelled_at = now;
    else row.batch.expired_at = now;
    delete row.ending;
    await this.#save(row);
    // The files hold them now.
    await this.#storage.deleteAll('batch_results', [owner, id]);
  }

  async #writeFile(row: BatchRow, fileId: string, kind: 'output' | 'error', results: ResultRow[]): Promise<string> {
    const text = results.map((result) => JSON.stringify(result.line) + '\n').join('');
    const file = await this.#files.createFile(row.owner, {
      id: fileId,
      bytes: new TextEncoder().encode(text),
      filename: `${row.batch.id}_${kind}.jsonl`,
      mimeType: 'application/jsonl',
      purpose: 'batch_output',
      ...(row.outputExpiresAfterS !== undefined && { expiresAfterS: row.outputExpiresAfterS }),
    });
    return file.id;
  }

  // ---- Rows ----

  async #row(owner: string, id: string): Promise<BatchRow> {
    const running = this.#running.get(runKey(owner, id));
    if (running) return running.row;
    const row = await this.#storage.get<BatchRow>('batches', [owner, id]);
    if (!row) throw new LibraryError(404, `No batch found with id '${id}'.`, { param: 'batch_id', code: 'not_found' });
    return row;
  }

  /** Writes the row as it is now, after the batch's earlier writes. */
  async #save(row: BatchRow): Promise<void> {
    const key = runKey(row.owner, row.batch.id);
    const snapshot = structuredClone(row);
    const previous = this.#writes.get(key) ?? Promise.resolve();
    const write = previous.then(() => this.#storage.put('batches', [row.owner, row.batch.id], snapshot));
    const settled = write.catch(() => {});
    this.#writes.set(key, settled);
    void settled.then(() => {
      if (this.#writes.get(key) === settled) this.#writes.delete(key);
    });
    await write;
  }

  #slotsOf(owner: string): Slots {
    let slots = this.#slots.get(owner);
    if (!slots) this.#slots.set(owner, (slots = new Slots(this.#options.concurrency)));
    return slots;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }
}

/** A key's line slots: `acquire` waits for one (or for `signal`, answering undefined), and gives back its release. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = Math.max(1, size);
  }

  async acquire(signal: AbortSignal): Promise<(() => void) | undefined> {
    while (this.#free === 0) {
      if (signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          const at = this.#waiting.indexOf(wake);
          if (at >= 0) this.#waiting.splice(at, 1);
          resolve();
        };
        this.#waiting.push(wake);
        signal.addEventListener('abort', wake);
      });
    }
    if (signal.aborted) return undefined;
    this.#free -= 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#free += 1;
      this.#waiting.shift()?.();
    };
  }
}

const runKey = (owner: string, id: string) => `${owner}/${id}`;

/** A result's key: its line's index, zero-padded so that results list in the file's order. */
const indexKey = (index: number) => String(index).padStart(9, '0');

const newLineId = () => 'batch_req_' + crypto.randomUUID().replace(/-/g, '');

/** As the Files API's ids: `file-` and 24 hex digits. */
const newFileId = () => 'file-' + crypto.randomUUID().replace(/-/g, '').slice(0, 24);

const errorCode = (body: unknown): unknown =>
  typeof body === 'object' && body !== null ? (body as { error?: { code?: unknown } }).error?.code : undefined;

/**
 * How long to wait before trying a line again, or undefined to keep its answer: a 429 or an engine not there yet
 * ({@link WAIT_CODES}) is waited out, backing off to {@link RETRY_MS}.max; another failure the API says a retry may heal
 * (a 5xx with `x-should-retry: true`) is tried {@link RETRY_TRIES} times. `retry-after-ms` (else `retry-after`, in
 * seconds) is honoured when it says longer.
 */
function retryWait(response: Response, code: unknown, tries: number): number | undefined {
  const waitable = response.status === 429 || (response.status >= 500 && WAIT_CODES.has(code as string));
  const retryable = response.status >= 500 && response.headers.get('x-should-retry') === 'true' && tries < RETRY_TRIES;
  if (!waitable && !retryable) return undefined;
  const ms = Number(response.headers.get('retry-after-ms'));
  const seconds = Number(response.headers.get('retry-after'));
  const said = ms > 0 ? ms : seconds > 0 ? seconds * 1000 : 0;
  const backoff = RETRY_MS.default * 2 ** Math.min(tries - 1, 5);
  return Math.min(RETRY_MS.max, Math.max(RETRY_MS.min, said, response.status === 429 ? 0 : backoff));
}

/** Waits `ms`, or until `signal` aborts: resolves whether the wait ran its course. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stopped);
      resolve(true);
    }, ms);
    const stopped = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', stopped, { once: true });
  });
}
