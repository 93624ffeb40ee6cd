import { describe, expect, it } from 'vitest';
import { SCHEMA_CORPUS } from '../../../test/support/schema-corpus.ts';
import { checkConstraint } from './constraint-check.ts';
import { unsupportedFeatures } from './json-schema-support.ts';

const str = { type: 'string' };

/** Each refusal of the list, with a schema that needs it and the words the refusal must name. */
const REFUSED: [string, unknown, string][] = [
  ['not', { not: str }, '`not`'],
  ['allOf', { allOf: [str, { maxLength: 3 }] }, '`allOf`'],
  ['if/then/else', { if: str, then: { maxLength: 2 } }, '`if`'],
  ['dependencies', { type: 'object', dependencies: { a: ['b'] } }, '`dependencies`'],
  ['dependentRequired', { type: 'object', dependentRequired: { a: ['b'] } }, '`dependentRequired`'],
  ['dependentSchemas', { type: 'object', dependentSchemas: { a: {} } }, '`dependentSchemas`'],
  ['patternProperties', { type: 'object', patternProperties: { '^x': str } }, '`patternProperties`'],
  ['propertyNames', { type: 'object', propertyNames: { maxLength: 3 } }, '`propertyNames`'],
  ['unevaluatedProperties', { type: 'object', unevaluatedProperties: false }, '`unevaluatedProperties`'],
  ['unevaluatedItems', { type: 'array', items: str, unevaluatedItems: false }, '`unevaluatedItems`'],
  ['contains', { type: 'array', items: str, contains: { const: 'a' } }, '`contains`'],
  ['minContains', { type: 'array', items: str, minContains: 1 }, '`minContains`'],
  ['multipleOf', { type: 'integer', multipleOf: 3 }, '`multipleOf`'],
  ['minProperties (crashes XGrammar)', { type: 'object', minProperties: 1 }, '`minProperties`'],
  ['$dynamicRef', { $dynamicRef: '#node' }, '`$dynamicRef`'],
  ['uniqueItems', { type: 'array', items: str, uniqueItems: true }, '`uniqueItems`'],
  ['an unknown format', { type: 'string', format: 'hostname' }, '`format: "hostname"`'],
  ['a remote $ref', { $ref: 'https://example.com/s.json' }, '`$ref: "https://example.com/s.json"`'],
  ['a $ref to nothing', { $ref: '#/$defs/missing' }, '`$ref: "#/$defs/missing"`'],
  [
    'draft-04 boolean exclusiveMinimum (crashes XGrammar)',
    { type: 'number', minimum: 0, exclusiveMinimum: true },
    'draft-04',
  ],
  ['pattern with maxLength', { type: 'string', pattern: '^a+$', maxLength: 3 }, '`pattern` together with'],
  ['an enum of 65 values', { enum: Array.from({ length: 65 }, (_, i) => `v${i}`) }, 'more than 64 values'],
  ['minItems without items (crashes XGrammar)', { type: 'array', minItems: 1 }, 'without `items`'],
  ['required names an undeclared property', { type: 'object', properties: { a: str }, required: ['b'] }, '`b`'],
  ['a false subschema (crashes XGrammar)', { type: 'object', properties: { a: false } }, 'a `false` schema'],
  ['oneOf whose alternatives overlap', { oneOf: [str, { type: 'string', maxLength: 3 }] }, '`oneOf`'],
  ['oneOf of integer and number', { oneOf: [{ type: 'integer' }, { type: 'number' }] }, '`oneOf`'],
  // Found by the property tests (test/structured-output/schema-properties.test.ts): each crashed XGrammar, or was
  // let through unenforced, before.
  [
    'required naming an Object.prototype member',
    { type: 'object', properties: {}, required: ['constructor'] },
    '`constructor`',
  ],
  ['required without properties', { type: 'object', required: ['a'] }, '`required` names `a`'],
  ['a $ref to an Object.prototype member', { $defs: {}, $ref: '#/$defs/toString' }, '`$ref: "#/$defs/toString"`'],
  ['a $ref with ~1 (XGrammar does not decode it)', { $defs: { 'a/b': str }, $ref: '#/$defs/a~1b' }, '`~` or `%`'],
  ['a $ref with %-escapes', { $defs: { 'a%20b': str }, $ref: '#/$defs/a%20b' }, '`~` or `%`'],
  ['an invalid pattern', { type: 'string', pattern: '(x|yz)?{0,2}' }, 'not a valid regular expression'],
  ['a pattern with a lookahead', { type: 'string', pattern: '(?=a)b' }, 'a lookaround'],
  ['a pattern with a lookbehind', { type: 'string', pattern: '(?<!a)b' }, 'a lookaround'],
  ['a pattern with a backreference', { type: 'string', pattern: '(a)\\1' }, 'a backreference'],
  ['a pattern with a named backreference', { type: 'string', pattern: '(?<n>a)\\k<n>' }, 'a backreference'],
  ['a pattern with a word boundary', { type: 'string', pattern: '\\bfoo' }, 'a word boundary'],
  ['a pattern with a Unicode property', { type: 'string', pattern: '\\p{L}+' }, 'a Unicode property escape'],
  ['an integer bound past 2^53 (XGrammar aborts past 2^63)', { type: 'integer', minimum: -1e20 }, 'past ±2^53'],
  ['a number bound past 2^53', { type: 'number', maximum: 2 ** 60 }, 'past ±2^53'],
];

describe('unsupportedFeatures', () => {
  it.each(REFUSED)('refuses %s', (_, schema, named) => {
    const found = unsupportedFeatures(schema);
    expect(found.join('; ')).toContain(named);
  });

  it('finds refusals anywhere: in properties, items, $defs, anyOf', () => {
    const deep = {
      type: 'object',
      properties: { list: { type: 'array', items: { anyOf: [{ $ref: '#/$defs/x' }, { type: 'null' }] } } },
      $defs: { x: { type: 'integer', multipleOf: 2 } },
    };
    expect(unsupportedFeatures(deep)).toEqual(['`multipleOf` at #/$defs/x']);
  });

  it('ignores unknown keywords, Object.prototype names included, and accepts the patterns XGrammar takes', () => {
    expect(unsupportedFeatures({ type: 'string', constructor: 1, toString: 'x' })).toEqual([]);
    for (const pattern of ['(?:ab)+', '(?<n>a)', '[\\b\\w-]', '^\\d{3}-\\d{4}$', 'a*?', '\\u0041', '[^"]'])
      expect(unsupportedFeatures({ type: 'string', pattern }), pattern).toEqual([]);
  });

  it('accepts every schema of the corpus, and oneOf told apart by type or by a const property', () => {
    for (const { name, schema } of SCHEMA_CORPUS) expect(unsupportedFeatures(schema), name).toEqual([]);
  });

  it('is the 400 of the engines: invalid_request naming response_format, with what is unsupported', () => {
    expect(() => checkConstraint({ type: 'json', schema: { type: 'integer', multipleOf: 5 } })).toThrow(
      expect.objectContaining({
        kind: 'invalid_request',
        param: 'response_format',
        message: expect.stringContaining('multipleOf'),
      }),
    );
    expect(() => checkConstraint({ type: 'json', schema: null })).not.toThrow();
  });
});
