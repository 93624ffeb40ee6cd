/**
 * A PDF's text layer, through unpdf (a build of Mozilla's pdf.js that runs without a DOM or a worker: in Node, and in
 * the service worker). pdf.js is 1.6 MB, so it is imported when a PDF arrives: in Node and an ES module bundle it is
 * loaded then; the service worker, one classic script where `import()` is not allowed, carries it inlined and runs it
 * only then (docs/file-search.md says what that costs).
 */

/** A PDF's text, its pages apart by a blank line, and its number of pages. */
export interface PdfText {
  text: string;
  pages: number;
}

/**
 * The text of each page, in page order, its lines as pdf.js finds them (a line of the page is a line of the text),
 * runs of spaces and tabs as one space, and at most one blank line in a row. A page with no text layer (a scanned
 * image) adds nothing, and a document without any gives `''`: the caller decides what that means.
 *
 * @throws whatever pdf.js throws for a file it cannot read (a `PasswordException` for an encrypted one, an
 * `InvalidPDFException` for a broken one).
 */
export async function pdfToText(bytes: Uint8Array): Promise<PdfText> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  // A copy: pdf.js may take over the buffer it is given, and the caller keeps the file. Verbosity 0: pdf.js would
  // otherwise warn on the console about every font it does not embed.
  const document = await getDocumentProxy(bytes.slice(), { verbosity: 0 });
  try {
    const { totalPages, text } = await extractText(document, { mergePages: false });
    const pages = text
      .map((page) =>
        page
          .replace(/[^\S\n]+/g, ' ')
          .replace(/ ?\n ?/g, '\n')
          .trim(),
      )
      .filter(Boolean);
    return { text: pages.join('\n\n').replace(/\n{3,}/g, '\n\n'), pages: totalPages };
  } finally {
    await document.loadingTask.destroy();
  }
}
