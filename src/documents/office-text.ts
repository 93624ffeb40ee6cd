/**
 * The text of Word (.docx) and PowerPoint (.pptx) files. Both are zip archives of XML (Office Open XML), read with
 * `zip-archive.ts`: a Word document's body, and each slide of a presentation in the presentation's order. Paragraphs
 * are set apart by a blank line, as HTML's are; Word's headings (its built-in "heading 1" to "heading 9" and "Title"
 * styles, whatever the style is called in the language Word was in) are marked as Markdown's (`# `, `## `); a table is
 * a row a line, its cells apart by a tab; line breaks stay line breaks. Comments, tracked deletions, field codes and
 * the pictures a program falls back on for a text box are left out.
 */
import type { ExtractionBudget } from './extraction-budget.ts';
import { UnreadableFileError } from './file-errors.ts';
import { readZipEntry, ZipEntryTooLargeError, ZipError, zipEntries, type ZipEntry } from './zip-archive.ts';

/**
 * How much XML an Office file's parts may inflate to, together: twice the text the file may make (so 64 bytes of XML
 * for each byte of the file, where Word's XML compresses about tenfold), checked as it inflates: a zip bomb inflates
 * a thousandfold.
 */
export const officeXmlLimit = (textLimit: number): number => 2 * textLimit;

/**
 * The text of a .docx or .pptx file.
 *
 * @throws {@link UnreadableFileError} for a file that is not such a document, or past a limit (its XML, entries, text).
 */
