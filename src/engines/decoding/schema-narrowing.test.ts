import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks, referenceValidator } from '../../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../../../test/support/lantern.ts';
import { constraintGrammar } from './output-constraint.ts';
import { narrowSchema } from './schema-narrowing.ts';

/** The range a narrowed numeric schema stands for: its type and integer-part bounds (see `range` there). */
function rangeOf(schema: Record<string, unknown>): [string, number, number] {
  const [, type, lo, hi] = /:(integer|number):(-?\d+):(-?\d+)$/.exec(schema.const as string)!;
  return [type!, Number(lo), Number(hi)];
}

describe('narrowSchema', () => {
  const number = (bounds: Record<string, number>) => rangeOf(narrowSchema({ type: 'number', ...bounds }));

  it.each([
    // [bounds as sent, the integer parts generated: any fraction of up to six decimals may follow]
    [{ minimum: 0, maximum: 1 }, [0, 0]],
    [{ minimum: 2, maximum: 10.5 }, [2, 9]],
    [{ exclusiveMinimum: 2, maximum: 10 }, [3, 9]],
    [{ minimum: -9, maximum: -2 }, [-8, -2]],
    [{ minimum: -9, exclusiveMaximum: -2 }, [-8, -3]],
    [{ minimum: -3, maximum: 3 }, [-2, 2]],
    [{ minimum: 6 }, [6, 6 + 1e9 - 1]],
    // Found by the property tests: of an inclusive and an exclusive bound on one side, the tighter one holds.
    [{ minimum: -5, exclusiveMinimum: 3, maximum: 10 }, [4, 9]],
  ])('keeps every fraction of %j inside the range', (bounds, expected) => {
    expect(number(bounds)).toEqual(['number', ...expected]);
  });

  it('refuses a range too narrow to generate from, naming response_format', async () => {
    expect(() => number({ minimum: 0.2, maximum: 0.8 })).toThrow(expect.objectContaining({ kind: 'invalid_request' }));
    await expect(
      constraintGrammar({ type: 'json', schema: { type: 'number', minimum: 0.2, maximum: 0.8 } }),
    ).rejects.toMatchObject({ kind: 'invalid_request', param: 'response_format' });
  });

  it('generates email and uri from patterns every validator accepts, anywhere in the schema', () => {
    const out = narrowSchema({ type: 'array', items: { type: 'string', format: 'email', description: 'x' } });
    expect(out.items).toEqual({ type: 'string', description: 'x', pattern: expect.stringContaining('@') });
    expect(narrowSchema({ type: 'string', format: 'uri' })).toEqual({ type: 'string', pattern: expect.any(String) });
    expect(narrowSchema({ type: 'string', format: 'date' })).toEqual({ type: 'string', format: 'date' });
    // XGrammar's ipv4 admitted 10.131.100.000, which ajv-formats rejects.
    const ipv4 = new RegExp(narrowSchema({ type: 'string', format: 'ipv4' }).pattern as string);
    expect(['10.131.100.0', '255.0.9.199'].every((ip) => ipv4.test(ip))).toBe(true);
    expect(['10.131.100.000', '1.2.3.256', '01.2.3.4'].some((ip) => ipv4.test(ip))).toBe(false);
  });
});

