/**
 * An uploaded file's text, for a vector store to chunk and embed: what `file_search` can search. The file's type is
 * its extension's, as OpenAI decides it; failing that (no extension, or one not listed), its MIME type's; failing
 * that, a PDF's signature. Plain text and code are decoded as they are; HTML, JSON, PDF, Word and PowerPoint are made
 * readable (see `html-text.ts`, `json-text.ts`, `pdf-text.ts`, `office-text.ts`), within the limits of
 * `extraction-budget.ts`. Runs in the service worker as in Node: nothing here needs Node, and pdf.js loads only when a
 * PDF arrives.
 */
import { htmlToText } from './html-text.ts';
import { jsonLinesToText, jsonToText } from './json-text.ts';
import { ExtractionBudget, type ExtractionOptions } from './extraction-budget.ts';
import { UnreadableFileError, UnsupportedFileError } from './file-errors.ts';
import { officeDocumentToText } from './office-text.ts';
import { pdfToText } from './pdf-text.ts';

export { UnreadableFileError, UnsupportedFileError } from './file-errors.ts';
export {
  DEFAULT_EXTRACTION_TIME_LIMIT_MS,
  extractedTextLimit,
  MAX_PDF_PAGES,
  type ExtractionOptions,
} from './extraction-budget.ts';

export interface ExtractedText {
  text: string;
  /** PDF pages, when the file has pages */
  pages?: number;
}

type Kind = 'text' | 'html' | 'json' | 'jsonl' | 'pdf' | 'docx' | 'pptx';

/** The extensions read, by how. Plain text and code are the text types of OpenAI's file_search list, and a few more. */
const EXTENSIONS: Readonly<Record<string, Kind>> = Object.freeze({
  ...Object.fromEntries(
    [
      ...['.txt', '.text', '.md', '.markdown', '.csv', '.tsv', '.log', '.rst', '.tex'],
      ...['.c', '.cpp', '.h', '.cs', '.css', '.go', '.java', '.js', '.mjs', '.ts', '.py', '.rb', '.php', '.sh'],
      ...['.xml', '.yaml', '.yml', '.toml'],
    ].map((extension) => [extension, 'text' as Kind]),
  ),
  '.html': 'html',
  '.htm': 'html',
  '.json': 'json',
  '.jsonl': 'jsonl',
  '.pdf': 'pdf',
  '.docx': 'docx',
  '.pptx': 'pptx',
});

/** The extensions of the files that can be read as text, in order: for docs and error messages. */
export const SUPPORTED_EXTENSIONS: readonly string[] = Object.freeze(Object.keys(EXTENSIONS).sort());

/**
 * MIME types without a parameter, for a file whose name says nothing: those of the kinds above, then any `text/…`
 * (and `+json`, `+xml`, as `application/ld+json`). A browser's `File.type` comes from the extension, so this mostly
 * serves a client that names a file `upload` but sends its type.
 */
const MIME_TYPES: Readonly<Record<string, Kind>> = Object.freeze({
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/json': 'json',
  'application/jsonl': 'jsonl',
  'application/x-ndjson': 'jsonl',
  'application/x-jsonlines': 'jsonl',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'application/xml': 'text',
  'application/yaml': 'text',
  'application/x-yaml': 'text',
  'application/toml': 'text',
  'application/javascript': 'text',
  'application/typescript': 'text',
  'application/x-sh': 'text',
  'application/x-tex': 'text',
});

/**
 * The text of a file, by its type (see this module's comment), within the limits of `extraction-budget.ts`.
 *
 * @param filename - the name it was uploaded under: its extension decides its type.
 * @param mimeType - the type it was uploaded with (a multipart part's `Content-Type`), for a name that does not.
 * @param options - a signal to stop it, and its time limit.
 * @throws {@link UnsupportedFileError} for a type that cannot be read as text (an image, an archive, a spreadsheet).
 * @throws {@link UnreadableFileError} for a file of a supported type that is broken, empty, or past a limit.
 * @throws the signal's reason, once it is aborted.
 * @example
 * await extractText(new TextEncoder().encode('# Notes'), 'notes.md'); // { text: '# Notes' }
 * await extractText(pdfBytes, 'report.pdf'); // { text: 'Page one…\n\nPage two…', pages: 2 }
 */
export async function extractText(
  bytes: Uint8Array,
  filename: string,
  mimeType?: string,
  options?: ExtractionOptions,
): Promise<ExtractedText> {
  const kind = kindOf(bytes, filename, mimeType);
  const budget = new ExtractionBudget(filename, bytes.length, options);
  // Before any reading: a PDF of no bytes is as empty as a text file of none, not a broken PDF.
  if (bytes.length === 0) throw empty(filename);
  const extracted = await extractAnyLength(bytes, filename, kind, budget);
  budget.checkText(extracted.text.length);
  if (extracted.text.trim() === '') throw empty(filename);
  return extracted;
}

