import { describe, expect, it } from 'vitest';
import { grammarFor, randomWalks, referenceValidator } from '../../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../../test/support/lantern.ts';
import { violation } from './output-constraint.ts';
import { compileBudget, compileSchema, SchemaRefused } from './schema-grammar.ts';
import { MAX_STEPS, StepBudget } from './step-budget.ts';

/*
 * Lantern's schema compiler, on the keywords real-world schemas use (issue 23's list, each one refused before): every
 * schema compiles, and every random walk through its grammar on tiny-chat's vocabulary (any token the mask allows, as
 * an adversarial model would take) that ends is valid per ajv and per Lantern's own validator. What no grammar can
 * enforce is refused, naming the keyword and where it is.
 */

const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});
const str = { type: 'string', maxLength: 8 };
const int = { type: 'integer', minimum: 0, maximum: 99 };

const ENFORCED: [string, Record<string, unknown>][] = [
  ['minItems/maxItems without items', { type: 'array', minItems: 1, maxItems: 3 }],
  ['required absent from properties', obj({ a: str }, { required: ['a', 'b'] })],
  [
    'required without properties, additionalProperties a schema',
    { type: 'object', required: ['id'], additionalProperties: int },
  ],
  ['allOf merged', { allOf: [obj({ a: str }), obj({ b: int }, { required: ['b'] }), { required: ['a'] }] }],
  [
    'allOf with additionalProperties: false',
    { allOf: [obj({ a: str }, { additionalProperties: false }), { required: ['a'] }] },
  ],
  ['patternProperties', { type: 'object', patternProperties: { '^x-[a-z]{1,4}$': str }, additionalProperties: false }],
  ['patternProperties beside properties', obj({ id: int }, { patternProperties: { '^x-': str }, required: ['id'] })],
  [
    'propertyNames',
    { type: 'object', propertyNames: { pattern: '^[a-z]{1,6}$' }, additionalProperties: int, minProperties: 1 },
  ],
  ['an enum of 200 values', { enum: Array.from({ length: 200 }, (_, i) => `v${i}`) }],
  ['pattern with length bounds', { type: 'string', pattern: '^[a-z0-9-]+$', minLength: 3, maxLength: 6 }],
  ['pattern with a long maxLength', { type: 'string', pattern: '^[A-Z][a-z]*$', maxLength: 500 }],
  ['minProperties/maxProperties', obj({ a: int, b: int, c: int, d: int }, { minProperties: 2, maxProperties: 3 })],
  ['dependentRequired', obj({ a: int, b: int, c: int }, { dependentRequired: { a: ['b'], c: ['a'] } })],
  [
    'dependencies (draft 7), both forms',
    obj({ a: int, b: int }, { dependencies: { a: ['b'], b: { required: ['a'] } } }),
  ],
  [
    'formats validators check',
    obj(
      {
        h: { type: 'string', format: 'hostname' },
        v6: { type: 'string', format: 'ipv6' },
        d: { type: 'string', format: 'duration' },
        p: { type: 'string', format: 'json-pointer' },
        b: { type: 'string', format: 'byte' },
        t: { type: 'string', format: 'time' },
      },
      { required: ['h', 'v6', 'd', 'p', 'b', 't'] },
    ),
  ],
  [
    'unknown formats ignored',
    obj(
      {
        a: { type: 'string', format: 'password' },
        b: { type: 'number', format: 'double' },
        c: { type: 'string', format: 'x-custom' },
      },
      { required: ['a', 'b', 'c'] },
    ),
  ],
  [
    'int32 and int64',
    obj({ a: { type: 'integer', format: 'int32' }, b: { type: 'integer', format: 'int64' } }, { required: ['a', 'b'] }),
  ],
  [
    'oneOf told apart by required properties',
    { type: 'object', properties: { a: str, b: str }, oneOf: [{ required: ['a'] }, { required: ['b'] }] },
  ],
  [
    'oneOf of overlapping strings, validated at the end',
    {
      oneOf: [
        { type: 'string', maxLength: 3 },
        { type: 'integer', minimum: 0, maximum: 9 },
      ],
    },
  ],
  [
    'uniqueItems over an enum',
    { type: 'array', items: { enum: ['red', 'green', 'blue'] }, uniqueItems: true, minItems: 1 },
  ],
  ['uniqueItems over any strings, at most one', { type: 'array', items: str, uniqueItems: true }],
  ['not of a type', { not: { type: ['string', 'object', 'array'] } }],
  [
    'not of values of integers and strings',
    obj(
      {
        n: { type: 'integer', minimum: 0, maximum: 9, not: { enum: [3, 4] } },
        s: { type: 'string', maxLength: 4, not: { const: 'no' } },
      },
      { required: ['n', 's'] },
    ),
  ],
  ['not of required', obj({ a: int, b: int }, { not: { required: ['a', 'b'] } })],
  [
    'if/then/else on an enum',
    obj(
      { kind: { enum: ['a', 'b'] }, x: str, y: int },
      {
        required: ['kind'],
        if: { properties: { kind: { const: 'a' } } },
        then: { required: ['x'] },
        else: { required: ['y'] },
      },
    ),
  ],
  ['a false subschema', obj({ a: int, b: false }, { required: ['a'] })],
  ['multipleOf within bounds', { type: 'number', minimum: 0, maximum: 5, multipleOf: 0.5 }],
  ['multipleOf without bounds', { type: 'integer', multipleOf: 7 }],
  ['contains', { type: 'array', items: int, contains: { type: 'integer', minimum: 50 } }],
  ['prefixItems with items: false', { type: 'array', prefixItems: [str, int], items: false, minItems: 1 }],
  [
    '$ref with siblings, and escapes',
    { $defs: { 'a/b': int }, type: 'object', properties: { n: { $ref: '#/$defs/a~1b', maximum: 5 } }, required: ['n'] },
  ],
  [
    'recursion through $ref',
    {
      $defs: {
        node: obj(
          { v: int, next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } },
          { required: ['v', 'next'] },
        ),
      },
      $ref: '#/$defs/node',
    },
  ],
  ['a free object (json_object)', { type: 'object' }],
  ['oneOf of nullable types (Kubernetes)', { oneOf: [{ type: ['string', 'null'] }, { type: ['number', 'null'] }] }],
  [
    'oneOf of objects that require nothing',
    { oneOf: [obj({ a: int }, { additionalProperties: false }), obj({ b: str }, { additionalProperties: false })] },
  ],
  ['pattern with a format', { type: 'string', format: 'uri', pattern: '^https://[a-z]+\\.example\\.com/' }],
  [
    'two patterns from an allOf, and a length',
    { allOf: [{ type: 'string', pattern: '^[a-z0-9]+$' }, { pattern: '^(ab|cd)' }], maxLength: 6 },
  ],
  [
    'unevaluatedProperties: false across allOf',
    { allOf: [obj({ a: int }, { required: ['a'] }), obj({ b: str })], unevaluatedProperties: false },
  ],
  [
    'unevaluatedProperties: false in one part',
    { allOf: [obj({ a: int }, { unevaluatedProperties: false, required: ['a'] }), obj({ b: str })] },
  ],
  ['unevaluatedItems after prefixItems', { type: 'array', prefixItems: [int], unevaluatedItems: str, maxItems: 3 }],
];