describe('narrowSchema: found by the property tests (test/structured-output/schema-properties.test.ts)', () => {
  it('leaves data alone: a `const`, `enum` or `default` that looks like a schema is not narrowed', () => {
    const data = { type: 'number', minimum: 0, maximum: 1 };
    const email = { type: 'string', format: 'email' };
    const schema = { const: data, default: email, anyOf: [{ enum: [email, 1] }, { type: 'integer', minimum: 0.5 }] };
    const narrowed = narrowSchema(schema);
    expect(narrowed).toEqual({ ...schema, anyOf: [{ enum: [email, 1] }, expect.anything()] });
    expect(rangeOf((narrowed.anyOf as Record<string, unknown>[])[1]!)).toEqual(['integer', 1, 1e15 - 1]);
  });

  it.each([
    [{ minimum: 0.5, maximum: 3.5 }, [1, 3]],
    [{ exclusiveMinimum: -2.5, exclusiveMaximum: 1.5 }, [-2, 1]],
    [{ exclusiveMinimum: 2, exclusiveMaximum: 9 }, [3, 8]],
    [{ minimum: -5, exclusiveMinimum: 3, maximum: 10 }, [4, 10]],
    [{ exclusiveMaximum: -790.25 }, [-(1e15 - 1), -791]],
    [{ minimum: -132 }, [-132, 1e15 - 1]],
    [{ minimum: 2e15 }, [2e15, Number.MAX_SAFE_INTEGER]],
  ])('gives an integer whole, inclusive, two-sided bounds (XGrammar aborts on fractional ones): %j', (b, expected) => {
    expect(rangeOf(narrowSchema({ type: 'integer', ...b }))).toEqual(['integer', ...expected]);
  });

  it('leaves the bounds out where an enum or const decides', () => {
    expect(narrowSchema({ type: 'integer', minimum: 0.5, enum: [1, 2] })).toEqual({ type: 'integer', enum: [1, 2] });
  });

  it('refuses an integer range that holds no integer, naming response_format', async () => {
    const schema = { type: 'integer', minimum: 0.2, maximum: 0.8 };
    expect(() => narrowSchema(schema)).toThrow(expect.objectContaining({ kind: 'invalid_request' }));
    await expect(constraintGrammar({ type: 'json', schema })).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'response_format',
    });
  });

  it.each([
    [{ type: 'integer', minimum: -132 }, ['-']],
    [{ type: 'integer', maximum: -7 }, ['-1', '-6']],
  ])('generates only valid integers for a one-sided negative bound: %j', async (schema, before) => {
    // Before: XGrammar's own rule for these admitted the texts in `before`.
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const check = referenceValidator();
    expect(before.map((text) => check(schema, text))).not.toContain(undefined);
    const ended: string[] = [];
    for (let seed = 0; seed < 4; seed++)
      ended.push(
        ...(await randomWalks(grammar, { type: 'json', schema }, { walks: 20, seed, endBias: 0.5 })).completed,
      );
    expect(ended.length).toBeGreaterThan(40);
    expect(ended.filter((text) => check(schema, text) !== undefined)).toEqual([]);
  });

  it('narrows the numbers of a type list with bounds, as an anyOf of single types', () => {
    const narrowed = narrowSchema({ type: ['number', 'null'], minimum: 0, maximum: 1, $defs: { d: {} } });
    expect(narrowed).toEqual({
      $defs: { d: {} },
      anyOf: [expect.anything(), { type: 'null', minimum: 0, maximum: 1 }],
    });
    expect(rangeOf((narrowed.anyOf as Record<string, unknown>[])[0]!)).toEqual(['number', 0, 0]);
  });

  const NAMES = ['a"b', 'back\\slash', 'tab\there', 'new\nline', '\u0001', 'é😀', ''];

  it('escapes property names for the grammar, in properties and required', () => {
    const schema = { type: 'object', properties: { 'a"b': {}, 'x\\y': {}, plain: {} }, required: ['a"b', 'x\\y'] };
    expect(narrowSchema(schema)).toEqual({
      type: 'object',
      properties: { 'a\\\\\\"b': {}, 'x\\\\\\\\y': {}, plain: {} },
      required: ['a\\\\\\"b', 'x\\\\\\\\y'],
    });
  });

  it('property names with quotes, backslashes or control characters compile, and every walk is valid JSON', async () => {
    // Before: XGrammar aborted on `"` and a newline, and generated invalid JSON for `\` and a tab.
    const schema = {
      type: 'object',
      properties: Object.fromEntries(NAMES.map((name) => [name, { type: 'boolean' }])),
      required: NAMES,
      additionalProperties: false,
    };
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const walks = await randomWalks(grammar, { type: 'json', schema }, { walks: 3, maxSteps: 120 });
    expect(walks.completed.length).toBeGreaterThan(0);
    const check = referenceValidator();
    for (const text of walks.completed) {
      expect(check(schema, text)).toBeUndefined();
      expect(Object.keys(JSON.parse(text) as object)).toEqual(NAMES);
    }
    await expect(constraintGrammar({ type: 'json', schema })).resolves.toMatchObject({
      ebnf: expect.stringContaining('tab\\\\there'),
    });
  });
});
