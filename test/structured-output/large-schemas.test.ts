import { beforeAll, describe, expect, it } from 'vitest';
import { EngineError } from '../../src/index.ts';
import { checkConstraint } from '../../src/grammar/constraint-check.ts';
import { compileBudget, compileSchema, SchemaRefused } from '../../src/grammar/schema-grammar.ts';
import { MAX_STEPS } from '../../src/grammar/step-budget.ts';
import { sdkRefusal } from '../support/api-error.ts';
import { sdkClient, type SdkClient } from '../support/lantern.ts';
import { budgetRefusal, REAL_WORLD_SCHEMAS } from '../support/real-world-schemas.ts';

/*
 * Issue 41: the compile of a schema is bounded by a budget of steps, whatever the schema. The largest public schemas of
 * test/fixtures/schemas/large (the Washington Post's ANS content schemas bundled with the ~90 files they reference,
 * whose compile exhausted Node's heap after 25–95 s; Kubernetes; OpenAPI 2.0 and 3.1; SchemaStore) each compile or are
 * refused for a reason no grammar can enforce, within the budget: through the compiler, with the steps it took; through
 * `checkConstraint`, as the engine checks a request; and through the openai SDK on the bundled tiny-chat. Then the
 * issue's hostile schemas, through the SDK: each answered with a 200 or a 400 naming `response_format`. Times are
 * logged, never asserted: the bound is on work.
 */

const LARGE = REAL_WORLD_SCHEMAS.filter((s) => s.kind === 'large');
const BUDGET = `the schema needs more than ${MAX_STEPS.toLocaleString('en')} steps to compile`;
/** Why a large schema may be refused: the budget, or what no grammar enforces (docs/structured-output.md). */
const ALLOWED = [BUDGET, 'only references within the schema', '`$dynamicRef`', 'two different `format`s'];
const model = 'crimson-falcon-4';
const messages = [{ role: 'user' as const, content: 'Reply with JSON.' }];

let client: SdkClient['client'];
beforeAll(async () => {
  ({ client } = await sdkClient({ client: { maxRetries: 0 } }));
});

/** A request of the openai SDK with `schema` as its response format. */
const ask = (schema: Record<string, unknown>, maxTokens: number) =>
  client.chat.completions.create({
    model,
    messages,
    max_tokens: maxTokens,
    temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
  });

describe('the large public schemas, within the compile budget', () => {
  it('each compiles, or is refused for an allowed reason, in fewer steps than the budget', () => {
    expect(LARGE.length).toBeGreaterThanOrEqual(14);
    const rows: string[] = [];
    let compiled = 0;
    for (const { name, schema } of LARGE) {
      expect(budgetRefusal(schema), name).toBeUndefined();
      const budget = compileBudget();
      const started = performance.now();
      let refusal: string | undefined;
      try {
        compileSchema(schema, [',', ':'], budget);
        compiled += 1;
      } catch (error) {
        if (!(error instanceof SchemaRefused)) throw error;
        refusal = error.message;
      }
      const ms = performance.now() - started;
      // Within the budget; a compile the budget stopped went past it by its last step only.
      expect(budget.spent, name).toBeLessThanOrEqual(refusal === BUDGET ? MAX_STEPS * 1.01 : MAX_STEPS);
      if (refusal !== undefined)
        expect(
          ALLOWED.some((why) => refusal.includes(why)),
          `${name}: ${refusal}`,
        ).toBe(true);
      // The engine's own check (a 400 naming the parameter) agrees.
      const check = () => checkConstraint({ type: 'json', schema, param: 'response_format' });
      if (refusal === undefined) expect(check).not.toThrow();
      else expect(check).toThrow(EngineError);
      const refs = (JSON.stringify(schema).match(/"\$ref"/g) ?? []).length;
      rows.push(
        `  ${name.padEnd(46)} ${(JSON.stringify(schema).length / 1024).toFixed(0).padStart(3)} KB ${String(refs).padStart(3)} $refs ` +
          `${String(budget.spent).padStart(8)} steps ${ms.toFixed(0).padStart(4)} ms  ${refusal ?? 'compiled'}`,
      );
    }
    console.log(`[large schemas, budget ${MAX_STEPS} steps]\n${rows.join('\n')}`);
    expect(compiled).toBeGreaterThan(LARGE.length / 2);
  });

  it('each answers through the openai SDK: a 200, or a 400 naming response_format', { timeout: 120_000 }, async () => {
    for (const { name, schema } of LARGE) {
      const started = performance.now();
      const outcome = await ask(schema, 2).then(
        (completion) => `200 ${completion.choices[0]!.finish_reason}`,
        async (error: unknown) => {
          const { status, param, message } = await sdkRefusal(Promise.reject(error));
          expect({ status, param }, name).toEqual({ status: 400, param: 'response_format' });
          expect(
            ALLOWED.some((why) => message.includes(why)),
            `${name}: ${message}`,
          ).toBe(true);
          return '400';
        },
      );
      console.log(`[large schemas via the SDK] ${name}: ${outcome} in ${(performance.now() - started).toFixed(0)} ms`);
    }
  });
});

