/**
 * JSON as text to search: one line per leaf, `path.to.key: value` (`users[0].name: Ada`), records apart by a blank
 * line. Pretty-printed JSON reads well whole, but a chunk starts anywhere: a chunk from the middle of a long array
 * would hold values whose keys' ancestors (which record, of what) lie in an earlier chunk, among braces and quotes
 * that are tokens of no meaning. A leaf's full path on its own line keeps every value with what it is, in any chunk,
 * so a question about a user's email finds the line `users[3].email: …`; and a blank line between records (the
 * elements of an array that are objects or arrays) lets the chunker end chunks between them rather than inside one.
 */

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
    return value.map((item: unknown, index) => ({ path: `${path}[${index}]`, value: item, record: isContainer(item) }));
  }
  if (isContainer(value)) {
    return Object.entries(value).map(([key, item]) => ({
      path: (path === '' ? '' : path + (PLAIN_KEY.test(key) ? '.' : '')) + keyInPath(key),
      value: item,
      record: false,
    }));
  }
  return undefined;
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
