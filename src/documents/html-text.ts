/**
 * An HTML page's readable text, without a DOM: the service worker has no `DOMParser`, so this is a small scanner that
 * keeps what a reader sees. Scripts, styles, templates, `<noscript>` fallbacks, `<nav>` menus and inline SVG go (code,
 * markup and menus repeated on every page of a site, which would crowd the page's own words out of its chunks);
 * comments and doctypes go; blocks become lines, and paragraphs, headings, lists and tables are set apart by a blank
 * line, so that chunks end between them; table cells are joined with ` | `; whitespace runs become one space, but in
 * `<pre>`, where it is kept; character references are decoded.
 */

/** Elements whose content is not text at all: skipped to their end tag, unparsed (`</div>` in a script is script). */
const RAW_TEXT = new Set(['script', 'style', 'xmp', 'iframe', 'noembed', 'noframes']);
/** Elements whose content is parsed but not shown, or not the page's own: skipped with everything inside. */
const HIDDEN = new Set(['template', 'noscript', 'nav', 'svg', 'select', 'object']);
/** Elements set apart by a blank line. */
const PARAGRAPHS = new Set([
  'p',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'blockquote',
  'pre',
  'ul',
  'ol',
  'dl',
  'table',
  'figure',
  'hr',
  'section',
  'article',
  'aside',
  'header',
  'footer',
  'main',
  'address',
  'details',
  'fieldset',
  'form',
  'title',
]);
/** Elements on lines of their own. */
const LINES = new Set([
  'div',
  'li',
  'dt',
  'dd',
  'tr',
  'caption',
  'figcaption',
  'summary',
  'legend',
  'br',
  'body',
  'html',
  'dialog',
  'center',
  'menu',
  'search',
  'hgroup',
  'thead',
  'tbody',
  'tfoot',
]);
const CELLS = new Set(['td', 'th']);
/** Elements whose whitespace is kept as written. */
const PREFORMATTED = new Set(['pre', 'textarea', 'listing']);

const TAG_NAME = /<(\/?)([a-zA-Z][^\s/>]*)/y;

/**
 * The text a reader of `html` sees, as lines, and the page's `<title>` (the rest of `<head>` holds no text: its
 * scripts and styles go, and its other elements are empty).
 *
 * @example
 * htmlToText('<h1>Hi</h1><p>One&nbsp;&amp; <b>two</b></p>'); // 'Hi\n\nOne & two'
 */
export function htmlToText(html: string): string {
  const out = new TextWriter();
  let hidden = 0;
  let preformatted = 0;
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf('<', at);
    const textEnd = open < 0 ? html.length : open;
    if (hidden === 0 && textEnd > at) out.text(decodeEntities(html.slice(at, textEnd)), preformatted > 0);
    if (open < 0) break;
    if (html.startsWith('<!--', open)) {
      const close = html.indexOf('-->', open + 4);
      at = close < 0 ? html.length : close + 3;
      continue;
    }
    if (html[open + 1] === '!' || html[open + 1] === '?') {
      // A doctype, a CDATA section or a processing instruction: as in a browser's HTML, none is text.
      const close = html.indexOf('>', open);
      at = close < 0 ? html.length : close + 1;
      continue;
    }
    TAG_NAME.lastIndex = open;
    const tag = TAG_NAME.exec(html);
    if (!tag) {
      // A `<` that opens no tag (`a < b`) is text.
      if (hidden === 0) out.text('<', preformatted > 0);
      at = open + 1;
      continue;
    }
    const tagEnd = endOfTag(html, TAG_NAME.lastIndex);
    at = tagEnd;
    const closing = tag[1] === '/';
    const name = tag[2]!.toLowerCase();
    const selfClosing = html[tagEnd - 2] === '/';

    if (RAW_TEXT.has(name)) {
      // Even inside a hidden element: a script's `'<svg>'` must not open one.
      if (!closing) at = closingTag(html, name, at);
      continue;
    }
    if (hidden > 0) {
      if (HIDDEN.has(name) && !selfClosing) hidden += closing ? -1 : 1;
      continue;
    }
    if (HIDDEN.has(name)) {
      if (!closing && !selfClosing) hidden = 1;
      continue;
    }
    if (PREFORMATTED.has(name) && !selfClosing) {
      preformatted = Math.max(0, preformatted + (closing ? -1 : 1));
      // As in a browser, a newline just after `<pre>` is not part of its text.
      if (!closing && html[at] === '\n') at += 1;
    }
    if (name === 'br') out.lineBreak();
    else if (PARAGRAPHS.has(name)) out.block(2);
    else if (LINES.has(name)) out.block(1);
    else if (CELLS.has(name) && !closing) out.cell();
  }
  return out.toString();
}

/** Where the tag whose name ends at `from` ends: past its `>`, skipping quoted attribute values, which may hold `>`. */
function endOfTag(html: string, from: number): number {
  let afterEquals = false;
  for (let at = from; at < html.length; at += 1) {
    const char = html[at]!;
    if (char === '>') return at + 1;
    if ((char === '"' || char === "'") && afterEquals) {
      const close = html.indexOf(char, at + 1);
      // An unclosed quote runs to the end, as in a browser: the rest is inside the tag.
      if (close < 0) return html.length;
      at = close;
    }
    if (char === '=') afterEquals = true;
    else if (!/\s/.test(char)) afterEquals = false;
  }
  return html.length;
}

