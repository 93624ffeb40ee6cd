import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { grammarFor, randomWalks, referenceValidator } from '../../test/support/grammar-walk.ts';
import { chatRequest } from '../../test/support/chat-request.ts';
import { BUNDLED_MODELS } from '../../test/support/lantern.ts';
import { EngineError, type JsonConstraint, type OutputConstraint } from '../engine-interface/index.ts';
import { bundledProfile, createEngine } from '../index.ts';
import type { ToolCallSyntax } from '../tools/tool-call-syntax.ts';
import { GrammarCompiler } from './grammar-mask.ts';
import type * as OutputConstraintModule from './output-constraint.ts';
import { constraintGrammar } from './output-constraint.ts';
import { loadXGrammar, xgrammarFailure, xgrammarGeneration, type XGrammarModule } from './xgrammar.ts';

/*
 * XGrammar's WebAssembly aborts on every input it rejects, and overflows its stack on a deep enough schema or grammar;
 * each abort leaks part of its memory, and after that the instance cannot be trusted (before, a few dozen aborts left
 * every later call failing with "memory access out of bounds", for every key, until the process restarted). Now the
 * instance that failed is dropped and the next use starts a fresh one (xgrammar.ts), and what Lantern built on it is
 * built again (grammar-mask.ts). This file has its own realm, so its instances are its own.
 */

// A constraint whose schema carries `x-test-ebnf` gets that grammar as its own: the way to hand XGrammar's compiler a
// grammar it fails on, whatever Lantern's schema compiler refuses up front. One with `x-test-wait` waits for `gate`.
const gate = vi.hoisted(() => ({ open: Promise.resolve() }));
vi.mock('./output-constraint.ts', async (importOriginal) => {
  const real = await importOriginal<typeof OutputConstraintModule>();
  return {
    ...real,
    constraintGrammar: async (constraint: OutputConstraint, syntax?: ToolCallSyntax) => {
      const schema = constraint.type === 'json' ? constraint.schema : null;
      if (schema?.['x-test-wait']) await gate.open;
      const ebnf = schema?.['x-test-ebnf'];
      return typeof ebnf === 'string' ? { ebnf } : real.constraintGrammar(constraint, syntax);
    },
  };
});

/** A schema nested `depth` objects deep. */
function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'boolean' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
  return schema;
}

/** A schema whose root is a chain of `length` `$ref`s, each an object around the next. */
function refChain(length: number): Record<string, unknown> {
  const $defs: Record<string, unknown> = {};
  for (let i = 0; i < length; i++) {
    $defs[`d${i}`] =
      i < length - 1
        ? { type: 'object', properties: { x: { $ref: `#/$defs/d${i + 1}` } }, required: ['x'] }
        : { type: 'boolean' };
  }
  return { $defs, $ref: '#/$defs/d0' };
}

/** The inputs that took XGrammar down (issue 23), as XGrammar's own JSON-schema converter takes them. */
const BREAKERS = {
  'a schema nested 80 levels deep': JSON.stringify(nested(80)),
  'a chain of 60 $refs': JSON.stringify(refChain(60)),
  // XGrammar 0.1.27 aborts on an integer with a fractional bound (Lantern never hands it one).
  'an integer with a fractional bound': '{"type":"integer","minimum":0.5}',
};

/** A grammar 300 parentheses deep: XGrammar's compiler overflows its stack on it ("table index is out of bounds"). */
const DEEP_EBNF = `root ::= ${'"[" ('.repeat(300)}"t"${')"]"'.repeat(300)}`;

const NORMAL: JsonConstraint = {
  type: 'json',
  schema: {
    type: 'object',
    properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 0, maximum: 9 } },
    required: ['ok', 'n'],
    additionalProperties: false,
  },
};

/** Fails XGrammar's current instance with `input`; returns the error it threw. */
async function breakXGrammar(input = BREAKERS['an integer with a fractional bound']): Promise<unknown> {
  const xg = await loadXGrammar();
  return xg.Grammar.fromJSONSchema(input).then(
    () => expect.fail('XGrammar accepted an input it should abort on'),
    (error: unknown) => error,
  );
}

