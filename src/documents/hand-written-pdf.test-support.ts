import { concatBytes } from '../bytes/byte-chunks.ts';
import { compress } from './bytes.test-support.ts';

/**
 * A PDF written by hand, for the tests and the bench: a page per entry, each line of it shown in Helvetica (a standard
 * font, so nothing embedded), and a cross-reference table of the objects' byte offsets, as a PDF reader looks objects
 * up by. A page with no lines has no text, as a scanned page has. Its bytes are the string's (ASCII lines give ASCII
 * bytes), so a string carries it into a browser page, where `new File([text])` encodes it to the same bytes.
 */
export function handWrittenPdf(
  pages: string[][],
  { fontSize = 12, leading = 14, top = 720 }: { fontSize?: number; leading?: number; top?: number } = {},
): string {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pages.map((_, index) => `${4 + 2 * index} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ];
  for (const [index, lines] of pages.entries()) {
    const shown = lines.map((line) => `(${line.replace(/[\\()]/g, '\\$&')}) Tj T*`).join(' ');
    const content = lines.length === 0 ? '' : `BT /F1 ${fontSize} Tf 72 ${top} Td ${leading} TL ${shown} ET`;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> ` +
        `/Contents ${5 + 2 * index} 0 R >>`,
      `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    );
  }
  let file = '%PDF-1.4\n';
  const offsets = objects.map((object, index) => {
    const offset = file.length;
    file += `${index + 1} 0 obj\n${object}\nendobj\n`;
    return offset;
  });
  const xref = file.length;
  file += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  file += offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  file += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return file;
}

/**
 * A PDF whose pages all show one content stream, compressed with deflate (`/FlateDecode`): a few kilobytes of file that
 * pdf.js parses once a page, so `pageCount` times. The shape of a hostile PDF (issue 63): 20 pages sharing a stream
 * that inflates to megabytes of text operators.
 */
export async function sharedContentPdf(content: string, pageCount: number): Promise<Uint8Array> {
  const stream = await compress(content, 'deflate');
  const encoder = new TextEncoder();
  const pageIds = Array.from({ length: pageCount }, (_, index) => 5 + index);
  const objects: (string | Uint8Array)[][] = [
    ['<< /Type /Catalog /Pages 2 0 R >>'],
    [`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pageCount} >>`],
    ['<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'],
    [`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, stream, '\nendstream'],
    ...pageIds.map(() => [
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>',
    ]),
  ];
  const parts: Uint8Array[] = [];
  let length = 0;
  const write = (part: string | Uint8Array) => {
    const bytes = typeof part === 'string' ? encoder.encode(part) : part;
    parts.push(bytes);
    length += bytes.length;
  };
  write('%PDF-1.4\n');
  const offsets = objects.map((object, index) => {
    const offset = length;
    for (const part of [`${index + 1} 0 obj\n`, ...object, '\nendobj\n']) write(part);
    return offset;
  });
  const xref = length;
  write(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`);
  write(offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join(''));
  write(`trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`);
  return concatBytes(parts);
}