/** Where the `</name>` tag at or after `from` ends, found case-insensitively; the end of `html` if there is none. */
function closingTag(html: string, name: string, from: number): number {
  const pattern = new RegExp(`</${name}[\\s/>]`, 'gi');
  pattern.lastIndex = from;
  const found = pattern.exec(html);
  return found ? endOfTag(html, found.index + 2 + name.length) : html.length;
}

/**
 * Collects text the way a browser lays out blocks: whitespace runs are one space, none at a line's start or end;
 * breaks between blocks are at most a blank line, none at the start or end.
 */
class TextWriter {
  private readonly parts: string[] = [];
  /** Newlines owed before the next text: 1 for a new line, 2 for a blank line. */
  private pendingBreak = 0;
  private pendingSpace = false;
  private pendingCell = false;
  private lineHasText = false;

  text(text: string, preformatted: boolean): void {
    if (preformatted) {
      if (text === '') return;
      this.flush();
      this.parts.push(text);
      this.lineHasText = !text.endsWith('\n');
      return;
    }
    const collapsed = text.replace(/\s+/g, ' ');
    if (collapsed === ' ' || collapsed === '') {
      if (collapsed === ' ' && this.lineHasText) this.pendingSpace = true;
      return;
    }
    if (collapsed.startsWith(' ') && this.lineHasText) this.pendingSpace = true;
    this.flush();
    const trimmed = collapsed.trim();
    this.parts.push(trimmed);
    this.lineHasText = true;
    this.pendingSpace = collapsed.endsWith(' ');
  }

  block(newlines: 1 | 2): void {
    if (this.parts.length > 0) this.pendingBreak = Math.max(this.pendingBreak, newlines);
    this.pendingSpace = false;
    this.pendingCell = false;
    this.lineHasText = false;
  }

  lineBreak(): void {
    // Two <br>s in a row make a blank line, as does a <br> after a block; none makes more.
    if (this.parts.length > 0) this.pendingBreak = Math.min(2, this.pendingBreak + 1);
    this.pendingSpace = false;
    this.pendingCell = false;
    this.lineHasText = false;
  }

  cell(): void {
    if (this.lineHasText) this.pendingCell = true;
  }

  private flush(): void {
    if (this.pendingBreak > 0) this.parts.push('\n'.repeat(this.pendingBreak));
    else if (this.pendingCell) this.parts.push(' | ');
    else if (this.pendingSpace) this.parts.push(' ');
    this.pendingBreak = 0;
    this.pendingSpace = false;
    this.pendingCell = false;
  }

  /** The text, with no more than a blank line anywhere (a `<pre>` ending in a newline, then a block's break). */
  toString(): string {
    return this.parts
      .join('')
      .replace(/\n{3,}/g, '\n\n')
      .trimEnd();
  }
}

/**
 * Named references a page is likely to use: XML's five, Latin-1's (`&eacute;`, `&copy;`, in the order of their code
 * points from U+00A0), and typography's. Others, rare, stay as written, as a browser leaves a name it does not know.
 */
const LATIN_1 =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute ' +
  'micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig ' +
  'Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash ' +
  'Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc ' +
  'euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml ' +
  'yacute thorn yuml';
const NAMED: Record<string, string> = {
  ...Object.fromEntries(LATIN_1.split(' ').map((name, index) => [name, String.fromCharCode(0xa0 + index)])),
  // A non-breaking space is a space to a search; a soft hyphen is nothing.
  nbsp: ' ',
  shy: '',
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  ensp: ' ',
  emsp: ' ',
  thinsp: ' ',
  zwnj: '',
  zwj: '',
  lrm: '',
  rlm: '',
  ndash: '–',
  mdash: '—',
  lsquo: '‘',
  rsquo: '’',
  sbquo: '‚',
  ldquo: '“',
  rdquo: '”',
  bdquo: '„',
  lsaquo: '‹',
  rsaquo: '›',
  hellip: '…',
  bull: '•',
  dagger: '†',
  Dagger: '‡',
  permil: '‰',
  prime: '′',
  Prime: '″',
  euro: '€',
  trade: '™',
  larr: '←',
  rarr: '→',
  uarr: '↑',
  darr: '↓',
  harr: '↔',
  minus: '−',
  le: '≤',
  ge: '≥',
  ne: '≠',
  asymp: '≈',
  infin: '∞',
  OElig: 'Œ',
  oelig: 'œ',
  Scaron: 'Š',
  scaron: 'š',
  Yuml: 'Ÿ',
  fnof: 'ƒ',
  circ: 'ˆ',
  tilde: '˜',
};

/**
 * What browsers make of numeric references to the C1 controls U+0080–U+009F: the Windows-1252 characters that pages
 * saved from Windows meant (`&#146;` is `’`). Positions without one are `_` (kept as the code point).
 */
const WINDOWS_1252 = '€_‚ƒ„…†‡ˆ‰Š‹Œ_Ž__‘’“”•–—˜™š›œ_žŸ';

function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(?:#(\d+);?|#[xX]([0-9a-fA-F]+);?|([a-zA-Z][a-zA-Z0-9]*);)/g, (reference, dec, hex, name) => {
    if (name !== undefined) return Object.hasOwn(NAMED, name) ? NAMED[name]! : reference;
    const code = dec !== undefined ? Number.parseInt(dec as string, 10) : Number.parseInt(hex as string, 16);
    if (code >= 0x80 && code <= 0x9f && WINDOWS_1252[code - 0x80] !== '_') return WINDOWS_1252[code - 0x80]!;
    // As a browser does: NUL, surrogates and numbers past Unicode are the replacement character.
    if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(code);
  });
}