const check = referenceValidator();
const silenced = { error: console.error, warn: console.warn };
beforeAll(() => {
  // XGrammar prints each abort, and Lantern says it drops the instance: expected here, by the dozen.
  console.error = console.warn = () => {};
});
afterAll(() => Object.assign(console, silenced));

describe('XGrammar after it fails', () => {
  it.each(Object.entries(BREAKERS))('%s: that instance is refused, the next load is a fresh one', async (_, input) => {
    const xg = await loadXGrammar();
    const generation = xgrammarGeneration();
    const error = await breakXGrammar(input);
    expect(error).toBeInstanceOf(WebAssembly.RuntimeError);
    expect(xgrammarFailure(error)).toMatchObject({ generation, blame: 'input' });

    // The failed instance is never called again: whatever the input, the call is refused, blaming the instance.
    const after = await xg.Grammar.fromJSONSchema('{"type":"null"}').catch((e: unknown) => e);
    expect(after).toBeInstanceOf(WebAssembly.RuntimeError);
    expect(xgrammarFailure(after)).toMatchObject({ generation, blame: 'module' });

    const fresh = await loadXGrammar();
    expect(fresh).not.toBe(xg);
    expect(xgrammarGeneration()).toBe(generation + 1);
    const grammar = await fresh.Grammar.fromJSONSchema('{"type":"boolean"}');
    expect(grammar.toString()).toContain('"true"');
    grammar.dispose();
  });

  it('keeps what XGrammar said before it aborted', async () => {
    const error = await breakXGrammar();
    expect(xgrammarFailure(error)?.detail).toMatch(/Integer constraint must be a whole number/);
  });

  it('never wears out: 40 aborts in a row, each followed by a working instance (before: broken after ~30)', async () => {
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      await breakXGrammar();
      const started = performance.now();
      const xg = await loadXGrammar();
      times.push(performance.now() - started);
      (await xg.Grammar.fromJSONSchema('{"type":"null"}')).dispose();
    }
    times.sort((a, b) => a - b);
    silenced.warn(
      `[xgrammar] a fresh instance: ${times[20]!.toFixed(1)} ms median of 40, ${times.at(-1)!.toFixed(1)} ms at most`,
    );
  });

  it('an object of a failed instance is refused by the fresh one', async () => {
    const xg = await loadXGrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(['a', '</s>'], 'raw', false, 2, [1]);
    await breakXGrammar();
    const fresh: XGrammarModule = await loadXGrammar();
    const error = await fresh.GrammarCompiler.createGrammarCompiler(info).catch((e: unknown) => e);
    expect(xgrammarFailure(error)).toMatchObject({ blame: 'module' });
    // The fresh instance is not blamed for it.
    (await fresh.Grammar.fromJSONSchema('{"type":"null"}')).dispose();
  });
});