/** `n` numbers from 0. */
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
/** An object of `n` properties `prefix0…`, each `value`. */
const object = (n: number, prefix: string, value: (i: number) => unknown) => ({
  type: 'object',
  properties: Object.fromEntries(range(n).map((i) => [`${prefix}${i}`, value(i)])),
});

/**
 * Schemas built to spend the budget as fast as each kind of work can (measured for MAX_STEPS' comment): each stops at
 * the budget or at another bound first.
 */
const SPENDERS: Record<string, () => Record<string, unknown>> = {
  'allOf parts that declare the same properties': () =>
    object(40, 'q', (i) => ({ allOf: range(40).map((k) => object(100, 'p', (j) => ({ maxLength: i + k + j }))) })),
  'anyOf crossed with anyOf, mostly conflicting': () =>
    object(300, 'q', (i) => ({
      allOf: [0, 1].map((side) => ({ anyOf: range(64).map((k) => ({ type: 'integer', const: k + i, title: side })) })),
    })),
  'a pattern against long enum values': () =>
    object(100, 'e', (i) => ({
      type: 'string',
      pattern: `^(a+)+(b|c|d|e|f)*[0-9]{${i % 7}}$`,
      enum: range(64).map((k) => `${'a'.repeat(200 + k)}!`),
    })),
  'counted repeats': () =>
    object(100, 'r', (i) => ({ type: 'string', pattern: `^(ab|cd|e[f-h]){${1000 + i}}$`, enum: ['x'] })),
  'patternProperties against many names': () => ({
    ...object(1000, 'name_with_some_length_', () => ({ type: 'string' })),
    patternProperties: Object.fromEntries(range(60).map((k) => [`^(n|a|m|e|_|w|i|t|h)+${k}x$`, {}])),
  }),
  'objects of counted properties': () =>
    object(300, 'c', (i) => ({ ...object(60, `k${i}_`, () => ({})), minProperties: 20, maxProperties: 30 })),
  'long enums': () =>
    object(60, 't', (i) => ({ enum: range(2000).map((k) => `value-${i}-${k}-${'x'.repeat(k % 50)}`) })),
  'oneOf made exclusive': () =>
    object(50, 'o', () => ({
      oneOf: range(64).map((k) => ({ type: 'object', required: range(40).map((r) => `r${k}_${r}`) })),
    })),
  'not of many numbers': () =>
    object(300, 'x', (i) => ({ type: 'integer', not: { enum: range(60).map((k) => k * 3 + i) } })),
  'a tree of distinct subschemas': () => {
    const tree = (depth: number, tag: string): Record<string, unknown> =>
      depth === 0 ? { type: 'string', description: tag } : object(6, 'd', (k) => tree(depth - 1, `${tag}${k}`));
    return tree(6, 't');
  },
  'references with siblings': () => ({
    $defs: { node: object(2, 'n', (i) => (i === 0 ? { type: 'integer' } : { $ref: '#/$defs/node' })) },
    ...object(3000, 'n', (i) => ({ $ref: '#/$defs/node', description: `d${i}`, minProperties: i % 3 })),
  }),
};

