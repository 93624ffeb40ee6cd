import { beforeAll, describe, expect, it, vi } from 'vitest';
import { createEngine, type ChatEvent, type Engine } from '../../src/index.ts';
import { BoundedCache } from '../../src/grammar/bounded-cache.ts';
import { loadXGrammar } from '../../src/grammar/xgrammar.ts';
import { chatRequest } from '../support/chat-request.ts';
import { grammarFor, referenceValidator } from '../support/grammar-walk.ts';
import { BUNDLED_MODELS, testProfile } from '../support/lantern.ts';

/*
 * The constraint mechanism on the transformers.js engine with real inference (the bundled tiny-chat): how it composes
 * with n, seeds, penalties, token limits and logprobs, and that a schema compiles once.
 */
const model = 'crimson-falcon-4';
const THREE_DIGITS = {
  type: 'array',
  minItems: 3,
  maxItems: 3,
  items: { type: 'integer', minimum: 0, maximum: 9 },
};
let engine: Engine;
const check = referenceValidator();

beforeAll(() => {
  engine = createEngine({ profile: testProfile() });
});

describe('constrained generation on transformers.js', () => {
  it('n = 2 with a seed: every choice validates, and the same seed gives the same answer', async () => {
    const request = chatRequest({ constraint: { type: 'json', schema: THREE_DIGITS }, n: 2, seed: 5, temperature: 1 });
    const [a, b] = [await engine.chat(model, request), await engine.chat(model, request)];
    expect(a.choices).toEqual(b.choices);
    for (const choice of a.choices) {
      expect(choice.finishReason).toBe('stop');
      expect(check(THREE_DIGITS, choice.text)).toBeUndefined();
    }
  });

  it('a model that wants to stop cannot end the JSON before it is complete', async () => {
    // Unconstrained, the fixture answers "Count to 10." and stops; constrained, it must write three digits first.
    const messages = [{ role: 'user' as const, content: 'Send a wave.' }];
    const free = await engine.chat(model, chatRequest({ messages, maxTokens: 40 }));
    expect(free.choices[0]!.finishReason).toBe('stop');
    const result = await engine.chat(
      model,
      chatRequest({ messages, constraint: { type: 'json', schema: THREE_DIGITS } }),
    );
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(JSON.parse(result.choices[0]!.text)).toHaveLength(3);
  });

  it('a token limit that cuts the JSON ends the choice with length', async () => {
    const result = await engine.chat(
      model,
      chatRequest({ constraint: { type: 'json', schema: THREE_DIGITS }, maxTokens: 3 }),
    );
    expect(result.choices[0]!.finishReason).toBe('length');
    expect(() => JSON.parse(result.choices[0]!.text)).toThrow();
  });

  it('penalties still apply: a frequency penalty changes the constrained answer', async () => {
    // "1, 2, 3, …" repeats ", ": a frequency penalty must push the model off it, inside the grammar.
    const messages = [{ role: 'user' as const, content: 'Count to 10.' }];
    const schema = { type: 'object', properties: { t: { type: 'string', maxLength: 30 } }, required: ['t'] };
    const ask = (frequencyPenalty: number) =>
      engine.chat(model, chatRequest({ messages, constraint: { type: 'json', schema }, frequencyPenalty }));
    const [plain, penalised] = [await ask(0), await ask(2)];
    expect(check(schema, penalised.choices[0]!.text)).toBeUndefined();
    expect(penalised.choices[0]!.text).not.toBe(plain.choices[0]!.text);
  });
});

describe('logprobs on transformers.js', () => {
  it('come from the constrained distribution: masked tokens are never listed, a forced token has log probability 0', async () => {
    const result = await engine.chat(
      model,
      chatRequest({ constraint: { type: 'json', schema: THREE_DIGITS }, logprobs: 5 }),
    );
    const [first, second] = result.choices[0]!.logprobs!;
    expect(first).toMatchObject({ token: '[', logprob: 0, topLogprobs: [{ token: '[', logprob: 0 }] });
    // After "[" only a digit may follow: ten candidates at most, all digits.
    expect(second!.topLogprobs.every((t) => /^[0-9]$/.test(t.token))).toBe(true);
  });

  it('follow the temperature: at 0.5 the most likely token is likelier than at 1', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me a story.' }];
    const at = async (temperature: number) =>
      (await engine.chat(model, chatRequest({ messages, temperature, seed: 1, maxTokens: 1, logprobs: 1 }))).choices[0]!
        .logprobs![0]!.topLogprobs[0]!.logprob;
    expect(await at(0.5)).toBeGreaterThan(await at(1));
  });

  it('stream with each delta: the tokens of the deltas are the tokens of the result', async () => {
    const events: ChatEvent[] = [];
    const result = await engine.chat(model, chatRequest({ maxTokens: 12, logprobs: 0 }), {
      onEvent: (e) => events.push(e),
    });
    const streamed = events.flatMap((e) => (e.type === 'delta' ? e.logprobs! : []));
    expect(streamed).toEqual(result.choices[0]!.logprobs);
    expect(streamed.map((t) => t.token).join('')).toBe(result.choices[0]!.text);
    expect(streamed.every((t) => t.topLogprobs.length === 0)).toBe(true);
  });
});

describe('compiling', () => {
  it('compiles a schema once, then reuses it', async () => {
    const xg = await loadXGrammar();
    const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(
      await xg.TokenizerInfo.createTokenizerInfo(['a'], 'raw', false, 1, [0]),
    );
    const compile = vi.spyOn(Object.getPrototypeOf(compiler) as { compileGrammar: () => unknown }, 'compileGrammar');
    const constraint = { type: 'json' as const, schema: { type: 'object', properties: { once: { type: 'boolean' } } } };
    (await grammar.compiler.matchers(constraint, 1)).forEach((m) => m.dispose());
    (await grammar.compiler.matchers({ ...constraint }, 2)).forEach((m) => m.dispose());
    expect(compile).toHaveBeenCalledTimes(1);
    compile.mockRestore();
  });

  it('keeps a bounded number of entries, dropping the least recently used', () => {
    const evicted: number[] = [];
    const cache = new BoundedCache<string, number>(2, (v) => evicted.push(v));
    cache.getOrCreate('a', () => 1);
    cache.getOrCreate('b', () => 2);
    cache.getOrCreate('a', () => 9); // a hit: "a" is now the most recent
    cache.getOrCreate('c', () => 3);
    expect(evicted).toEqual([2]);
    expect(cache.size).toBe(2);
  });
});