describe('the schema compiler, walked at random', () => {
  it.each(ENFORCED)('%s: every walk that ends is valid', async (_name, schema) => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const check = referenceValidator();
    const ended: string[] = [];
    for (let seed = 0; seed < 3; seed++)
      ended.push(
        ...(await randomWalks(grammar, { type: 'json', schema }, { walks: 8, seed, maxSteps: 120 })).completed,
      );
    expect(ended.length).toBeGreaterThan(0);
    const wrong = ended
      .map((text) => [text, check(schema, text) ?? violation({ type: 'json', schema }, { text })] as const)
      .filter(([, why]) => why);
    expect(wrong).toEqual([]);
  });
});

describe('refusals name the keyword and where it is', () => {
  const refused = (schema: unknown) => refusal(schema) ?? '';

  it.each([
    [
      'uniqueItems over strings with minItems 2',
      { type: 'array', items: { type: 'string' }, uniqueItems: true, minItems: 2 },
      /`uniqueItems`.* at #/,
    ],
    ['not of a pattern', { type: 'string', not: { pattern: '^a' } }, /`not` at #/],
    ['a remote $ref', { $ref: 'https://example.com/s.json' }, /only references within the schema/],
    ['$dynamicRef', { $dynamicRef: '#meta' }, /`\$dynamicRef` at #/],
    ['a lookahead', { type: 'string', pattern: '^(?=a)\\w+$' }, /lookaround\) at #/],
    ['a schema no value matches', { allOf: [{ type: 'string' }, { type: 'integer' }] }, /no value matches/],
  ])('%s', (_name, schema, reason) => {
    expect(refused(schema)).toMatch(reason);
  });

  it('bounds chains of references and nesting, without recursion past the stack', () => {
    const chain: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) chain[`d${i}`] = { $ref: `#/$defs/d${i + 1}` };
    chain.d60 = { type: 'string' };
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 200; i++) deep = { type: 'object', properties: { a: deep }, required: ['a'] };
    expect(refused({ $defs: chain, $ref: '#/$defs/d0' })).toMatch(/more than 32 `\$ref`s in a row/);
    expect(refused(deep)).toMatch(/nested more than 128 levels/);
  });

  it('stops at the first reason, which alone is named', () => {
    // Before issue 41 refusals were collected, and the compile went on past each.
    const wide = { anyOf: Array.from({ length: 65 }, (_, i) => ({ const: i })) };
    const schema = {
      ...explosive(30),
      type: 'object',
      properties: { a: wide, b: { not: { pattern: '^x' } }, c: { $ref: '#/$defs/l30' } },
      required: ['c'],
    };
    const budget = compileBudget();
    expect(refusal(schema, budget)).toBe(
      'more than 64 alternatives in one place (`anyOf`/`oneOf` combined) at #/properties/a',
    );
    expect(budget.spent).toBeLessThan(MAX_STEPS / 20);
  });
});

