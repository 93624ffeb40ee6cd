import { describe, expect, it } from 'vitest';
import { fakeCreate } from '../../../test/support/fake-web-llm.ts';
import { chatRequest } from '../../../test/support/chat-request.ts';
import { referenceValidator } from '../../../test/support/grammar-walk.ts';
import { SCHEMA_CORPUS } from '../../../test/support/schema-corpus.ts';
import { EngineError, type ChatEvent, type ChatRequest } from '../../engine-interface/index.ts';
import { constraintGrammar } from '../../grammar/output-constraint.ts';
import { WebLLMChatModel, toWebLLMRequest } from './web-llm-chat-model.ts';
import { nativeRowPlan } from '../../generation/native-choices.ts';

const candidate = { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC' } as const;
const request = (overrides: Partial<ChatRequest> = {}): ChatRequest =>
  chatRequest({ messages: [{ role: 'user', content: 'Answer in JSON.' }], temperature: 0.7, ...overrides });

async function loaded() {
  const create = fakeCreate();
  const model = await WebLLMChatModel.load(candidate, { id: 'crimson-falcon-4', create });
  return { model, fake: create.engines[0]! };
}

describe('WebLLMChatModel structured output', () => {
  it('hands web-llm the same grammar text the transformers.js engine runs', async () => {
    const constraint = { type: 'json', schema: { type: 'object', properties: { a: { type: 'integer' } } } } as const;
    const { ebnf: grammar } = (await constraintGrammar(constraint)) as { ebnf: string };
    const { model, fake } = await loaded();
    await model.generate(request({ constraint, logprobs: 0, maxTokens: 40, seed: 1 }));
    expect(fake.requests[0]).toMatchObject({ response_format: { type: 'grammar', grammar } });
    // Lantern reads the log probabilities itself (see below): web-llm is not asked for its own.
    expect(fake.requests[0]).not.toHaveProperty('logprobs');
    expect(toWebLLMRequest(request(), nativeRowPlan(request(), 0))).not.toHaveProperty('response_format');
  });

  it('over the corpus, every finished choice validates or the request fails: never an invalid success', async () => {
    const { model } = await loaded();
    const check = referenceValidator();
    const outcomes = { stop: 0, length: 0, tool_calls: 0, invalidOutput: 0 };
    for (const [i, { name, schema }] of SCHEMA_CORPUS.entries()) {
      const events: ChatEvent[] = [];
      const result = await model
        .generate(request({ constraint: { type: 'json', schema }, n: i % 8 === 0 ? 2 : 1, seed: i, maxTokens: 80 }), {
          onEvent: (e) => events.push(e),
        })
        .catch((error: unknown) => error);
      if (result instanceof EngineError) {
        // web-llm's XGrammar lets bytes through that are not UTF-8 (docs/structured-output.md, known gaps); Lantern
        // cannot mask them inside web-llm, so its validator catches the U+FFFD they decode to.
        expect(result.kind, result.message).toBe('invalid_output');
        const text = events.flatMap((e) => (e.type === 'delta' ? [e.text] : [])).join('');
        expect(text).toContain('\uFFFD');
        outcomes.invalidOutput += 1;
        continue;
      }
      if (!('choices' in (result as object))) throw result;
      for (const choice of (result as Awaited<ReturnType<typeof model.generate>>).choices) {
        outcomes[choice.finishReason] += 1;
        if (choice.finishReason === 'stop')
          expect(check(schema, choice.text), `${name}: ${choice.text}`).toBeUndefined();
      }
    }
    expect(outcomes.stop).toBeGreaterThan(SCHEMA_CORPUS.length / 2);
    expect(outcomes.invalidOutput).toBeLessThan(SCHEMA_CORPUS.length / 4);
  });

  it('refuses up front what would not be enforced, naming response_format', async () => {
    const { model, fake } = await loaded();
    const error = await model
      .generate(
        request({ constraint: { type: 'json', schema: { type: 'array', items: {}, uniqueItems: true, minItems: 2 } } }),
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'invalid_request', param: 'response_format' });
    expect((error as EngineError).message).toContain('uniqueItems');
    expect(fake.requests).toHaveLength(0);
  });

  it('never reports an invalid answer as finished: a stop sequence that cuts the JSON is an invalid_output error', async () => {
    const { model } = await loaded();
    const events: ChatEvent[] = [];
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const error = await model
      .generate(request({ constraint: { type: 'json', schema }, stop: [':'], seed: 3 }), {
        onEvent: (e) => events.push(e),
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ kind: 'invalid_output' });
    expect(events.some((e) => e.type === 'finish')).toBe(false);
  });

  it('reports log probabilities per token, with the alternatives asked for, in its events too', async () => {
    const { model } = await loaded();
    const events: ChatEvent[] = [];
    const result = await model.generate(request({ logprobs: 2, maxTokens: 3 }), { onEvent: (e) => events.push(e) });
    const logprobs = result.choices[0]!.logprobs!;
    expect(logprobs).toHaveLength(3);
    expect(logprobs[0]).toMatchObject({ token: 't0 ', bytes: [...new TextEncoder().encode('t0 ')] });
    expect(logprobs[0]!.topLogprobs).toHaveLength(2);
    expect(events.flatMap((e) => (e.type === 'delta' ? e.logprobs! : []))).toEqual(logprobs);
  });
});

