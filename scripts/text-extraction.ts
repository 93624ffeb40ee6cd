/**
 * `npm run serve:node`'s reading of uploaded files: in a worker thread of its own, with a time and a memory budget, so
 * that no document holds the thread every key's requests are answered on (issue 63: a 17 KB PDF of one shared 4 MB
 * content stream held it 33 s; a 2.9 MB PDF of 20,000 pages took 4.8 GB). A read past its budget ends the thread —
 * pdf.js and the text readers are JavaScript, so nothing native is cut off midway — and fails its file, saying which
 * budget; the next file starts a fresh thread. (The browser reads in the service worker, within the readers' own
 * limits: a service worker cannot start a worker.)
 */
import type { ExtractedText } from '../src/documents/index.ts';
import { DEFAULT_EXTRACTION_TIME_LIMIT_MS, UnreadableFileError, UnsupportedFileError } from '../src/documents/index.ts';
import type { TextExtractor } from '../src/file-search/index.ts';
import { typescriptWorker } from './typescript-worker.ts';
import type { Worker } from 'node:worker_threads';

export interface ThreadBudget {
  /**
   * Longest a file's read may take: 60 s (a 300-page PDF reads in a few seconds). The reader checks it between pieces
   * of a page and stops itself, naming it; a page whose content makes no text runs to its end before the reader looks
   * at its clock, so the thread is ended {@link GRACE_MS} past it if it has not stopped.
   */
  timeoutMs: number;
  /** Most the reading thread's heap may grow to: 1,024 MiB. */
  maxMemoryMb: number;
}

export const DEFAULT_EXTRACTION_BUDGET: Readonly<ThreadBudget> = Object.freeze({
  timeoutMs: DEFAULT_EXTRACTION_TIME_LIMIT_MS,
  maxMemoryMb: 1024,
});

/** How long past its time limit a read that has not stopped itself is given before its thread is ended. */
const GRACE_MS = 5_000;

export interface ExtractionRequest {
  id: number;
  timeLimitMs: number;
  bytes: Uint8Array;
  filename: string;
  mimeType: string | undefined;
}

export type ExtractionReply =
  { id: number; extracted: ExtractedText } | { id: number; error: { name: string; message: string } };

/** A {@link TextExtractor} that reads in a worker thread, one file at a time, and its `close()`. */
export interface ThreadTextExtractor {
  extract: TextExtractor;
  close(): Promise<void>;
}

/**
 * Reads files in a worker thread within `budget`. The thread starts on the first file and stays for the next; it is
 * ended when a read passes its budget (or it dies), and a new one starts for the next file.
 */
export function threadTextExtractor(budget: Partial<ThreadBudget> = {}): ThreadTextExtractor {
  const { timeoutMs, maxMemoryMb } = { ...DEFAULT_EXTRACTION_BUDGET, ...budget };
  let thread: Worker | undefined;
  let nextId = 0;
  /** Reads wait for the one before: one file at a time, so a budget is one file's. */
  let queue: Promise<unknown> = Promise.resolve();

  const start = (): Worker => {
    const started = typescriptWorker(new URL('./text-extraction-thread.ts', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: maxMemoryMb },
    });
    started.unref();
    return started;
  };

  const read = (bytes: Uint8Array, filename: string, mimeType?: string) =>
    new Promise<ExtractedText>((resolve, reject) => {
      const reader = (thread ??= start());
      const id = nextId++;
      /** The read's end: its text, the reader's refusal, or the thread spent (past a budget, or dead). */
      const end = (outcome: { extracted: ExtractedText } | { error: Error; spent: boolean }) => {
        clearTimeout(timer);
        reader.off('message', onMessage).off('error', onError).off('exit', onExit);
        if ('extracted' in outcome) return resolve(outcome.extracted);
        if (outcome.spent) {
          // The next file gets a fresh thread.
          if (thread === reader) thread = undefined;
          void reader.terminate();
        }
        reject(outcome.error);
      };
      const spent = (message: string) => end({ error: new UnreadableFileError(message), spent: true });
      const onMessage = (reply: ExtractionReply) => {
        if (reply.id !== id) return;
        end('extracted' in reply ? reply : { error: reviveError(reply.error), spent: false });
      };
      const onError = (error: Error & { code?: string }) =>
        spent(
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `Reading ${filename} took more than ${maxMemoryMb} MiB of memory, the limit of a file's read. ` +
                'Split it into smaller files.'
            : `Reading ${filename} failed: ${error.message}`,
        );
      const onExit = () => spent(`Reading ${filename} stopped before it finished.`);
      const timer = setTimeout(
        () =>
          spent(
            `Reading ${filename} took more than ${timeoutMs / 1000} s, the limit of a file's read. ` +
              'Split it into smaller files.',
          ),
        timeoutMs + GRACE_MS,
      );
      reader.on('message', onMessage).on('error', onError).on('exit', onExit);
      // Held while it reads; idle, it keeps no process alive.
      reader.ref();
      reader.postMessage({ id, bytes, filename, mimeType, timeLimitMs: timeoutMs } satisfies ExtractionRequest);
    }).finally(() => thread?.unref());

  return {
    extract(bytes, filename, mimeType) {
      const result = queue.then(() => read(bytes, filename, mimeType));
      queue = result.catch(() => {});
      return result;
    },
    async close() {
      await thread?.terminate();
      thread = undefined;
    },
  };
}

/** The reader's error as thrown in the thread: its type decides how the file fails (unsupported, or unreadable). */
function reviveError({ name, message }: { name: string; message: string }): Error {
  if (name === 'UnsupportedFileError') return new UnsupportedFileError(message);
  if (name === 'UnreadableFileError') return new UnreadableFileError(message);
  return new Error(message);
}
