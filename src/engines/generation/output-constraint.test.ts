import { describe, expect, it } from 'vitest';
import { constraintGrammar, narrow, narrowSchema, violation } from './output-constraint.ts';

describe('narrowSchema', () => {
  const number = (bounds: Record<string, number>) => narrowSchema({ type: 'number', ...bounds });

  it.each([
    // [bounds as sent, bounds XGrammar gets: a fraction may follow the integer part]
    [
      { minimum: 0, maximum: 1 },
      { type: 'number', minimum: 0, maximum: 0 },
    ],
    [
      { minimum: 2, maximum: 10.5 },
      { type: 'number', minimum: 2, maximum: 9 },
    ],
    [
      { exclusiveMinimum: 2, maximum: 10 },
      { type: 'number', minimum: 3, maximum: 9 },
    ],
    [
      { minimum: -9, maximum: -2 },
      { type: 'number', minimum: -8, maximum: -2 },
    ],
    [
      { minimum: -9, exclusiveMaximum: -2 },
      { type: 'number', minimum: -8, maximum: -3 },
    ],
  ])('keeps every fraction of %j inside the range', (bounds, expected) => {
    expect(number(bounds)).toEqual(expected);
  });

  it('gives a one-sided bound its other side, and splits a range across zero', () => {
    expect(number({ minimum: 6 })).toEqual({ type: 'number', minimum: 6, maximum: 6 + 1e9 - 1 });
    expect(number({ minimum: -3, maximum: 3 })).toEqual({
      anyOf: [
        { type: 'number', minimum: -2, maximum: -1 },
        { type: 'number', minimum: 0, maximum: 2 },
      ],
    });
  });

  it('refuses a range too narrow to generate from, naming response_format', () => {
    expect(() => number({ minimum: 0.2, maximum: 0.8 })).toThrow(
      expect.objectContaining({ kind: 'invalid_request', param: 'response_format' }),
    );
  });

  it('generates email and uri from patterns every validator accepts, anywhere in the schema', () => {
    const out = narrowSchema({ type: 'array', items: { type: 'string', format: 'email', description: 'x' } });
    expect(out.items).toEqual({ type: 'string', description: 'x', pattern: expect.stringContaining('@') });
    expect(narrowSchema({ type: 'string', format: 'uri' })).toEqual({ type: 'string', pattern: expect.any(String) });
    expect(narrowSchema({ type: 'string', format: 'date' })).toEqual({ type: 'string', format: 'date' });
  });
});

describe('the grammar text', () => {
  it('has no rule that admits raw control characters, the 31st of every month or a 60th minute', async () => {
    const grammar = await constraintGrammar({
      type: 'json',
      schema: {
        type: 'object',
        properties: {
          s: { type: 'string', maxLength: 3 },
          d: { type: 'string', format: 'date' },
          t: { type: 'string', format: 'date-time' },
        },
      },
    });
    expect(grammar).not.toContain('[^\\"\\\\\\r\\n]');
    expect(grammar).toContain('[^\\0-\\x1f\\"\\\\]');
    expect(grammar).not.toContain('("3" [01])');
    expect(grammar).not.toContain('("6" "0")');
    expect(narrow('a ::= [^\\"\\\\\\r\\n]')).toBe('a ::= [^\\0-\\x1f\\"\\\\]');
  });

  it('is written once per constraint (cached)', () => {
    const constraint = { type: 'json' as const, schema: { type: 'boolean' } };
    expect(constraintGrammar(constraint)).toBe(constraintGrammar({ ...constraint }));
  });
});

describe('violation', () => {
  const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };

  it('says nothing of a valid answer, and why an invalid one is not', () => {
    expect(violation({ type: 'json', schema }, '{"a":1}')).toBeUndefined();
    expect(violation({ type: 'json', schema }, '{"a":')).toMatch(/not JSON/);
    expect(violation({ type: 'json', schema }, '{"a":"x"}')).toMatch(/does not match the schema/);
    expect(violation({ type: 'json', schema: null }, '[1]')).toMatch(/does not match/);
    expect(violation({ type: 'json', schema: null }, '{"b":[1]}')).toBeUndefined();
  });

  it('answers (rather than throws) where the validator itself throws: a lone surrogate in a property name', () => {
    expect(
      violation({ type: 'json', schema: { type: 'object', additionalProperties: false } }, '{"\\ud800":1}'),
    ).toMatch(/could not be validated/);
  });
});