/**
 * Log probabilities as Lantern reports them on every engine (src/generation/logprobs.ts): the distribution the
 * token was drawn from, after penalties, logit_bias and the constraint (a masked token is never listed), at the
 * sampling temperature (at temperature 0, at 1), with each token's exact bytes; one entry per generated token.
 * web-llm's own are at the sampling temperature only (at 0: 0 for the token, -Infinity for the rest), list masked
 * tokens, spell a token by its text alone (U+FFFD for part of a character), and skip tokens whose chunk it held back.
 */
describe('WebLLMChatModel log probabilities', () => {
  /** log softmax of `logits` at `token`, the distribution Lantern reports. */
  const logprob = (logits: Float32Array, token: number) => {
    const max = Math.max(...logits);
    const sum = logits.reduce((acc, l) => acc + Math.exp(l - max), 0);
    return logits[token]! - max - Math.log(sum);
  };

  it('at temperature 0, reports the distribution at temperature 1, after the penalties: finite, never -Infinity', async () => {
    const { model, fake } = await loaded();
    const scores = (tokenizer: typeof fake.tokenizer) => {
      const logits = new Float32Array(tokenizer.getVocabSize()).fill(-1);
      logits[tokenizer.id('a')] = 2;
      logits[tokenizer.id('b')] = 1.8;
      logits[tokenizer.id('c')] = 0.5;
      return logits;
    };
    fake.scores = (written, tokenizer) => {
      const logits = scores(tokenizer);
      if (written.length === 2) logits[tokenizer.id('<|im_end|>')] = 10;
      return logits;
    };
    const result = await model.generate(request({ temperature: 0, presencePenalty: 0.5, logprobs: 3 }));
    const { tokenizer } = fake;
    const [a, b, c] = ['a', 'b', 'c'].map((t) => tokenizer.id(t)) as [number, number, number];
    // The second step as web-llm sampled it: `a` appeared, so the presence penalty weighs on it (2 - 0.5 < 1.8).
    const second = scores(tokenizer);
    second[a] = second[a]! - 0.5;
    expect(result.choices[0]!.text).toBe('ab');
    const logprobs = result.choices[0]!.logprobs!;
    expect(logprobs.map((l) => l.token)).toEqual(['a', 'b']);
    expect(logprobs[0]!.logprob).toBeCloseTo(logprob(scores(tokenizer), a), 5);
    expect(logprobs[0]!.topLogprobs.map((t) => t.token)).toEqual(['a', 'b', 'c']);
    expect(logprobs[0]!.topLogprobs[2]!.logprob).toBeCloseTo(logprob(scores(tokenizer), c), 5);
    expect(logprobs[1]!.logprob).toBeCloseTo(logprob(second, b), 5);
    expect(logprobs[1]!.topLogprobs.map((t) => t.token)).toEqual(['b', 'a', 'c']);
    for (const entry of logprobs.flatMap((l) => [l, ...l.topLogprobs]))
      expect(Number.isFinite(entry.logprob)).toBe(true);
  });

  it('never lists a token the constraint masked', async () => {
    const { model } = await loaded();
    const constraint = { type: 'json', schema: { type: 'object', properties: { a: { type: 'integer' } } } } as const;
    const result = await model.generate(request({ constraint, logprobs: 5, maxTokens: 30, seed: 2 }));
    const logprobs = result.choices[0]!.logprobs!;
    // A JSON object opens with `{`: the tokens that start with it are the only ones allowed first.
    expect(logprobs[0]!.topLogprobs.length).toBeGreaterThan(0);
    for (const alt of logprobs[0]!.topLogprobs) expect(alt.token.startsWith('{')).toBe(true);
    for (const entry of logprobs.flatMap((l) => [l, ...l.topLogprobs]))
      expect(Number.isFinite(entry.logprob)).toBe(true);
  });

  it('reports every token with its exact bytes, a part of a character included', async () => {
    const { model, fake } = await loaded();
    // `é` is two bytes, two tokens of the fake's vocabulary: web-llm holds the first back until the second completes it.
    fake.reply = () => ['caf', 'é', '!'];
    const result = await model.generate(request({ logprobs: 2 }));
    expect(result.choices[0]!.text).toBe('café!');
    const logprobs = result.choices[0]!.logprobs!;
    expect(logprobs.flatMap((l) => l.bytes)).toEqual([...new TextEncoder().encode('café!')]);
    expect(logprobs.map((l) => l.bytes)).toEqual([[99], [97], [102], [0xc3], [0xa9], [33]]);
  });

  it('reports up to 20 top_logprobs, as the OpenAI API does (web-llm itself stops at 5)', async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(request({ logprobs: 20, maxTokens: 2 }));
    expect(result.choices[0]!.logprobs!.every((l) => l.topLogprobs.length === 20)).toBe(true);
    expect(fake.requests[0]).not.toHaveProperty('top_logprobs');
  });
});
