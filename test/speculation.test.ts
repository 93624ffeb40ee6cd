import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ChatRequest, ChatResult } from '../src/engine-interface/index.ts';
import { TransformersChatModel, type ChatModelOptions } from '../src/engines/transformers/chat-model.ts';
import { chatRequest } from './support/chat-request.ts';
import { ignoringAttentionMask } from './support/mask-ignoring-model.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';

/**
 * Speculation (prompt lookup, and OpenAI's `prediction`) on the bundled tiny-chat, loaded directly: every output is
 * the one decoding without it gives, token for token (greedy) or draw for draw under a seed (reproducible), alone,
 * batched, under a schema, with logprobs, and on a model whose attention ignores its mask; proposals the model takes
 * save forward passes, and usage reports them.
 */
const FOLDER = `${BUNDLED_MODELS}/tiny-chat`;

const load = (options: Partial<ChatModelOptions> = {}) =>
  TransformersChatModel.load(FOLDER, { id: 'tiny', device: 'cpu', dtype: 'fp32', ...options });

const ask = (content: string, overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ messages: [{ role: 'user', content }], maxTokens: 60, ...overrides });

const PASSAGE =
  'The lighthouse keeper climbed the stairs at dusk, lit the lamp, wrote the weather in his log, ' +
  'and watched the ships pass the rocks until the morning came.';

const REQUESTS: ChatRequest[] = [
  ask('Tell me a story about a dog and a ball.'),
  ask('What is 7 + 8?'),
  ask(`Repeat this passage word for word: ${PASSAGE}`),
  ask(`Summarize: ${PASSAGE} ${PASSAGE}`, { maxTokens: 120 }),
  ask('Give me JSON for an order.', {
    constraint: {
      type: 'json',
      schema: {
        type: 'object',
        properties: { items: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 6 } },
        required: ['items'],
      },
    },
  }),
  ask('List the colours of the rainbow.', { logprobs: 2 }),
];

const text = (result: ChatResult) => result.choices.map((c) => c.text);

describe('speculation', () => {
  it('gives the tokens decoding without it gives, alone and batched', async () => {
    const [off, on] = [await load({ promptLookup: false }), await load()];
    for (const request of REQUESTS) {
      const [plain, speculated] = [await off.generate(request), await on.generate(request)];
      expect(text(speculated)).toEqual(text(plain));
      // The same tokens; their log probabilities to float error (a pass over several positions sums in its own order).
      const [a, b] = [speculated.choices[0]!.logprobs ?? [], plain.choices[0]!.logprobs ?? []];
      expect(a.map((l) => l.token)).toEqual(b.map((l) => l.token));
      a.forEach((l, i) => expect(l.logprob).toBeCloseTo(b[i]!.logprob, 4));
      expect(speculated.usage.completionTokens).toBe(plain.usage.completionTokens);
    }
    const together = await Promise.all(REQUESTS.map((request) => on.generate(request)));
    const alone = [];
    for (const request of REQUESTS) alone.push(await off.generate(request));
    expect(together.map(text)).toEqual(alone.map(text));
    expect(on.stats.proposedTokens).toBeGreaterThan(0);
  });

  it('takes a right prediction in a few passes, and a wrong one changes nothing but its count', async () => {
    const model = await load();
    const request = ask('Tell me a story about a cat.', { maxTokens: 64 });
    const plain = await (await load({ promptLookup: false })).generate(request);
    const reply = plain.choices[0]!.text;
    const before = model.stats.forwardPasses;
    const predicted = await model.generate({ ...request, prediction: reply });
    expect(text(predicted)).toEqual([reply]);
    const tokens = plain.usage.completionTokens;
    expect(predicted.usage.acceptedPredictionTokens).toBeGreaterThan(tokens / 2);
    expect(model.stats.forwardPasses - before).toBeLessThan(tokens / 2);

    const wrong = await model.generate({ ...request, prediction: 'Completely unrelated words about the sea.' });
    expect(text(wrong)).toEqual([reply]);
    expect(wrong.usage.rejectedPredictionTokens).toBeGreaterThan(0);
    expect(wrong.usage.completionTokens).toBe(tokens);
  });

  it('samples under a seed what decoding without it samples, draw for draw, one choice or several', async () => {
    const [off, on] = [await load({ promptLookup: false }), await load()];
    for (const n of [1, 2]) {
      const request = ask(`Repeat this passage: ${PASSAGE}`, { temperature: 0.8, seed: 42, n, maxTokens: 48 });
      const plain = await off.generate(request);
      // The first choice's own words predicted: proposed, taken where drawn, and the rest drawn as without them.
      const predicted = { ...request, prediction: text(plain)[0]! };
      const [a, b] = [await on.generate(predicted), await on.generate(predicted)];
      expect(text(a)).toEqual(text(b));
      if (n === 1) expect(a.usage.acceptedPredictionTokens).toBeGreaterThan(plain.usage.completionTokens / 2);
      expect(text(a)).toEqual(text(plain));
      expect(text(a)[0]).not.toBe('');
    }
  });

  it('gives the same tokens on a model whose attention ignores its mask (rejected tokens are cut out)', async () => {
    await ignoringAttentionMask(async () => {
      const [off, on] = [await load({ promptLookup: false }), await load()];
      for (const request of REQUESTS.slice(2, 4)) {
        const plain = await off.generate(request);
        const predicted = await on.generate({
          ...request,
          prediction: `${plain.choices[0]!.text.slice(0, 40)} and more`,
        });
        expect(text(predicted)).toEqual(text(plain));
        expect(predicted.usage.rejectedPredictionTokens).toBeGreaterThan(0);
      }
    });
  });
});

