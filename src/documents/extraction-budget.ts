/**
 * What reading one file as text may cost: characters of text, pages of a PDF, bytes inflated from a zip, and time.
 * Each limit fails the file with an {@link UnreadableFileError} naming it, as soon as it is passed rather than once
 * the work is done: a 17 KB PDF whose 20 pages share one compressed stream made 37 million characters in 95 s before
 * its text was found too long, and one of 20,000 pages took minutes and gigabytes (issue 63).
 */
import { UnreadableFileError } from './file-errors.ts';

/**
 * The most text a file may become: 64 KiB, and 32 characters more for each of its bytes. Text is chunked, embedded and
 * searched, so what a file makes readable is bounded by what it is: JSON's paths, HTML's markup and a PDF's
 * compressed streams make some files longer as text, never by this much for a document people write. A file past it
 * fails, saying so, rather than hold the indexing of every key (issue 63).
 */
export const extractedTextLimit = (fileBytes: number): number => 64 * 1024 + 32 * fileBytes;

/** The most pages a PDF may have: a 2,000-page PDF is a long book; read from the page tree before any page is. */
export const MAX_PDF_PAGES = 2_000;

/** How long reading one file may take, unless the caller says: a 300-page PDF takes a few seconds. */
export const DEFAULT_EXTRACTION_TIME_LIMIT_MS = 60_000;

/**
 * How often a long extraction lets the event loop run: pdf.js parses in microtasks, which would otherwise hold the
 * service worker's other requests, and the caller's abort, until the whole file is read.
 */
const YIELD_EVERY_MS = 50;

export interface ExtractionOptions {
  /** Stops the extraction: it rejects with the signal's reason, at its next check (between pieces of a page). */
  signal?: AbortSignal;
  /** The most time the extraction may take, in milliseconds ({@link DEFAULT_EXTRACTION_TIME_LIMIT_MS} unless told). */
  timeLimitMs?: number;
}

/** One file's budget, spent as it is read. */
export class ExtractionBudget {
  /** The most characters of text the file may make ({@link extractedTextLimit}). */
  readonly textLimit: number;
  readonly #signal: AbortSignal | undefined;
  readonly #timeLimitMs: number;
  readonly #deadline: number;
  #yieldedAt = Date.now();

  constructor(
    readonly filename: string,
    readonly fileBytes: number,
    { signal, timeLimitMs = DEFAULT_EXTRACTION_TIME_LIMIT_MS }: ExtractionOptions = {},
  ) {
    this.textLimit = extractedTextLimit(fileBytes);
    this.#signal = signal;
    this.#timeLimitMs = timeLimitMs;
    this.#deadline = Date.now() + timeLimitMs;
    signal?.throwIfAborted();
  }

  /** Whether the caller has stopped the extraction: its error is the signal's reason, not the file's fault. */
  get aborted(): boolean {
    return this.#signal?.aborted ?? false;
  }

  /**
   * Checks the text made so far, the time and the signal, letting the event loop run first when it has not for a
   * while (see {@link YIELD_EVERY_MS}).
   *
   * @param where - how far the reading got, for the messages: `page 3 of 20`.
   * @throws {@link UnreadableFileError} past the text limit or the time limit; the signal's reason once aborted.
   */
  async spend(textLength: number, where: string): Promise<void> {
    this.checkText(textLength, where);
    if (Date.now() - this.#yieldedAt >= YIELD_EVERY_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      this.#yieldedAt = Date.now();
    }
    this.#signal?.throwIfAborted();
    if (Date.now() > this.#deadline) {
      throw new UnreadableFileError(
        `${this.filename} took more than ${this.#timeLimitMs / 1000} s to read as text (the time limit), ` +
          `and was stopped at ${where}. Split it, or save it again as a simpler file.`,
      );
    }
  }

  /** @throws {@link UnreadableFileError} when the text made so far is longer than the file may make. */
  checkText(textLength: number, where?: string): void {
    if (textLength <= this.textLimit) return;
    throw new UnreadableFileError(
      `${this.filename} makes ${textLength} characters of text${where ? ` by ${where}` : ''}, more than a file of ` +
        `${this.fileBytes} bytes may (${this.textLimit}: 64 KiB and 32 a byte). Split it, or flatten its structure.`,
    );
  }

  /** @throws {@link UnreadableFileError} for a PDF of more than {@link MAX_PDF_PAGES} pages. */
  checkPages(pages: number): void {
    if (pages <= MAX_PDF_PAGES) return;
    throw new UnreadableFileError(
      `${this.filename} has ${pages} pages, more than the ${MAX_PDF_PAGES} a PDF may have. Split it.`,
    );
  }
}
