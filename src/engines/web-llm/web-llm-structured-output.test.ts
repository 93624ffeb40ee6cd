import { describe, expect, it } from 'vitest';
import { fakeCreate } from '../../../test/support/fake-web-llm.ts';
import { referenceValidator } from '../../../test/support/grammar-walk.ts';
import { SCHEMA_CORPUS } from '../../../test/support/schema-corpus.ts';
import { EngineError, type ChatEvent, type ChatRequest } from '../../engine/index.ts';
import { constraintGrammar } from '../decoding/output-constraint.ts';
import { WebLLMChatModel, toWebLLMRequest } from './web-llm-chat-model.ts';

const candidate = { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC' } as const;
const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
  messages: [{ role: 'user', content: 'Answer in JSON.' }],
  temperature: 0.7,
  topP: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  stop: [],
  n: 1,
  ...overrides,
});

async function loaded() {
  const create = fakeCreate();
  const model = await WebLLMChatModel.load(candidate, { id: 'crimson-falcon-4', create });
  return { model, fake: create.engines[0]! };
}

describe('WebLLMChatModel structured output', () => {
  it('hands web-llm the same grammar text the transformers.js engine runs, and asks for its own logprobs', async () => {
    const constraint = { type: 'json', schema: { type: 'object', properties: { a: { type: 'integer' } } } } as const;
    const { ebnf: grammar } = (await constraintGrammar(constraint)) as { ebnf: string };
    const { model, fake } = await loaded();
    await model.generate(request({ constraint, logprobs: 0, maxTokens: 40, seed: 1 }));
    expect(fake.requests[0]).toMatchObject({
      response_format: { type: 'grammar', grammar },
      // web-llm records no log probability at all with top_logprobs 0: Lantern asks for one and keeps none.
      logprobs: true,
      top_logprobs: 1,
    });
    expect(toWebLLMRequest(request(), 0)).not.toHaveProperty('response_format');
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

  it('reports web-llm log probabilities per token, with the alternatives asked for', async () => {
    const { model } = await loaded();
    const events: ChatEvent[] = [];
    const result = await model.generate(request({ logprobs: 2, maxTokens: 3 }), { onEvent: (e) => events.push(e) });
    const logprobs = result.choices[0]!.logprobs!;
    expect(logprobs).toHaveLength(3);
    expect(logprobs[0]).toMatchObject({ token: 't0 ', bytes: [...new TextEncoder().encode('t0 ')] });
    expect(logprobs[0]!.topLogprobs).toHaveLength(2);
    expect(events.flatMap((e) => (e.type === 'delta' ? e.logprobs! : []))).toEqual(logprobs);
  });

  it('refuses more than 5 top_logprobs, which web-llm cannot report, naming top_logprobs', async () => {
    const { model } = await loaded();
    await expect(model.generate(request({ logprobs: 6 }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'top_logprobs',
    });
  });
});
