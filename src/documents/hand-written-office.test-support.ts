/**
 * Word and PowerPoint files written by hand, for the tests: zip archives (deflated with `CompressionStream`, their
 * checksums computed) of the few parts Office needs to open them, around the XML a test gives.
 */
import { concatBytes } from '../bytes/byte-chunks.ts';
import { compress } from './bytes.test-support.ts';

/** A zip archive of the given entries, each deflated (or stored as it is, if `store`). */
export async function handWrittenZip(
  entries: Record<string, string | Uint8Array>,
  { store = false }: { store?: boolean } = {},
): Promise<Uint8Array> {
  const encoder = new TextEncoder();
  const locals: Uint8Array[] = [];
  const centrals: Uint8Array[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(entries)) {
    const data = typeof content === 'string' ? encoder.encode(content) : content;
    const method = store ? 0 : 8;
    const compressed = method === 0 ? data : await compress(data, 'deflate-raw');
    const nameBytes = encoder.encode(name);
    const local = new Uint8Array(30 + nameBytes.length + compressed.length);
    const header = new DataView(local.buffer);
    header.setUint32(0, 0x04034b50, true);
    header.setUint16(4, 20, true);
    header.setUint16(8, method, true);
    header.setUint32(14, crc32(data), true);
    header.setUint32(18, compressed.length, true);
    header.setUint32(22, data.length, true);
    header.setUint16(26, nameBytes.length, true);
    local.set(nameBytes, 30);
    local.set(compressed, 30 + nameBytes.length);
    const central = new Uint8Array(46 + nameBytes.length);
    const directory = new DataView(central.buffer);
    directory.setUint32(0, 0x02014b50, true);
    directory.setUint16(4, 20, true);
    directory.setUint16(6, 20, true);
    directory.setUint16(10, method, true);
    directory.setUint32(16, crc32(data), true);
    directory.setUint32(20, compressed.length, true);
    directory.setUint32(24, data.length, true);
    directory.setUint16(28, nameBytes.length, true);
    directory.setUint32(42, offset, true);
    central.set(nameBytes, 46);
    locals.push(local);
    centrals.push(central);
    offset += local.length;
  }
  const directorySize = centrals.reduce((sum, central) => sum + central.length, 0);
  const end = new Uint8Array(22);
  const record = new DataView(end.buffer);
  record.setUint32(0, 0x06054b50, true);
  record.setUint16(8, centrals.length, true);
  record.setUint16(10, centrals.length, true);
  record.setUint32(12, directorySize, true);
  record.setUint32(16, offset, true);
  return concatBytes([...locals, ...centrals, end]);
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

/** A .docx of a body's XML (`<w:p>…</w:p>…`), with styles whose ids are German, as Word in German writes them. */
export function handWrittenDocx(body: string): Promise<Uint8Array> {
  return handWrittenZip({
    '[Content_Types].xml':
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
      '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/></Types>',
    '_rels/.rels': relationships([['rId1', `${R}/officeDocument`, 'word/document.xml']]),
    'word/_rels/document.xml.rels': relationships([['rId1', `${R}/styles`, 'styles.xml']]),
    'word/styles.xml':
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="${W}">` +
      '<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style>' +
      '<w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>' +
      '<w:style w:type="paragraph" w:styleId="Zitat"><w:name w:val="Quote"/></w:style></w:styles>',
    'word/document.xml':
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}" xmlns:r="${R}" ` +
      `xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>${body}` +
      '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>',
  });
}

/** A .pptx of slides, each the XML of its shapes' text bodies (`<a:p>…</a:p>`), listed in the order given. */
export function handWrittenPptx(slides: string[], { order }: { order?: number[] } = {}): Promise<Uint8Array> {
  const P = 'http://schemas.openxmlformats.org/presentationml/2006/main';
  const A = 'http://schemas.openxmlformats.org/drawingml/2006/main';
  const listed = order ?? slides.map((_, index) => index);
  return handWrittenZip({
    '_rels/.rels': relationships([['rId1', `${R}/officeDocument`, 'ppt/presentation.xml']]),
    'ppt/presentation.xml':
      `<p:presentation xmlns:p="${P}" xmlns:r="${R}"><p:sldIdLst>` +
      listed.map((index) => `<p:sldId id="${256 + index}" r:id="rId${index + 1}"/>`).join('') +
      '</p:sldIdLst></p:presentation>',
    'ppt/_rels/presentation.xml.rels': relationships(
      slides.map((_, index) => [`rId${index + 1}`, `${R}/slide`, `slides/slide${index + 1}.xml`]),
    ),
    ...Object.fromEntries(
      slides.map((shapes, index) => [
        `ppt/slides/slide${index + 1}.xml`,
        `<p:sld xmlns:p="${P}" xmlns:a="${A}"><p:cSld><p:spTree><p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/>` +
          `</p:nvSpPr><p:txBody><a:bodyPr/>${shapes}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`,
      ]),
    ),
  });
}

function relationships(list: [id: string, type: string, target: string][]): string {
  return (
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    list.map(([id, type, target]) => `<Relationship Id="${id}" Type="${type}" Target="${target}"/>`).join('') +
    '</Relationships>'
  );
}

/** CRC-32's remainders of each byte (polynomial 0xEDB88320). */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  return crc;
});

/** The zip checksum, CRC-32. */
function crc32(data: Uint8Array): number {
  let crc = ~0;
  for (let index = 0; index < data.length; index++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ data[index]!) & 0xff]!;
  return ~crc >>> 0;
}
