/**
 * JSON as text to search: one line per leaf, `path.to.key: value` (`users[0].name: Ada`), records apart by a blank
 * line. Pretty-printed JSON reads well whole, but a chunk starts anywhere: a chunk from the middle of a long array
 * would hold values whose keys' ancestors (which record, of what) lie in an earlier chunk, among braces and quotes
 * that are tokens of no meaning. A leaf's full path on its own line keeps every value with what it is, in any chunk,
 * so a question about a user's email finds the line `users[3].email: …`; and a blank line between records (the
 * elements of an array that are objects or arrays) lets the chunker end chunks between them rather than inside one.
 */

/**
 * The longest path written before a value, in characters; a longer one keeps its end (the keys nearest the value,
 * which say most about it) after an ellipsis: `…b.b.b.a: 1`. Without it, text grew with the square of a document's
 * depth (every level wrote its whole path): a 192 KB file nested `{"a":1,"b":{…}}` made hundreds of millions of
 * characters and took the process down (issue 63). With it, a document's text is at most a fixed multiple of its size.
 */
export const MAX_PATH_CHARS = 128;

/** A key written as is in a path: no dots, brackets, colons or quotes, and single spaces only between words. */
const PLAIN_KEY = /^[^\s.[\]:"]+(?: [^\s.[\]:"]+)*$/;

/**
 * A JSON document's leaves as `path: value` lines. A string is written as is (without quotes, its newlines kept); an
 * empty object or array as `{}` or `[]`; a document that is a single value as that value.
 *
 * @throws SyntaxError when `json` does not parse.
 * @example
 * jsonToText('{"users": [{"name": "Ada", "tags": ["math"]}]}'); // 'users[0].name: Ada\nusers[0].tags[0]: math'
 */
export function jsonToText(json: string): string {
  return leafLines(JSON.parse(json) as unknown).join('\n');
}

/**
 * A JSON Lines file's records, each as {@link jsonToText} writes a document, apart by a blank line. Blank lines are
 * skipped.
 *
 * @throws SyntaxError naming the first line that does not parse.
 */
export function jsonLinesToText(jsonLines: string): string {
  const records: string[] = [];
  const lines = jsonLines.split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (error) {
      throw new SyntaxError(`line ${index + 1}: ${(error as Error).message}`, { cause: error });
    }
    records.push(leafLines(record).join('\n'));
  }
  return records.join('\n\n');
}

/**
 * The lines of one document, walked depth first in document order, without recursion (a deeply nested document must
 * not overflow the stack). A record's lines are preceded by a blank line (one, however many records start there), but
 * for the first lines of all.
 */
function leafLines(root: unknown): string[] {
  const lines: string[] = [];
  const stack: { path: string; value: unknown; record: boolean }[] = [{ path: '', value: root, record: false }];
  while (stack.length > 0) {
    const { path, value, record } = stack.pop()!;
    if (record && lines.length > 0 && lines.at(-1) !== '') lines.push('');
    const children = childrenOf(value, path);
    if (children === undefined) lines.push(path === '' ? scalar(value) : `${path}: ${scalar(value)}`);
    else if (children.length === 0)
      lines.push(`${path}${path === '' ? '' : ': '}${Array.isArray(value) ? '[]' : '{}'}`);
    else for (let index = children.length - 1; index >= 0; index -= 1) stack.push(children[index]!);
  }
  return lines;
}

/** An array's or object's members, with their paths and whether each is a record; undefined for a scalar. */
function childrenOf(value: unknown, path: string): { path: string; value: unknown; record: boolean }[] | undefined {
  if (Array.isArray(value)) {
    return value.map((item: unknown, index) => ({
      path: bounded(`${path}[${index}]`),
      value: item,
      record: isContainer(item),
    }));
  }
  if (isContainer(value)) {
    return Object.entries(value).map(([key, item]) => ({
      path: bounded((path === '' ? '' : path + (PLAIN_KEY.test(key) ? '.' : '')) + keyInPath(key)),
      value: item,
      record: false,
    }));
  }
  return undefined;
}

/** A path of at most {@link MAX_PATH_CHARS}, its end kept (a parent's path is already bounded: each child's costs
 * at most its own key more). */
function bounded(path: string): string {
  return path.length <= MAX_PATH_CHARS ? path : `…${path.slice(-(MAX_PATH_CHARS - 1))}`;
}

function keyInPath(key: string): string {
  return PLAIN_KEY.test(key) ? key : `[${JSON.stringify(key)}]`;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

function scalar(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
