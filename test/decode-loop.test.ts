import { describe, expect, it } from 'vitest';
import type { ChatEvent, ChatRequest } from '../src/engine-interface/index.ts';
import { TransformersChatModel, type ChatModelOptions } from '../src/engines/transformers/chat-model.ts';
import { chatRequest } from './support/chat-request.ts';
import { ignoringAttentionMask } from './support/mask-ignoring-model.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';

/**
 * Lantern's decode loop on the bundled tiny-chat, loaded directly: concurrent requests share forward passes and get
 * exactly the tokens they get alone; a request joins a running batch and is not held behind a long one; an abort
 * takes one request's rows out and leaves the others; a model whose attention ignores its mask is found out and
 * decoded one request at a time; jump-forward appends forced tokens without passes of their own and keeps the output
 * valid. The greedy tokens against transformers.js' own generate() are tested in direct-parity.test.ts.
 */
const FOLDER = `${BUNDLED_MODELS}/tiny-chat`;

const load = (options: Partial<ChatModelOptions> = {}) =>
  TransformersChatModel.load(FOLDER, { id: 'tiny', device: 'cpu', dtype: 'fp32', promptLookup: false, ...options });

const ask = (content: string, overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ messages: [{ role: 'user', content }], maxTokens: 40, ...overrides });

const PROMPTS = ['Tell me a story about a dog and a ball.', 'What is 7 + 8?', 'Tell me a story.', 'Hello!'];

const texts = (results: { choices: { text: string }[] }[]) => results.map((r) => r.choices.map((c) => c.text));