/** The refusal of `schema`, or nothing when it compiles. */
function refusal(schema: unknown, budget = compileBudget()): string | undefined {
  try {
    compileSchema(schema, [',', ':'], budget);
  } catch (error) {
    if (error instanceof SchemaRefused) return error.message;
    throw error;
  }
  return undefined;
}

/**
 * `levels` `allOf`s, each of the one below twice (with a property of its own): 2^levels paths to the bottom, as the
 * ANS schemas' traits make (issue 41: 20 million expansions, then Node's heap ran out).
 */
function explosive(levels: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = { l0: { type: 'object', properties: { x0: { type: 'string' } } } };
  for (let i = 1; i <= levels; i++) {
    const below = { $ref: `#/$defs/l${i - 1}` };
    $defs[`l${i}`] = { allOf: [below, below, { properties: { [`x${i}`]: { type: 'integer' } } }] };
  }
  return { $defs, $ref: `#/$defs/l${levels}` };
}

describe('the compile budget (issue 41)', () => {
  it('takes nested allOf trees apart once: 2^30 paths cost steps in proportion to the schema', () => {
    const budget = compileBudget();
    expect(refusal(explosive(30), budget)).toBeUndefined();
    expect(budget.spent).toBeLessThan(MAX_STEPS / 20);
  });

  it('refuses, naming the budget, a schema that needs more steps than it has; and stops there', () => {
    // 40 places, each an allOf of 40 objects of 100 properties: 160,000 properties merged, their values after.
    const part = (k: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, { maxLength: k + i }])),
    });
    const schema = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 40 }, (_, i) => [`q${i}`, { allOf: Array.from({ length: 40 }, (_, k) => part(i + k)) }]),
      ),
    };
    const budget = compileBudget();
    expect(refusal(schema, budget)).toBe(
      `the schema needs more than ${MAX_STEPS.toLocaleString('en')} steps to compile`,
    );
    expect(budget.spent).toBeGreaterThan(MAX_STEPS);
    expect(budget.spent).toBeLessThan(MAX_STEPS * 1.01);
  });

  it('matches a pattern against enum values in linear time (the ReDoS of issue 41)', () => {
    // `^(a+)+$` held V8's backtracking matcher for 16 s on this 46-character value, and every key with it.
    const value = `${'a'.repeat(46)}!`;
    const budget = compileBudget();
    expect(refusal({ type: 'string', pattern: '^(a+)+$', enum: [value] }, budget)).toBe(
      'a schema that no value matches at #',
    );
    expect(refusal({ type: 'string', pattern: '^(a+)+$', enum: [value, 'aaa'] })).toBeUndefined();
    expect(budget.spent).toBeLessThan(10_000);
  });

  it('matches patternProperties against long declared names in linear time', () => {
    const name = `${'a'.repeat(5_000)}!`;
    const budget = compileBudget();
    const schema = {
      type: 'object',
      properties: { [name]: { type: 'string' } },
      patternProperties: { '^(a+)+$': { type: 'integer' }, '(a*)*b|^a*!$': { maxLength: 3 } },
      required: [name],
    };
    expect(refusal(schema, budget)).toBeUndefined();
    expect(budget.spent).toBeLessThan(200_000);
  });

  it('refuses a pattern it cannot match in linear time, where it must match one', () => {
    expect(refusal({ type: 'string', pattern: '^(a)\\1$', enum: ['aa'] })).toBe(
      '`pattern: "^(a)\\\\1$"` (a backreference) at #',
    );
  });

  it('is charged the same whatever earlier compiles cached', () => {
    const schema = { type: 'string', pattern: '^[a-z]+(-[a-z]+)*$', enum: ['a-b', 'c'] };
    const spent = () => {
      const budget = new StepBudget('%d', MAX_STEPS);
      compileSchema(schema, [',', ':'], budget);
      return budget.spent;
    };
    expect(spent()).toBe(spent());
  });
});

describe('oneOf of types that share null or booleans', () => {
  it('writes neither: a null value of [string, null] | [number, null] matches both alternatives', async () => {
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const schema = {
      type: 'object',
      properties: {
        value: { oneOf: [{ type: ['string', 'null'] }, { type: ['number', 'boolean', 'null'] }, { type: 'boolean' }] },
      },
      required: ['value'],
      additionalProperties: false,
    };
    for (const value of ['null', 'true', 'false']) {
      const prefix = Array.from(grammar.tokenizer.encode(`{"value":${value}`, { add_special_tokens: false }));
      await expect(randomWalks(grammar, { type: 'json', schema }, { walks: 1, prefix })).rejects.toThrow(/refused/);
    }
    const { completed } = await randomWalks(grammar, { type: 'json', schema }, { walks: 8 });
    const validate = referenceValidator();
    for (const text of completed) expect(validate(schema, text)).toBeUndefined();
  });
});
