import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/support/chat-request.ts';
import type { ChatRequest } from '../engine-interface/index.ts';
import { toolFormatOf } from '../tools/tool-call-syntax.ts';
import { generateNativeChoices, type NativeRowPlan, type NativeRowSink } from './native-choices.ts';

/** Token ids are character codes here: each token is one character. */
const decode = (ids: number[]) => String.fromCharCode(...ids);
const ids = (text: string) => [...text].map((c) => c.charCodeAt(0));

/**
 * An engine that samples itself, faked: each row writes `reply(row)` a token at a time, then ends with an end token
 * (`stop`) or at the plan's limit (`length`), as web-llm ends a row.
 */
function engine(reply: (row: number, plan: NativeRowPlan) => string) {
  const rows: { row: number; plan: NativeRowPlan }[] = [];
  const run = async (row: number, plan: NativeRowPlan, sink: NativeRowSink) => {
    rows.push({ row, plan });
    const tokens = ids(reply(row, plan)).slice(0, plan.maxTokens);
    for (const token of tokens) if (sink.push([token])) return { promptTokens: 5, cachedPromptTokens: row };
    const cut = plan.maxTokens !== undefined && tokens.length >= plan.maxTokens;
    sink.end(cut ? 'length' : 'stop', !cut);
    return { promptTokens: 5, cachedPromptTokens: row };
  };
  return { rows, run };
}

const generate = (request: ChatRequest, run: ReturnType<typeof engine>['run'], thinking = false) =>
  generateNativeChoices(
    request,
    { thinking, syntax: toolFormatOf(undefined).syntax, decode, vocabularySize: 128 },
    run,
  );

describe('generateNativeChoices', () => {
  it('runs the rows from the last to the first, each with its own seed, and sums the usage from the pipelines', async () => {
    const fake = engine((row) => `row ${row}.`);
    const result = await generate(chatRequest({ n: 3, seed: 7, maxTokens: 20 }), fake.run);
    expect(fake.rows.map((r) => r.row)).toEqual([2, 1, 0]);
    const seeds = fake.rows.map((r) => r.plan.seed);
    expect(seeds[2]).toBe(7); // the first choice draws from the request's own seed
    expect(new Set(seeds).size).toBe(3);
    const again = engine((row) => `row ${row}.`);
    await generate(chatRequest({ n: 3, seed: 7, maxTokens: 20 }), again.run);
    expect(again.rows.map((r) => r.plan.seed)).toEqual(seeds);
    expect(result.choices.map((c) => c.text)).toEqual(['row 0.', 'row 1.', 'row 2.']);
    // Six characters and an end token per row; the prompt once; as cached, what the first row run (the last) found.
    expect(result.usage).toEqual({ promptTokens: 5, completionTokens: 3 * 7, cachedPromptTokens: 2 });
  });

  it('ends a row at a stop sequence within a token, and counts only the tokens the engine handed over', async () => {
    const fake = engine(() => 'abc STOP def');
    const result = await generate(chatRequest({ stop: ['STOP'] }), fake.run);
    expect(result.choices[0]).toEqual({ text: 'abc ', finishReason: 'stop' });
    expect(result.usage.completionTokens).toBe(ids('abc STOP').length);
  });

  it('reports a thought apart and counts its tokens, with no logits anywhere', async () => {
    const fake = engine(() => '<think>hm</think>ok');
    const result = await generate(chatRequest(), fake.run, true);
    expect(result.choices[0]).toEqual({ text: 'ok', reasoning: 'hm', finishReason: 'stop' });
    expect(result.usage.reasoningTokens).toBe(ids('<think>hm</think>').length);
  });

  it('refuses a logit_bias key past the vocabulary before the engine runs, naming logit_bias', async () => {
    const fake = engine(() => 'a');
    await expect(generate(chatRequest({ logitBias: { 128: 5 } }), fake.run)).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'logit_bias',
    });
    expect(fake.rows).toEqual([]);
  });

  it('refuses an engine that returns a row without ending it', async () => {
    const run = async () => ({ promptTokens: 1, cachedPromptTokens: 0 });
    await expect(generate(chatRequest(), run)).rejects.toMatchObject({ kind: 'internal' });
  });
});
