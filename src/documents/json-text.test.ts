import { describe, expect, it } from 'vitest';
import { jsonLinesToText, jsonToText, MAX_PATH_CHARS } from './json-text.ts';

describe('jsonToText', () => {
  it('writes each leaf with its full path, and records apart by a blank line', () => {
    const json = JSON.stringify({
      title: 'Team',
      members: [
        { name: 'Ada', email: 'ada@example.com', langs: ['en', 'fr'] },
        { name: 'Alan', retired: true, age: null, score: 9.5 },
      ],
      empty: { list: [], object: {} },
    });
    expect(jsonToText(json)).toBe(
      [
        'title: Team',
        '',
        'members[0].name: Ada',
        'members[0].email: ada@example.com',
        'members[0].langs[0]: en',
        'members[0].langs[1]: fr',
        '',
        'members[1].name: Alan',
        'members[1].retired: true',
        'members[1].age: null',
        'members[1].score: 9.5',
        'empty.list: []',
        'empty.object: {}',
      ].join('\n'),
    );
  });

  it('quotes keys that would read as a path, and keeps plain keys with spaces as they are', () => {
    const json = JSON.stringify({ 'First Name': 'Ada', 'a.b': 1, '': 2, nested: { 'x:y': 3, '[0]': 4 } });
    expect(jsonToText(json)).toBe(
      ['First Name: Ada', '["a.b"]: 1', '[""]: 2', 'nested["x:y"]: 3', 'nested["[0]"]: 4'].join('\n'),
    );
  });

  it('writes a top-level array by index, and a document of one value as that value', () => {
    expect(jsonToText('[{"a": 1}, {"a": 2}, 3]')).toBe('[0].a: 1\n\n[1].a: 2\n[2]: 3');
    expect(jsonToText('[[{"a": 1}], [{"a": 2}]]')).toBe('[0][0].a: 1\n\n[1][0].a: 2');
    expect(jsonToText('"a string\\nover two lines"')).toBe('a string\nover two lines');
    expect(jsonToText('42')).toBe('42');
    expect(jsonToText('{}')).toBe('{}');
    expect(jsonToText('[]')).toBe('[]');
  });

  it('writes a document nested thousands deep in text linear in its size, each path ending as it did', () => {
    // 192 KB of {"a":1,"b":{"a":1,"b":…}}: every level wrote its whole path, hundreds of millions of characters in all,
    // and the process died (issue 63 #1).
    const depth = 16_384;
    const json = '{"a":1,"b":'.repeat(depth) + '{}' + '}'.repeat(depth);
    expect(json.length).toBeGreaterThan(192_000);
    const text = jsonToText(json);
    expect(text.length).toBeLessThan(16 * json.length);
    const lines = text.split('\n');
    expect(lines).toHaveLength(depth + 1);
    expect(lines[0]).toBe('a: 1');
    expect(lines[2]).toBe('b.b.a: 1');
    const last = lines.at(-2)!;
    expect(last).toMatch(/^….*\.b\.b\.a: 1$/);
    expect(last.length).toBe(MAX_PATH_CHARS + ': 1'.length);
    expect(lines.at(-1)).toMatch(/\.b: \{\}$/);
  });

  it('walks a deeply nested document without overflowing the stack', () => {
    const depth = 50_000;
    const json = '['.repeat(depth) + '"deep"' + ']'.repeat(depth);
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return; // This engine's JSON.parse refuses the depth itself: nothing to walk.
    }
    expect(parsed).toBeDefined();
    expect(jsonToText(json).endsWith('[0]: deep')).toBe(true);
  });

  it('throws a SyntaxError for JSON that does not parse', () => {
    expect(() => jsonToText('{"a": ')).toThrow(SyntaxError);
  });
});

describe('jsonLinesToText', () => {
  it('writes each record as a document, apart by a blank line, skipping blank lines', () => {
    const jsonl = '{"q": "What?", "a": "This."}\n\n{"q": "Why?", "tags": ["x"]}\n"plain"\n';
    expect(jsonLinesToText(jsonl)).toBe('q: What?\na: This.\n\nq: Why?\ntags[0]: x\n\nplain');
  });

  it('names the line that does not parse', () => {
    expect(() => jsonLinesToText('{"a": 1}\n{"a": \n')).toThrow(/^line 2: /);
  });
});