describe('schemas built to spend the budget fastest', () => {
  it('each stops at the budget, or at another bound first', () => {
    const rows: string[] = [];
    for (const [name, make] of Object.entries(SPENDERS)) {
      const schema = make();
      const budget = compileBudget();
      const heap = process.memoryUsage().heapUsed;
      const started = performance.now();
      let outcome = 'compiled';
      try {
        compileSchema(schema, [',', ':'], budget);
      } catch (error) {
        if (!(error instanceof SchemaRefused)) throw error;
        outcome = error.message.slice(0, 70);
      }
      const ms = performance.now() - started;
      expect(budget.spent, name).toBeLessThanOrEqual(MAX_STEPS * 1.01);
      rows.push(
        `  ${name.padEnd(46)} ${String(budget.spent).padStart(8)} steps ${ms.toFixed(0).padStart(4)} ms ` +
          `heap ${((process.memoryUsage().heapUsed - heap) / 2 ** 20).toFixed(0).padStart(3)} MiB  ${outcome}`,
      );
    }
    console.log(`[schemas built to spend ${MAX_STEPS} steps]\n${rows.join('\n')}`);
  });
});

describe('the hostile schemas of issue 41, through the openai SDK', () => {
  /** `levels` nested `allOf`s, each of the one below twice: 2^levels paths, as ANS's traits make. */
  const nested = (levels: number) => {
    const $defs: Record<string, unknown> = { l0: { type: 'object', properties: { x0: { type: 'boolean' } } } };
    for (let i = 1; i <= levels; i++) {
      const below = { $ref: `#/$defs/l${i - 1}` };
      $defs[`l${i}`] = { allOf: [below, below, { properties: { [`x${i}`]: { type: 'boolean' } } }] };
    }
    return { $defs, $ref: `#/$defs/l${levels}` };
  };

  it('a pattern that backtracks on an enum value: refused at once (no value matches)', async () => {
    const schema = { type: 'string', pattern: '^(a+)+$', enum: [`${'a'.repeat(46)}!`] };
    expect(await sdkRefusal(ask(schema, 4))).toMatchObject({
      status: 400,
      param: 'response_format',
      message: expect.stringMatching(/no value matches/),
    });
  });

  it('a matching but exponential pattern: generated, and validated in linear time', async () => {
    const value = 'a'.repeat(40);
    const completion = await ask({ type: 'string', pattern: '(a*)*b|^a*$', const: value }, 128);
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(JSON.parse(completion.choices[0]!.message.content!)).toBe(value);
  });

  it('patternProperties against a long declared property name: compiled', async () => {
    const name = `${'a'.repeat(4_000)}!`;
    const schema = {
      type: 'object',
      properties: { [name]: { type: 'boolean' } },
      patternProperties: { '^(a+)+$': { type: 'integer' } },
      additionalProperties: false,
    };
    const completion = await ask(schema, 2);
    expect(completion.choices[0]!.finish_reason).toBe('length');
  });

  it('2^30 paths through nested allOfs: compiled, each taken apart once', async () => {
    const completion = await ask(nested(30), 2);
    expect(completion.choices[0]!.finish_reason).toBe('length');
  });

  it('a schema under every request limit that needs more steps than the budget: a 400 naming the budget', async () => {
    // 1,000 long property names, each matched against 60 patterns: about 4 million steps.
    const schema = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 1_000 }, (_, i) => [`name_with_some_length_${i}`, { type: 'string' }]),
      ),
      patternProperties: Object.fromEntries(
        Array.from({ length: 60 }, (_, k) => [`^(n|a|m|e|_|w|i|t|h)+${k}x$`, { type: 'string' }]),
      ),
    };
    expect(budgetRefusal(schema)).toBeUndefined();
    expect(await sdkRefusal(ask(schema, 2))).toMatchObject({
      status: 400,
      param: 'response_format',
      message: expect.stringContaining(BUDGET),
    });
  });
});
