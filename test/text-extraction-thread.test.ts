import { afterEach, describe, expect, it } from 'vitest';
import { extractText, UnreadableFileError, UnsupportedFileError } from '../src/documents/index.ts';
import { threadTextExtractor, type ThreadTextExtractor } from '../scripts/text-extraction.ts';
import { sharedContentPdf } from '../src/documents/hand-written-pdf.test-support.ts';

/**
 * `npm run serve:node` reads uploaded files in a worker thread with a time and memory budget (issue 63): a file past
 * either fails with the budget's error, the server's thread never holds it, and the next file reads in a fresh thread.
 */
const encode = (text: string) => new TextEncoder().encode(text);
let extractors: ThreadTextExtractor[] = [];
const extractor = (budget: Parameters<typeof threadTextExtractor>[0]) => {
  const made = threadTextExtractor(budget);
  extractors.push(made);
  return made;
};
afterEach(async () => {
  await Promise.all(extractors.map((made) => made.close()));
  extractors = [];
});

describe('text extraction in a worker thread', () => {
  it('reads what the readers read, and passes their refusals on as themselves', async () => {
    const { extract } = extractor({});
    const html = encode('<h1>Lamps</h1><p>The lamp is lit at <b>dusk</b>.</p>');
    expect(await extract(html, 'lamps.html')).toEqual(await extractText(html, 'lamps.html'));
    await expect(extract(encode('{"a":'), 'broken.json')).rejects.toBeInstanceOf(UnreadableFileError);
    await expect(extract(encode('GIF89a'), 'image.gif')).rejects.toBeInstanceOf(UnsupportedFileError);
  });

  it('fails a read past its memory budget, and reads the next file in a fresh thread', async () => {
    const { extract } = extractor({ maxMemoryMb: 48 });
    // 16 MB of JSON: its objects and its text take several times that in the heap.
    const rows = Array.from({ length: 200_000 }, (_, i) => `{"id":${i},"name":"row ${i}","tags":["a","b"]}`);
    const huge = encode(`[${rows.join(',')}]`.repeat(1));
    const refusal = await extract(huge, 'rows.json').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(UnreadableFileError);
    expect((refusal as Error).message).toMatch(/more than 48 MiB of memory/);
    expect(await extract(encode('# Notes\nThe owl hoots.'), 'notes.md')).toEqual({ text: '# Notes\nThe owl hoots.' });
  });

  it("fails the issue's PDF (20 pages of one shared 4 MB stream) with its limit's error, off this thread", async () => {
    const line = 'BT /F1 12 Tf 72 720 Td (Lorem ipsum dolor sit amet) Tj ET\n';
    const bytes = await sharedContentPdf(line.repeat(Math.ceil(4.1e6 / line.length)), 20);
    const { extract } = extractor({});
    const refusal = await extract(bytes, 'shared.pdf').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(UnreadableFileError);
    expect((refusal as Error).message).toMatch(/more than a file of \d+ bytes may|page 1 of 20/);
  });

  it('fails a read past its time budget, saying so', async () => {
    const line = 'BT /F1 12 Tf 72 720 Td (Lorem ipsum) Tj ET\n';
    const { extract } = extractor({ timeoutMs: 1 });
    const refusal = await extract(await sharedContentPdf(line.repeat(1000), 20), 'slow.pdf').catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(UnreadableFileError);
    expect((refusal as Error).message).toMatch(/took more than 0.001 s to read as text/);
  });
});