describe('the grammar compiler after XGrammar fails', () => {
  const folder = `${BUNDLED_MODELS}/tiny-chat`;

  it('a compiler made before compiles on the fresh instance and its masks work; masks in flight stop', async () => {
    const grammar = await grammarFor(folder, [2, 0]);
    const [inFlight] = await grammar.compiler.matchers(NORMAL, 1);
    inFlight!.apply(new Float32Array(grammar.vocabulary.strings.length));
    await breakXGrammar();

    // A choice generating on the failed instance stops with `unavailable` (sending the request again heals it).
    expect(() => inFlight!.apply(new Float32Array(grammar.vocabulary.strings.length))).toThrow(
      expect.objectContaining({ kind: 'unavailable', retry: true }),
    );
    expect(() => inFlight!.dispose()).not.toThrow();

    // The next request: the same compiler, made again on the fresh instance (its vocabulary, compiled grammars).
    await expect(constraintGrammar(NORMAL)).resolves.toHaveProperty('ebnf');
    const started = performance.now();
    const walks = await randomWalks(grammar, NORMAL, { walks: 4, maxSteps: 60 });
    silenced.warn(
      `[xgrammar] the first grammar on the fresh instance (tiny-chat): ${(performance.now() - started).toFixed(0)} ms`,
    );
    expect(walks.completed.length).toBeGreaterThan(0);
    for (const text of walks.completed) expect(check(NORMAL.schema, text)).toBeUndefined();
  });

  it('a compiler made after it, for a normal schema, walks valid JSON', async () => {
    await breakXGrammar(BREAKERS['a schema nested 80 levels deep']);
    await expect(constraintGrammar(NORMAL)).resolves.toHaveProperty('ebnf');
    const grammar = await grammarFor(folder, [2, 0]);
    const compiler = await GrammarCompiler.create(grammar.vocabulary, new Set([2, 0]));
    const walks = await randomWalks({ ...grammar, compiler }, NORMAL, { walks: 4, maxSteps: 60 });
    expect(walks.completed.length).toBeGreaterThan(0);
    for (const text of walks.completed) expect(check(NORMAL.schema, text)).toBeUndefined();
  });

  it('a grammar XGrammar fails on is a 400 naming its parameter, remembered; the next request compiles', async () => {
    const grammar = await grammarFor(folder, [2, 0]);
    const deep: JsonConstraint = { type: 'json', schema: { 'x-test-ebnf': DEEP_EBNF }, param: 'text.format' };
    const refusal = { kind: 'invalid_request', param: 'text.format' };
    await expect(grammar.compiler.matchers(deep, 1)).rejects.toMatchObject(refusal);
    const generation = xgrammarGeneration();
    // Refused again at once, without failing another instance.
    await expect(grammar.compiler.matchers(deep, 1)).rejects.toMatchObject(refusal);
    expect(xgrammarGeneration()).toBe(generation);
    // Another request (any key: the instance is the process's) compiles on a fresh instance.
    const walks = await randomWalks(grammar, NORMAL, { walks: 2, maxSteps: 60 });
    expect(xgrammarGeneration()).toBe(generation + 1);
    expect(walks.completed.length).toBeGreaterThan(0);
  });

  it('a request compiling on an instance another request broke is compiled again on the fresh one', async () => {
    const grammar = await grammarFor(folder, [2, 0]);
    let open = () => {};
    gate.open = new Promise((resolve) => (open = resolve));
    // This one has its compiler (of the current instance) and waits for its grammar; the other breaks the instance.
    const waiting = grammar.compiler.matchers(
      { type: 'json', schema: { 'x-test-wait': true, 'x-test-ebnf': 'root ::= "[]"' } },
      2,
    );
    await expect(
      grammar.compiler.matchers({ type: 'json', schema: { 'x-test-ebnf': DEEP_EBNF } }, 1),
    ).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'response_format',
    });
    const generation = xgrammarGeneration();
    open();
    const masks = await waiting;
    expect(xgrammarGeneration()).toBe(generation + 1);
    expect(masks).toHaveLength(2);
    masks.forEach((m) => m.dispose());
  });
});

describe('the engine after XGrammar fails', () => {
  const model = 'crimson-falcon-4';
  const engine = createEngine({ profile: bundledProfile(BUNDLED_MODELS) });
  const ask = (constraint: JsonConstraint) => engine.chat(model, chatRequest({ constraint, maxTokens: 48 }));

  it('the next structured request succeeds', async () => {
    expect((await ask(NORMAL)).choices[0]!.finishReason).toBe('stop');
    await breakXGrammar();
    const result = await ask(NORMAL);
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(check(NORMAL.schema, result.choices[0]!.text)).toBeUndefined();
  });

  it.each([
    ['a schema nested 80 levels deep', nested(80)],
    ['a chain of 60 $refs', refChain(60)],
  ])('%s is answered (or refused as a 400), never a 500; the next structured request succeeds', async (_, schema) => {
    const outcome = await ask({ type: 'json', schema }).catch((e: unknown) => e);
    if (outcome instanceof EngineError) {
      expect(outcome).toMatchObject({ kind: 'invalid_request', param: 'response_format' });
    } else {
      expect(outcome).toHaveProperty('choices');
    }
    const result = await ask(NORMAL);
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(check(NORMAL.schema, result.choices[0]!.text)).toBeUndefined();
  });
});