export async function officeDocumentToText(
  bytes: Uint8Array,
  kind: 'docx' | 'pptx',
  budget: ExtractionBudget,
): Promise<string> {
  const what = kind === 'docx' ? 'a Word document' : 'a PowerPoint presentation';
  const xmlLimit = officeXmlLimit(budget.textLimit);
  let xmlLeft = xmlLimit;
  try {
    const entries = zipEntries(bytes);
    const read = async (name: string): Promise<string | undefined> => {
      const entry: ZipEntry | undefined = entries.get(name);
      if (entry === undefined) return undefined;
      const xml = await readZipEntry(bytes, entry, xmlLeft);
      xmlLeft -= xml.length;
      return new TextDecoder().decode(xml);
    };
    const mainPart = partTarget('', await read('_rels/.rels'), 'officeDocument');
    const main = mainPart === undefined ? undefined : await read(mainPart);
    if (main === undefined) throw new ZipError('it has no main document part.');

    if (kind === 'docx') {
      const stylesPart = partTarget(mainPart!, await read(relsOf(mainPart!)), 'styles');
      const styles = stylesPart === undefined ? undefined : await read(stylesPart);
      const text = xmlToText(main, headingStyles(styles ?? ''));
      budget.checkText(text.length);
      return text;
    }
    const relationships = relationshipsById((await read(relsOf(mainPart!))) ?? '');
    const slideIds = [...main.matchAll(/<p:sldId\b([^>]*)>/g)].map((match) => attributes(match[1]!)['r:id']);
    const slides: string[] = [];
    let length = 0;
    for (const [index, id] of slideIds.entries()) {
      await budget.spend(length, `slide ${index + 1} of ${slideIds.length}`);
      const target = relationships.get(id ?? '');
      const slide = target === undefined ? undefined : await read(resolvePart(mainPart!, target));
      const text = slide === undefined ? '' : xmlToText(slide, new Map());
      length += text.length + 2;
      budget.checkText(length, `slide ${index + 1} of ${slideIds.length}`);
      if (text) slides.push(text);
    }
    return slides.join('\n\n');
  } catch (error) {
    if (error instanceof ZipEntryTooLargeError) {
      throw new UnreadableFileError(
        `${budget.filename} could not be read as ${what}: its ${error.entry} inflates past the ${xmlLimit} bytes of ` +
          `XML a file of ${budget.fileBytes} bytes may have (twice the text it may make). Split it.`,
        { cause: error },
      );
    }
    if (error instanceof ZipError) {
      throw new UnreadableFileError(`${budget.filename} could not be read as ${what}: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** The relationships part of a part: `word/document.xml` → `word/_rels/document.xml.rels`. */
function relsOf(part: string): string {
  const slash = part.lastIndexOf('/');
  return `${part.slice(0, slash + 1)}_rels/${part.slice(slash + 1)}.rels`;
}

/** Relationship ids to their targets. */
function relationshipsById(rels: string): Map<string, string> {
  const byId = new Map<string, string>();
  for (const match of rels.matchAll(/<Relationship\b([^>]*)>/g)) {
    const { Id, Target } = attributes(match[1]!);
    if (Id !== undefined && Target !== undefined) byId.set(Id, Target);
  }
  return byId;
}

/** The target of the first relationship of a type (its URI's last segment: `officeDocument`), as a part's name. */
function partTarget(source: string, rels: string | undefined, type: string): string | undefined {
  for (const match of (rels ?? '').matchAll(/<Relationship\b([^>]*)>/g)) {
    const { Type, Target } = attributes(match[1]!);
    if (Type?.endsWith(`/${type}`) && Target !== undefined) return resolvePart(source, Target);
  }
  return undefined;
}

/** A relationship's target as a part's name: relative to the folder of the part it is from, unless it starts at `/`. */
function resolvePart(source: string, target: string): string {
  const folder = target.startsWith('/') ? [] : source.split('/').slice(0, -1);
  for (const segment of target.split('/')) {
    if (segment === '..') folder.pop();
    else if (segment !== '.' && segment !== '') folder.push(segment);
  }
  return folder.join('/');
}

/** An element's attributes by their qualified names. */
function attributes(source: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const match of source.matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    found[match[1]!] = decodeEntities(match[2] ?? match[3]!);
  }
  return found;
}

/**
 * Word's paragraph styles that are headings, by style id, to their level. Ids are in Word's language
 * (`berschrift1`), names are not (`heading 1`).
 */
function headingStyles(styles: string): Map<string, number> {
  const levels = new Map<string, number>();
  for (const match of styles.matchAll(/<w:style\b([^>]*)>([\s\S]*?)<\/w:style>/g)) {
    const id = attributes(match[1]!)['w:styleId'];
    const name = /<w:name\b([^>]*)>/.exec(match[2]!)?.[1];
    const heading = /^(?:heading (\d)|(title))$/i.exec((name && attributes(name)['w:val']) ?? '');
    if (id !== undefined && heading) levels.set(id, heading[2] ? 1 : Number(heading[1]));
  }
  return levels;
}

/** A tag (its closing slash, local name, attributes and self-closing slash), or the text between tags. */
const TOKEN = /<(\/?)(?:[\w.-]+:)?([\w.-]+)((?:"[^"]*"|'[^']*'|[^'">])*?)(\/?)>|([^<]+)/g;

interface Table {
  rows: string[];
  cells: string[];
  cell: string[];
}

/**
 * The text of one part's XML (Word's `w:` elements, or DrawingML's `a:` ones in slides: their local names are the
 * same). Only text runs (`t`) make text; properties (`…Pr`), and the fallback of alternate content, are skipped.
 */
function xmlToText(xml: string, headings: ReadonlyMap<string, number>): string {
  const blocks: string[] = [];
  const paragraphs: { text: string; level: number }[] = [];
  const tables: Table[] = [];
  let inText = false;
  let skipping: { name: string; depth: number } | undefined;

  const add = (text: string) => {
    const paragraph = paragraphs.at(-1);
    if (paragraph) paragraph.text += text;
  };
  const addBlock = (text: string) => {
    const cell = tables.at(-1)?.cell;
    if (cell) cell.push(text.replace(/\s+/g, ' '));
    else blocks.push(text);
  };

  for (const [, closing, name, attributeSource, selfClosing, text] of xml.matchAll(TOKEN)) {
    if (text !== undefined) {
      if (inText && !skipping) add(decodeEntities(text));
      continue;
    }
    if (skipping) {
      if (name === skipping.name && !selfClosing) skipping.depth += closing ? -1 : 1;
      if (skipping.depth === 0) skipping = undefined;
      else if (name === 'pStyle' && skipping.name === 'pPr' && paragraphs.length > 0) {
        paragraphs.at(-1)!.level = headings.get(attributes(attributeSource!)['w:val'] ?? '') ?? 0;
      }
      continue;
    }
    if (!closing && !selfClosing && (name!.endsWith('Pr') || name === 'Fallback')) {
      skipping = { name: name!, depth: 1 };
      continue;
    }
    switch (name) {
      case 't':
        inText = !closing && !selfClosing;
        break;
      case 'tab':
        if (!closing) add('\t');
        break;
      case 'br':
      case 'cr':
        if (!closing) add('\n');
        break;
      case 'noBreakHyphen':
        add('-');
        break;
      case 'p':
        if (selfClosing) break;
        if (!closing) {
          paragraphs.push({ text: '', level: 0 });
          break;
        }
        {
          const paragraph = paragraphs.pop();
          const words = paragraph?.text.replace(/[^\S\n\t]+/g, ' ').trim();
          if (words) addBlock(paragraph!.level > 0 ? `${'#'.repeat(paragraph!.level)} ${words}` : words);
        }
        break;
      case 'tbl':
        if (selfClosing) break;
        if (!closing) {
          tables.push({ rows: [], cells: [], cell: [] });
          break;
        }
        {
          const rows = tables.pop()?.rows ?? [];
          if (rows.length > 0) addBlock(rows.join('\n'));
        }
        break;
      case 'tr':
        if (tables.length === 0 || selfClosing) break;
        if (closing) {
          const table = tables.at(-1)!;
          if (table.cells.some(Boolean)) table.rows.push(table.cells.join('\t'));
        }
        tables.at(-1)!.cells = [];
        break;
      case 'tc':
        if (tables.length === 0) break;
        if (closing || selfClosing) tables.at(-1)!.cells.push(tables.at(-1)!.cell.join(' '));
        tables.at(-1)!.cell = [];
        break;
    }
  }
  return blocks.join('\n\n');
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML's five named entities and its character references. */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[\da-f]+|#\d+|\w+);/gi, (whole, name: string) => {
    if (name[0] !== '#') return ENTITIES[name] ?? whole;
    const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}
