import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { handWrittenDocx, handWrittenPptx, handWrittenZip } from './hand-written-office.test-support.ts';
import { handWrittenPdf, sharedContentPdf } from './hand-written-pdf.test-support.ts';
import {
  extractedTextLimit,
  extractText,
  MAX_PDF_PAGES,
  SUPPORTED_EXTENSIONS,
  UnreadableFileError,
  UnsupportedFileError,
} from './extract-text.ts';
import { MAX_ZIP_ENTRIES } from './zip-archive.ts';

const utf8 = (text: string) => new TextEncoder().encode(text);

const pdf = (pages: string[][]) => utf8(handWrittenPdf(pages));

const twoPages = () => pdf([['Invoice 2024-17.', 'Total due: 120 EUR (by March).'], ['Thank you for your order.']]);

describe('extractText', () => {
  it('reads plain text and code as they are, with line breaks as \\n', async () => {
    expect(await extractText(utf8('# Notes\r\n\r\nFirst.\rSecond.\n'), 'notes.md')).toEqual({
      text: '# Notes\n\nFirst.\nSecond.\n',
    });
    expect(await extractText(utf8('def f():\n    return 1\n'), 'src/f.PY')).toEqual({
      text: 'def f():\n    return 1\n',
    });
    expect(await extractText(utf8('a,b\n1,2'), 'table.csv')).toEqual({ text: 'a,b\n1,2' });
  });

  it('refuses an empty file, or one whose text is only whitespace, as having no text to search', async () => {
    for (const [bytes, name] of [
      [new Uint8Array(), 'empty.txt'],
      [new Uint8Array(), 'empty.pdf'],
      [utf8(' \n\t\n'), 'blank.md'],
      [utf8('<p> </p><script>x()</script>'), 'blank.html'],
      [await handWrittenDocx('<w:p><w:r><w:t xml:space="preserve">  </w:t></w:r></w:p>'), 'blank.docx'],
    ] as const) {
      await expect(extractText(bytes, name)).rejects.toThrow(
        new UnreadableFileError(`${name} is empty: there is no text to search.`),
      );
    }
  });

  it('drops a UTF-8 byte order mark and decodes UTF-16 by its mark', async () => {
    expect(await extractText(new Uint8Array([0xef, 0xbb, 0xbf, ...utf8('héllo')]), 'a.txt')).toEqual({ text: 'héllo' });
    const le = new Uint8Array([0xff, 0xfe, 0x68, 0x00, 0xe9, 0x00, 0x3d, 0xd8, 0x00, 0xde]);
    expect(await extractText(le, 'a.txt')).toEqual({ text: 'hé😀' });
    const be = new Uint8Array([0xfe, 0xff, 0x00, 0x68, 0x00, 0xe9]);
    expect(await extractText(be, 'a.txt')).toEqual({ text: 'hé' });
  });

  it('refuses invalid UTF-8 and binary data under a text name as unreadable', async () => {
    const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9]); // "café" in Latin-1
    await expect(extractText(latin1, 'old.txt')).rejects.toThrow(
      new UnreadableFileError('old.txt is not valid UTF-8 text.'),
    );
    await expect(extractText(new Uint8Array([0x41, 0x00, 0x42, 0x00]), 'x.log')).rejects.toThrow(UnreadableFileError);
    const oddUtf16 = new Uint8Array([0xff, 0xfe, 0x00, 0xd8]); // a lone surrogate
    await expect(extractText(oddUtf16, 'a.txt')).rejects.toThrow(/not valid UTF-16/);
  });

  it('makes HTML and JSON readable', async () => {
    expect(await extractText(utf8('<h1>Hi</h1><p>a&amp;b</p><script>x()</script>'), 'page.HTM')).toEqual({
      text: 'Hi\n\na&b',
    });
    expect(await extractText(utf8('\ufeff{"user": {"name": "Ada"}}'), 'data.json')).toEqual({ text: 'user.name: Ada' });
    expect(await extractText(utf8('{"a": 1}\r\n{"a": 2}\r\n'), 'rows.jsonl')).toEqual({ text: 'a: 1\n\na: 2' });
  });

  it('refuses JSON that does not parse as unreadable, saying where', async () => {
    await expect(extractText(utf8('{"a": '), 'bad.json')).rejects.toThrow(/^bad\.json is not valid JSON: /);
    await expect(extractText(utf8('{}\n{'), 'bad.jsonl')).rejects.toThrow(
      /^bad\.jsonl is not valid JSON Lines: line 2: /,
    );
  });

  it('refuses a file whose text would pass 64 KiB and 32 characters a byte, saying why; reads one within', async () => {
    // One long key over 10,000 numbers: every number's line carries its path (bounded, but 128 characters each).
    const key = 'measurement_series_'.repeat(6);
    const numbers = (count: number) => utf8(JSON.stringify({ [key]: new Array(count).fill(0) }));
    const large = numbers(10_000);
    expect(large.length).toBeLessThan(21_000);
    await expect(extractText(large, 'series.json')).rejects.toThrow(UnreadableFileError);
    await expect(extractText(large, 'series.json')).rejects.toThrow(
      new RegExp(
        `^series\\.json makes \\d+ characters of text, more than a file of ${large.length} bytes may \\(${64 * 1024 + 32 * large.length}: `,
      ),
    );
    expect((await extractText(numbers(200), 'series.json')).text.split('\n')).toHaveLength(200);
    expect(extractedTextLimit(1_000)).toBe(64 * 1024 + 32_000);
  });

  it('reads a PDF page by page, pages apart by a blank line, through unpdf', async () => {
    const bytes = twoPages();
    const copy = bytes.slice();
    expect(await extractText(bytes, 'invoice.pdf')).toEqual({
      text: 'Invoice 2024-17.\nTotal due: 120 EUR (by March).\n\nThank you for your order.',
      pages: 2,
    });
    // The caller's bytes are untouched (pdf.js is handed a copy): the file is kept as uploaded.
    expect(bytes).toEqual(copy);
  });

  it('refuses a PDF without a text layer as having no text to search', async () => {
    await expect(extractText(pdf([[], []]), 'scan.pdf')).rejects.toThrow(
      new UnreadableFileError(
        'scan.pdf has no text to search: its 2 pages have no text layer (a scan, or images of text). ' +
          'Run it through OCR first.',
      ),
    );
  });

  it('refuses a broken PDF as unreadable', async () => {
    const broken = extractText(utf8('%PDF-1.7\nthis is not a PDF at all'), 'broken.pdf');
    await expect(broken).rejects.toThrow(UnreadableFileError);
    await expect(broken).rejects.toThrow(/^broken\.pdf could not be read as a PDF: /);
  });

  it('refuses a PDF of more than 2,000 pages from its page count, before reading a page', async () => {
    // 20,000 pages, 2.9 MB: pdf.js read every page at once, for minutes and gigabytes (issue 63).
    const bytes = pdf(Array.from({ length: 20_000 }, (_, index) => [`Page ${index + 1}`]));
    await expect(extractText(bytes, 'huge.pdf')).rejects.toThrow(
      new UnreadableFileError(`huge.pdf has 20000 pages, more than the ${MAX_PDF_PAGES} a PDF may have. Split it.`),
    );
    expect(MAX_PDF_PAGES).toBe(2_000);
  });

  /** 20 pages showing one stream that inflates to 4.1 MB of text operators: 16 KB of file, 37 million characters. */
  const sharedStreamPdf = () => {
    const line = 'BT /F1 12 Tf 72 720 Td (Lorem ipsum dolor sit amet) Tj ET\n';
    return sharedContentPdf(line.repeat(Math.ceil(4.1e6 / line.length)), 20);
  };

  it('stops reading a PDF as soon as its text passes the limit, mid-page', async () => {
    const bytes = await sharedStreamPdf();
    expect(bytes.length).toBeLessThan(20_000);
    // By page 1: every page makes 1.8 million characters, and the limit is 600,000 or so (before: after all 20).
    await expect(extractText(bytes, 'shared.pdf')).rejects.toThrow(
      new RegExp(
        `^shared\\.pdf makes \\d+ characters of text by page 1 of 20, more than a file of ${bytes.length} bytes ` +
          `may \\(${extractedTextLimit(bytes.length)}: 64 KiB and 32 a byte\\)\\. Split it`,
      ),
    );
  });

  it('stops reading a file past its time limit, saying where it stopped', async () => {
    const bytes = await sharedStreamPdf();
    // 1 ms: pdf.js's loading alone takes longer, so the first check, before page 1, finds the time spent.
    await expect(extractText(bytes, 'slow.pdf', undefined, { timeLimitMs: 1 })).rejects.toThrow(
      new UnreadableFileError(
        'slow.pdf took more than 0.001 s to read as text (the time limit), and was stopped at page 1 of 20. ' +
          'Split it, or save it again as a simpler file.',
      ),
    );
  });

  it("stops when its signal is aborted, with the signal's reason, letting the event loop run while it reads", async () => {
    const reason = new Error('stopped by the caller');
    await expect(extractText(twoPages(), 'a.pdf', undefined, { signal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    // Aborted by a timer: one that could not run until the whole file was read would find it failed by its text.
    const controller = new AbortController();
    const reading = extractText(await sharedStreamPdf(), 'shared.pdf', undefined, { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 0);
    await expect(reading).rejects.toBe(reason);
  });

  it('reads a Word document: paragraphs, headings by their style, line breaks, tabs and tables', async () => {
    const run = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`;
    const paragraph = (text: string, style?: string) =>
      `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>` : ''}${run(text)}</w:p>`;
    const cell = (...paragraphs: string[]) =>
      `<w:tc><w:tcPr/>${paragraphs.map((text) => paragraph(text)).join('')}</w:tc>`;
    const bytes = await handWrittenDocx(
      paragraph('Travel policy', 'Titel') +
        paragraph('Hotels', 'berschrift2') +
        paragraph('A quote, not a heading.', 'Zitat') +
        '<w:p><w:pPr><w:rPr><w:b/></w:rPr></w:pPr>' +
        run('Up to 180 &amp; ') +
        '<w:r><w:rPr><w:b/></w:rPr><w:t>no more</w:t><w:br/><w:t>a night,</w:t><w:tab/><w:t>taxes included.</w:t></w:r>' +
        '<w:r><w:delText>deleted words</w:delText><w:instrText>PAGE</w:instrText></w:r></w:p>' +
        '<w:p/>' +
        `<w:tbl><w:tblPr/><w:tr>${cell('City')}${cell('Cap')}</w:tr><w:tr>${cell('Paris', '(France)')}${cell('180')}</w:tr></w:tbl>` +
        paragraph('Text box:') +
        '<w:p><w:r><mc:AlternateContent><mc:Choice><w:txbxContent>' +
        paragraph('Once') +
        '</w:txbxContent></mc:Choice><mc:Fallback><w:txbxContent>' +
        paragraph('Once') +
        '</w:txbxContent></mc:Fallback></mc:AlternateContent></w:r></w:p>',
    );
    expect(await extractText(bytes, 'policy.docx')).toEqual({
      text:
        '# Travel policy\n\n## Hotels\n\nA quote, not a heading.\n\n' +
        'Up to 180 & no more\na night,\ttaxes included.\n\n' +
        'City\tCap\nParis (France)\t180\n\nText box:\n\nOnce',
    });
    // By its MIME type, when its name says nothing.
    const mimeType = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
    expect((await extractText(bytes, 'upload', mimeType)).text).toMatch(/^# Travel policy/);
  });

  it("reads a PowerPoint presentation, its slides in the presentation's order", async () => {
    const bytes = await handWrittenPptx(
      [
        '<a:p><a:r><a:rPr lang="en-US"/><a:t>Second slide</a:t></a:r></a:p>',
        '<a:p><a:pPr><a:tabLst><a:tab pos="0"/></a:tabLst></a:pPr><a:r><a:t>First</a:t></a:r><a:br/><a:r><a:t>slide</a:t></a:r></a:p>' +
          '<a:p><a:r><a:t>Q&amp;A</a:t></a:r></a:p>',
      ],
      { order: [1, 0] },
    );
    expect(await extractText(bytes, 'deck.pptx')).toEqual({ text: 'First\nslide\n\nQ&A\n\nSecond slide' });
  });

  it('refuses an Office file that is not a zip, and a zip bomb, as unreadable, saying why', async () => {
    await expect(extractText(utf8('PK\x03\x04'), 'report.docx')).rejects.toThrow(
      new UnreadableFileError(
        'report.docx could not be read as a Word document: it is not a zip archive (no central directory).',
      ),
    );
    // 6 MB of empty paragraphs, deflated about a thousandfold: stopped at twice the text limit, 700 KB or so.
    const bomb = await handWrittenDocx('<w:p/>'.repeat(1024 * 1024));
    expect(bomb.length).toBeLessThan(12_000);
    await expect(extractText(bomb, 'bomb.docx')).rejects.toThrow(
      new UnreadableFileError(
        `bomb.docx could not be read as a Word document: its word/document.xml inflates past the ` +
          `${2 * extractedTextLimit(bomb.length)} bytes of XML a file of ${bomb.length} bytes may have (twice the ` +
          'text it may make). Split it.',
      ),
    );
    const entries = Object.fromEntries(Array.from({ length: MAX_ZIP_ENTRIES + 1 }, (_, index) => [`${index}`, '']));
    await expect(extractText(await handWrittenZip(entries, { store: true }), 'many.pptx')).rejects.toThrow(
      new UnreadableFileError(
        `many.pptx could not be read as a PowerPoint presentation: it lists ${MAX_ZIP_ENTRIES + 1} entries, ` +
          `more than the ${MAX_ZIP_ENTRIES} an archive may.`,
      ),
    );
  });

  it('decides the type by extension, then by MIME type, then by the bytes', async () => {
    // The extension wins over the MIME type.
    expect(await extractText(utf8('<b>x</b>'), 'page.txt', 'text/html')).toEqual({ text: '<b>x</b>' });
    // No extension, or an unknown one: the MIME type decides, parameters and case aside.
    expect(await extractText(utf8('<b>x</b>'), 'upload', 'Text/HTML; charset=utf-8')).toEqual({ text: 'x' });
    expect(await extractText(utf8('{"a":1}'), 'blob', 'application/ld+json')).toEqual({ text: 'a: 1' });
    expect(await extractText(utf8('key: 1'), 'config.conf', 'text/plain')).toEqual({ text: 'key: 1' });
    expect((await extractText(twoPages(), 'download', 'application/pdf')).pages).toBe(2);
    // Neither says: a PDF's signature does.
    expect((await extractText(twoPages(), 'download', 'application/octet-stream')).pages).toBe(2);
    expect((await extractText(twoPages(), 'download')).pages).toBe(2);
  });

  it('refuses other types as unsupported, naming the extension and listing the supported ones', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const error = await extractText(png, 'photo.PNG', 'image/png').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnsupportedFileError);
    expect((error as Error).message).toMatch(
      /^Lantern cannot read \.png files \(photo\.PNG\) as text\. Supported types: /,
    );
    for (const extension of ['.pdf', '.md', '.json', '.html']) expect((error as Error).message).toContain(extension);
    await expect(extractText(utf8('PK\x03\x04'), 'sheet.xlsx')).rejects.toThrow(UnsupportedFileError);
    await expect(extractText(utf8('plain words'), 'README')).rejects.toThrow(
      /^Lantern cannot read README, which has no extension to say its type, as text\./,
    );
  });

  it('lists the supported extensions, sorted', () => {
    expect(SUPPORTED_EXTENSIONS).toContain('.pdf');
    expect(SUPPORTED_EXTENSIONS).toContain('.jsonl');
    expect(SUPPORTED_EXTENSIONS).toContain('.yml');
    expect(SUPPORTED_EXTENSIONS).toContain('.docx');
    expect(SUPPORTED_EXTENSIONS).toContain('.pptx');
    expect([...SUPPORTED_EXTENSIONS].sort()).toEqual(SUPPORTED_EXTENSIONS);
    expect(Object.isFrozen(SUPPORTED_EXTENSIONS)).toBe(true);
  });
});

describe('the documents folder', () => {
  it('runs in a classic service worker script: no Node module, and unpdf imported only when a PDF arrives', () => {
    const folder = new URL('.', import.meta.url);
    for (const file of readdirSync(folder).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))) {
      const source = readFileSync(new URL(file, folder), 'utf8');
      expect(source, file).not.toMatch(/from ['"]node:|import\(['"]node:|\bprocess\.|\bBuffer\b/);
      expect(source, file).not.toMatch(/from ['"]unpdf['"]/);
    }
  });
});
