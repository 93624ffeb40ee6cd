/**
 * A PDF's text layer, through unpdf (a build of Mozilla's pdf.js that runs without a DOM or a worker: in Node, and in
 * the service worker). pdf.js is 1.6 MB, so it is imported when a PDF arrives: in Node and an ES module bundle it is
 * loaded then; the service worker, one classic script where `import()` is not allowed, carries it inlined and runs it
 * only then (docs/file-search.md says what that costs).
 */
import type { ExtractionBudget } from './extraction-budget.ts';

/** A PDF's text, its pages apart by a blank line, and its number of pages. */
export interface PdfText {
  text: string;
  pages: number;
}

/** What pdf.js's text content stream gives, a piece of a page at a time: marked-content items have no `str`. */
interface TextContentPiece {
  items: ({ str: string; hasEOL: boolean } | { type: string })[];
}

/**
 * The text of each page, in page order, its lines as pdf.js finds them (a line of the page is a line of the text),
 * runs of spaces and tabs as one space, and at most one blank line in a row. A page with no text layer (a scanned
 * image) adds nothing, and a document without any gives `''`: the caller decides what that means.
 *
 * Pages are read one at a time, each as a stream of pieces (pdf.js sends one every 20 ms of parsing, or every ten
 * items), and the budget is spent after each: its page limit before any page is read, its text and time limits as
 * soon as they are passed, mid-page. pdf.js offers no limit on a page's operators or inflated content bytes: a page
 * whose content makes no text runs to its end before the budget is checked again.
 *
 * @throws whatever pdf.js throws for a file it cannot read (a `PasswordException` for an encrypted one, an
 * `InvalidPDFException` for a broken one); the budget's errors.
 */
export async function pdfToText(bytes: Uint8Array, budget: ExtractionBudget): Promise<PdfText> {
  const { getDocumentProxy } = await import('unpdf');
  // A copy: pdf.js may take over the buffer it is given, and the caller keeps the file. Verbosity 0: pdf.js would
  // otherwise warn on the console about every font it does not embed.
  const document = await getDocumentProxy(bytes.slice(), { verbosity: 0 });
  try {
    const { numPages } = document;
    budget.checkPages(numPages);
    const pages: string[] = [];
    let length = 0;
    for (let number = 1; number <= numPages; number++) {
      const where = `page ${number} of ${numPages}`;
      await budget.spend(length, where);
      const page = await document.getPage(number);
      const reader = (page.streamTextContent() as ReadableStream<TextContentPiece>).getReader();
      const parts: string[] = [];
      try {
        for (let piece = await reader.read(); !piece.done; piece = await reader.read()) {
          for (const item of piece.value.items) {
            if (!('str' in item)) continue;
            parts.push(item.hasEOL ? `${item.str}\n` : item.str);
            length += item.str.length + (item.hasEOL ? 1 : 0);
          }
          await budget.spend(length, where);
        }
      } catch (error) {
        // Cancelling stops pdf.js's parsing of the page at its next 20 ms slot.
        await reader.cancel(error).catch(() => undefined);
        throw error;
      }
      page.cleanup();
      const text = parts
        .join('')
        .replace(/[^\S\n]+/g, ' ')
        .replace(/ ?\n ?/g, '\n')
        .trim();
      if (text) pages.push(text);
    }
    return { text: pages.join('\n\n').replace(/\n{3,}/g, '\n\n'), pages: numPages };
  } finally {
    await document.loadingTask.destroy();
  }
}