describe('the decode loop', () => {
  it('batches concurrent requests into shared passes, each getting the tokens it gets alone', async () => {
    const model = await load();
    const alone = [];
    for (const content of PROMPTS) alone.push(await model.generate(ask(content)));
    const before = { ...model.stats };
    const together = await Promise.all(PROMPTS.map((content) => model.generate(ask(content))));
    expect(texts(together)).toEqual(texts(alone));
    const passes = model.stats.forwardPasses - before.forwardPasses;
    const rowSteps = model.stats.rowSteps - before.rowSteps;
    // Four requests of up to 40 tokens: alone they would take a pass per row-step.
    expect(rowSteps).toBeGreaterThan(PROMPTS.length * 5);
    expect(passes).toBeLessThan(rowSteps / 2);
  });

  it('decodes n choices as rows of one batch from one prefill', async () => {
    const model = await load();
    const one = await model.generate(ask(PROMPTS[0]!));
    const before = { ...model.stats };
    const four = await model.generate(ask(PROMPTS[0]!, { n: 4 }));
    expect(four.choices.map((c) => c.text)).toEqual(Array(4).fill(one.choices[0]!.text));
    // One prefill, then one pass per step for all four rows.
    expect(model.stats.forwardPasses - before.forwardPasses).toBe(one.usage.completionTokens);
  });

  it('lets a short request join a long one and finish first, with both outputs as alone', async () => {
    const model = await load();
    const long = ask(PROMPTS[0]!, { maxTokens: 120, stop: [], frequencyPenalty: 0 });
    const short = ask(PROMPTS[1]!, { maxTokens: 4 });
    const [longAlone, shortAlone] = [await model.generate(long), await model.generate(short)];
    const order: string[] = [];
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const first = model
      .generate(long, { onEvent: (e: ChatEvent) => e.type === 'delta' && started() })
      .then((r) => (order.push('long'), r));
    await running;
    const second = model.generate(short).then((r) => (order.push('short'), r));
    const [a, b] = await Promise.all([first, second]);
    expect(order).toEqual(['short', 'long']);
    expect(a.choices[0]!.text).toBe(longAlone.choices[0]!.text);
    expect(b.choices[0]!.text).toBe(shortAlone.choices[0]!.text);
  });

  it('takes an aborted request out of the batch and finishes the others', async () => {
    const model = await load();
    const alone = await model.generate(ask(PROMPTS[2]!));
    const controller = new AbortController();
    let deltas = 0;
    const aborted = model.generate(ask(PROMPTS[0]!, { maxTokens: 200 }), {
      signal: controller.signal,
      onEvent: (e) => e.type === 'delta' && ++deltas === 3 && controller.abort(),
    });
    const other = model.generate(ask(PROMPTS[2]!));
    await expect(aborted).rejects.toMatchObject({ kind: 'aborted' });
    expect((await other).choices[0]!.text).toBe(alone.choices[0]!.text);
    expect((await model.generate(ask(PROMPTS[2]!))).choices[0]!.text).toBe(alone.choices[0]!.text);
  });

  it('holds requests beyond maxRows until rows finish', async () => {
    const model = await load({ batch: { maxRows: 1 } });
    const before = { ...model.stats };
    const results = await Promise.all(PROMPTS.slice(0, 2).map((content) => model.generate(ask(content))));
    expect(results).toHaveLength(2);
    // One row at a time: every row-step is a pass of its own (the prefills included).
    expect(model.stats.forwardPasses - before.forwardPasses).toBe(model.stats.rowSteps - before.rowSteps);
  });

  it('answers a request aborted while it waits for a row at once, and serves the one behind it', async () => {
    const model = await load({ batch: { maxRows: 1 } });
    const alone = await model.generate(ask(PROMPTS[2]!));
    const controller = new AbortController();
    const running = model.generate(ask(PROMPTS[0]!, { maxTokens: 60 }));
    const waiting = model.generate(ask(PROMPTS[1]!), { signal: controller.signal });
    const behind = model.generate(ask(PROMPTS[2]!));
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ kind: 'aborted' });
    const [, last] = await Promise.all([running, behind]);
    expect(last.choices[0]!.text).toBe(alone.choices[0]!.text);
  });

  it('finds out a model whose attention ignores the mask, and decodes it one request at a time', async () => {
    const model = await ignoringAttentionMask(() => load());
    const alone = [];
    for (const content of PROMPTS.slice(0, 3)) alone.push(await model.generate(ask(content)));
    const before = { ...model.stats };
    const together = await Promise.all(PROMPTS.slice(0, 3).map((content) => model.generate(ask(content))));
    expect(texts(together)).toEqual(texts(alone));
    // Besides the probe's few passes, one pass per row-step: nothing was batched.
    const passes = model.stats.forwardPasses - before.forwardPasses;
    const rowSteps = model.stats.rowSteps - before.rowSteps;
    expect(passes).toBeGreaterThanOrEqual(rowSteps);
  });

  it('jumps forward over what a schema forces, in fewer passes, with valid output', async () => {
    const schema = {
      type: 'object',
      properties: {
        kind: { const: 'order' },
        status: { enum: ['pending', 'paid'] },
        shipping: {
          type: 'object',
          properties: { city: { type: 'string', maxLength: 12 } },
          required: ['city'],
          additionalProperties: false,
        },
      },
      required: ['kind', 'status', 'shipping'],
      additionalProperties: false,
    };
    const request = ask('Give me JSON for an order.', {
      maxTokens: 80,
      constraint: { type: 'json', schema },
      logprobs: 2,
    });
    const run = async (jumpForward: boolean) => {
      const model = await load({ jumpForward });
      const result = await model.generate(request);
      return { result, stats: model.stats };
    };
    const [on, off] = [await run(true), await run(false)];
    for (const { result } of [on, off]) {
      const value = JSON.parse(result.choices[0]!.text) as { kind: string; status: string };
      expect(value.kind).toBe('order');
      expect(['pending', 'paid']).toContain(value.status);
    }
    expect(off.stats.forcedTokens).toBe(0);
    expect(on.stats.forcedTokens).toBeGreaterThan(3);
    expect(on.stats.forwardPasses).toBeLessThan(off.stats.forwardPasses);
    // Every token is reported, the forced ones with probability 1 (log 0) as their only alternative.
    const logprobs = on.result.choices[0]!.logprobs!;
    expect(logprobs.map((l) => l.token).join('')).toBe(on.result.choices[0]!.text);
    expect(logprobs.filter((l) => l.logprob === 0 && l.topLogprobs.length === 1).length).toBeGreaterThan(3);
  });
});
