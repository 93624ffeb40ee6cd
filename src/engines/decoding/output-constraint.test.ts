import { describe, expect, it } from 'vitest';
import { constraintGrammar, narrow, violation } from './output-constraint.ts';

describe('the grammar text', () => {
  it('has no rule that admits raw control characters, the 31st of every month or a 60th minute', async () => {
    const { ebnf: grammar } = (await constraintGrammar({
      type: 'json',
      schema: {
        type: 'object',
        properties: {
          s: { type: 'string', maxLength: 3 },
          d: { type: 'string', format: 'date' },
          t: { type: 'string', format: 'date-time' },
        },
      },
    })) as { ebnf: string };
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
    expect(violation({ type: 'json', schema }, { text: '{"a":1}' })).toBeUndefined();
    expect(violation({ type: 'json', schema }, { text: '{"a":' })).toMatch(/not JSON/);
    expect(violation({ type: 'json', schema }, { text: '{"a":"x"}' })).toMatch(/does not match the schema/);
    expect(violation({ type: 'json', schema: null }, { text: '[1]' })).toMatch(/does not match/);
    expect(violation({ type: 'json', schema: null }, { text: '{"b":[1]}' })).toBeUndefined();
  });

  it('answers (rather than throws) where the validator itself throws: a lone surrogate in a property name', () => {
    expect(
      violation({ type: 'json', schema: { type: 'object', additionalProperties: false } }, { text: '{"\\ud800":1}' }),
    ).toMatch(/could not be validated/);
  });
});
