import { describe, expect, it } from 'vitest';
import { constraintGrammar, violation } from './output-constraint.ts';

describe('the grammar text', () => {
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

  it('matches the schema’s patterns in linear time: a matching but exponential pattern, a long property name', () => {
    // On the engine's backtracking RegExp each of these took longer than anyone waits (2^40 ways to split the a's).
    const as = 'a'.repeat(40);
    const patterned = { type: 'string', pattern: '(a*)*b|^a*$' };
    expect(violation({ type: 'json', schema: patterned }, { text: JSON.stringify(as) })).toBeUndefined();
    expect(violation({ type: 'json', schema: patterned }, { text: JSON.stringify(`${as}!`) })).toMatch(/pattern/);
    const keyed = { type: 'object', patternProperties: { '^(a+)+$': { type: 'integer' } } };
    expect(violation({ type: 'json', schema: keyed }, { text: JSON.stringify({ [`${as}!`]: 'x' }) })).toBeUndefined();
    expect(violation({ type: 'json', schema: keyed }, { text: JSON.stringify({ [as]: 'x' }) })).toMatch(/integer/);
    // A pattern with no linear-time automaton is not run at all.
    const lookahead = { type: 'string', pattern: '^(?=a)' };
    expect(violation({ type: 'json', schema: lookahead }, { text: '"a"' })).toMatch(
      /could not be validated.*lookaround/,
    );
  });

  it('answers (rather than throws) where the validator itself throws: a lone surrogate in a property name', () => {
    expect(
      violation({ type: 'json', schema: { type: 'object', additionalProperties: false } }, { text: '{"\\ud800":1}' }),
    ).toMatch(/could not be validated/);
  });
});