/** The type of a file: by its extension, failing that its MIME type, failing that a PDF's signature. */
function kindOf(bytes: Uint8Array, filename: string, mimeType: string | undefined): Kind {
  const extension = extensionOf(filename);
  const kind =
    EXTENSIONS[extension] ?? kindOfMimeType(mimeType) ?? (startsWith(bytes, PDF_SIGNATURE) ? 'pdf' : undefined);
  if (kind === undefined) throw unsupported(filename, extension);
  return kind;
}

function empty(filename: string): UnreadableFileError {
  return new UnreadableFileError(`${filename} is empty: there is no text to search.`);
}

/** The text of a file by its kind; only PDFs and Office documents are held to the budget as they are read. */
async function extractAnyLength(
  bytes: Uint8Array,
  filename: string,
  kind: Kind,
  budget: ExtractionBudget,
): Promise<ExtractedText> {
  if (kind === 'pdf') {
    const { text, pages } = await pdfToText(bytes, budget).catch((error: unknown) => {
      if (error instanceof UnreadableFileError || budget.aborted) throw error;
      throw new UnreadableFileError(`${filename} could not be read as a PDF: ${pdfProblem(error)}`, { cause: error });
    });
    if (text === '') {
      throw new UnreadableFileError(
        `${filename} has no text to search: its ${pages === 1 ? 'page has' : `${pages} pages have`} no text layer ` +
          '(a scan, or images of text). Run it through OCR first.',
      );
    }
    return { text, pages };
  }
  if (kind === 'docx' || kind === 'pptx') return { text: await officeDocumentToText(bytes, kind, budget) };

  const text = decode(bytes, filename);
  if (kind === 'html') return { text: htmlToText(text) };
  if (kind === 'text') return { text };
  try {
    return { text: kind === 'json' ? jsonToText(text) : jsonLinesToText(text) };
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    const what = kind === 'json' ? 'JSON' : 'JSON Lines';
    throw new UnreadableFileError(`${filename} is not valid ${what}: ${error.message}`, { cause: error });
  }
}

/** The lowercase extension of a file's name (`.md`), or `''` for none (`README`, `.bashrc`). */
function extensionOf(filename: string): string {
  const name = filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot).toLowerCase() : '';
}

function kindOfMimeType(mimeType: string | undefined): Kind | undefined {
  const essence = mimeType?.split(';')[0]!.trim().toLowerCase();
  if (!essence) return undefined;
  if (Object.hasOwn(MIME_TYPES, essence)) return MIME_TYPES[essence];
  if (essence.endsWith('+json')) return 'json';
  if (essence.startsWith('text/') || essence.endsWith('+xml')) return 'text';
  return undefined;
}

/** `%PDF-`, the first bytes of every PDF. */
const PDF_SIGNATURE = [0x25, 0x50, 0x44, 0x46, 0x2d];

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return prefix.every((byte, index) => bytes[index] === byte);
}

function unsupported(filename: string, extension: string): UnsupportedFileError {
  const what =
    extension === '' ? `${filename}, which has no extension to say its type,` : `${extension} files (${filename})`;
  return new UnsupportedFileError(
    `Lantern cannot read ${what} as text. Supported types: ${SUPPORTED_EXTENSIONS.join(', ')}.`,
  );
}

/**
 * The text of a file's bytes: UTF-8 (its byte order mark, if any, dropped), or UTF-16 when a byte order mark says so;
 * line breaks as `\n`. Text with NUL characters is binary under a text file's name (or UTF-16 without its mark), whose
 * "text" would fill chunks with noise.
 */
function decode(bytes: Uint8Array, filename: string): string {
  const encoding =
    bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : 'utf-8';
  let text: string;
  try {
    // `fatal`: invalid bytes throw rather than become U+FFFD; the decoder drops a byte order mark itself.
    text = new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch (error) {
    const what = encoding === 'utf-8' ? 'UTF-8' : 'UTF-16';
    throw new UnreadableFileError(`${filename} is not valid ${what} text.`, { cause: error });
  }
  if (text.includes('\0')) throw new UnreadableFileError(`${filename} holds binary data, not text.`);
  return text.replace(/\r\n?/g, '\n');
}

/** What pdf.js says is wrong with a file, in words for the client. */
function pdfProblem(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'PasswordException') return 'it is encrypted with a password.';
  const message = error instanceof Error ? error.message : String(error);
  return message.endsWith('.') ? message : `${message}.`;
}