/**
 * A draft model (test/fixtures/tiny-chat-draft: tiny-chat with two of its four layers, distilled from its replies,
 * scripts/fixtures/draft_fixture.py): its greedy guesses are proposed where prompt lookup has none, for a request decoded
 * alone. The output is the target's own, token for token and draw for draw.
 */
describe('a draft model', () => {
  const DRAFT = fileURLToPath(new URL('./fixtures/tiny-chat-draft', import.meta.url));

  it('gives the tokens decoding without it gives, with the proposals it made counted, in fewer passes', async () => {
    const [off, drafted] = [await load({ promptLookup: false }), await load({ promptLookup: false, draft: DRAFT })];
    let accepted = 0;
    let passesOff = 0;
    let passesOn = 0;
    for (const request of REQUESTS) {
      const before = [off.stats.forwardPasses, drafted.stats.forwardPasses];
      const [plain, speculated] = [await off.generate(request), await drafted.generate(request)];
      passesOff += off.stats.forwardPasses - before[0]!;
      passesOn += drafted.stats.forwardPasses - before[1]!;
      expect(text(speculated)).toEqual(text(plain));
      const [a, b] = [speculated.choices[0]!.logprobs ?? [], plain.choices[0]!.logprobs ?? []];
      expect(a.map((l) => l.token)).toEqual(b.map((l) => l.token));
      expect(speculated.usage.completionTokens).toBe(plain.usage.completionTokens);
      accepted += speculated.usage.acceptedPredictionTokens ?? 0;
      if (speculated.usage.acceptedPredictionTokens !== undefined) {
        expect(speculated.usage.rejectedPredictionTokens).toBeGreaterThanOrEqual(0);
      }
    }
    expect(accepted).toBeGreaterThan(0);
    expect(passesOn).toBeLessThan(passesOff);
    // Batched (rows of several requests share a pass), no row drafts: the same replies.
    const together = await Promise.all(REQUESTS.map((request) => drafted.generate(request)));
    const alone = [];
    for (const request of REQUESTS) alone.push(await off.generate(request));
    expect(together.map(text)).toEqual(alone.map(text));
  });

  it('samples reproducibly under a seed, and prompt lookup still proposes first', async () => {
    const model = await load({ draft: DRAFT });
    const request = ask('Tell me a story about a dog.', { temperature: 0.8, seed: 3, maxTokens: 48 });
    const [a, b] = [await model.generate(request), await model.generate(request)];
    expect(text(a)).toEqual(text(b));
    expect(a.usage.acceptedPredictionTokens).toBeGreaterThan(0);
    const off = await load({ promptLookup: false });
    expect(text(a)).toEqual(text(await off.generate(request)));
    const plain = await off.generate(ask(`Repeat this passage: ${PASSAGE}`));
    const predicted = await model.generate({ ...ask(`Repeat this passage: ${PASSAGE}`), prediction: text(plain)[0]! });
    expect(text(predicted)).toEqual(text(plain));
    expect(predicted.usage.acceptedPredictionTokens).toBeGreaterThan(plain.usage.completionTokens / 2);
  });

  it('refuses a draft of another tokenizer at load, saying so', async () => {
    await expect(load({ draft: `${BUNDLED_MODELS}/tiny-think` })).rejects.toThrow(/another tokenizer/);
  });
});

/**
 * tiny-chat as the draft of a costlier target (test/fixtures/tiny-chat-target: tiny-chat grown to 16 layers and
 * distilled from it, scripts/fixtures/target_fixture.py), the pair the bench measures a gain on: the target's own
 * greedy replies, token for token, in fewer of its passes.
 */
describe('tiny-chat as a draft', () => {
  const TARGET = fileURLToPath(new URL('./fixtures/tiny-chat-target', import.meta.url));
  const loadTarget = (options: Partial<ChatModelOptions> = {}) =>
    TransformersChatModel.load(TARGET, { id: 'target', device: 'cpu', dtype: 'fp32', promptLookup: false, ...options });

  it("gives the target's own greedy replies in fewer of its passes", async () => {
    const [off, drafted] = [await loadTarget(), await loadTarget({ draft: FOLDER })];
    const passes = { off: 0, on: 0 };
    for (const request of REQUESTS) {
      const before = [off.stats.forwardPasses, drafted.stats.forwardPasses];
      const [plain, speculated] = [await off.generate(request), await drafted.generate(request)];
      passes.off += off.stats.forwardPasses - before[0]!;
      passes.on += drafted.stats.forwardPasses - before[1]!;
      expect(text(speculated)).toEqual(text(plain));
      expect(speculated.usage.completionTokens).toBe(plain.usage.completionTokens);
    }
    expect(drafted.stats.acceptedTokens).toBeGreaterThan(0);
    expect(passes.on).toBeLessThan(passes.off / 2);
  });
});
