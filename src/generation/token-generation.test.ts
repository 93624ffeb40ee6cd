import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/support/chat-request.ts';
import type { ChatEvent, ChatRequest, EngineError } from '../engine-interface/index.ts';
import type { Vocabulary } from '../grammar/token-bytes.ts';
import { HERMES } from '../tools/tool-call-syntax.ts';
import type { ChoiceGrammar, GenerationTokenizer } from './generation-tokenizer.ts';
import { executesPlan, type NativeSampling, type SamplingPlan } from './sampling-plan.ts';
import { adjustLogits, logitBiasOf } from './sampling.ts';
import {
  forcedTokens,
  generateTokens,
  maxNewTokensFor,
  requestThinks,
  templateThinks,
  type GenerationOptions,
  type GenerationSteps,
} from './token-generation.ts';

/** A tiny vocabulary: 0 ends a reply; `{"` is one token, so `{` followed by `"` merges; a thought's tags. */
const STRINGS = ['<eos>', 'a', 'b', 'c', '{', '"', '{"', 'x', 'y', '<think>', '</think>'];
const EOS = 0;
const A = 1;
const B = 2;
const C = 3;
const X = 7;
const Y = 8;
const THINK_END = 10;

const encoder = new TextEncoder();

/** A tokenizer over STRINGS: greedy longest match, an unknown character as -1. */
function fakeTokenizer(grammar?: () => ChoiceGrammar): GenerationTokenizer {
  const vocabulary: Vocabulary = {
    strings: STRINGS,
    type: 'raw',
    prependSpace: false,
    special: new Set([EOS]),
    bytes: STRINGS.map((s) => encoder.encode(s)),
  };
  return {
    encode(text) {
      const ids: number[] = [];
      for (let at = 0; at < text.length;) {
        let best = -1;
        for (let id = 1; id < STRINGS.length; id++) {
          if (text.startsWith(STRINGS[id]!, at) && (best < 0 || STRINGS[id]!.length > STRINGS[best]!.length)) best = id;
        }
        ids.push(best);
        at += best < 0 ? 1 : STRINGS[best]!.length;
      }
      return ids;
    },
    decode: (ids) =>
      ids
        .filter((id) => id !== EOS)
        .map((id) => STRINGS[id])
        .join(''),
    vocabulary: () => vocabulary,
    tokenText: () => ({ text: (t) => STRINGS[t]!, bytes: (t) => vocabulary.bytes[t]! }),
    eos: new Set([EOS]),
    grammars: () =>
      Promise.resolve({
        matchers: (_constraint, count) => Promise.resolve(Array.from({ length: count }, () => grammar!())),
      }),
  };
}

/** A grammar that allows everything and forces each of `texts` in turn, then nothing. */
function forcingGrammar(texts: string[]): ChoiceGrammar {
  const queue = [...texts];
  return { apply: () => true, accept: () => true, forcedText: () => queue.shift() ?? '', dispose() {} };
}

/** Logits of STRINGS' size with the given values (others -10). */
function logits(values: Record<number, number>): Float32Array {
  const row = new Float32Array(STRINGS.length).fill(-10);
  for (const [id, value] of Object.entries(values)) row[Number(id)] = value;
  return row;
}

const OPTIONS: GenerationOptions = {
  promptTokens: 5,
  contextLength: 100,
  thinking: false,
  syntax: HERMES,
  jumpForward: true,
  promptLookup: true,
};

/**
 * Runs the steps as a decode loop does: each row's next tokens from `step(row, index)`'s logits until it is done,
 * returning what each step appended.
 */
async function generate(
  request: Partial<ChatRequest>,
  step: (row: number, index: number) => Float32Array,
  options: Partial<GenerationOptions> = {},
  tokenizer = fakeTokenizer(),
) {
  const appended: number[][] = [];
  let seen: GenerationSteps | undefined;
  const events: ChatEvent[] = [];
  const result = await generateTokens(
    tokenizer,
    chatRequest(request),
    { ...OPTIONS, onEvent: (e) => events.push(e), ...options },
    (steps) => {
      seen = steps;
      for (let row = 0; row < steps.rows; row++) {
        for (let i = 0; i < 50 && !steps.done(row); i++) appended.push(steps.next(row, step(row, i), true));
      }
      return Promise.resolve({ cachedPromptTokens: 2 });
    },
  );
  return { result, appended, steps: seen!, events };
}

describe('maxNewTokensFor', () => {
  it('refuses a prompt and reply that do not fit the window, in the words of the OpenAI API', () => {
    const error = (() => {
      try {
        maxNewTokensFor(chatRequest({ maxTokens: 20 }), 90, 100);
      } catch (e) {
        return e as EngineError;
      }
    })();
    expect(error?.kind).toBe('context_length_exceeded');
    expect(error?.param).toBe('messages');
    expect(error?.message).toBe(
      "This model's maximum context length is 100 tokens. However, you requested 110 tokens (90 in the messages, " +
        '20 in the completion). Please reduce the length of the messages or completion.',
    );
  });

  it('names the prompt of a raw request, and refuses a prompt that fills the window', () => {
    expect(() => maxNewTokensFor(chatRequest({ messages: [], prompt: 'x' }), 100, 100)).toThrow(
      expect.objectContaining({
        param: 'prompt',
        message: expect.stringContaining('101 tokens (100 in the prompt, 1'),
      }),
    );
  });

  it('refuses an empty prompt', () => {
    expect(() => maxNewTokensFor(chatRequest(), 0, 100)).toThrow(
      expect.objectContaining({ kind: 'invalid_request', message: 'The prompt is empty.', param: 'prompt' }),
    );
  });

  it('gives the tokens asked for, else the default within the room left, else the room', () => {
    expect(maxNewTokensFor(chatRequest({ maxTokens: 7 }), 90, 100)).toBe(7);
    expect(maxNewTokensFor(chatRequest({ defaultMaxTokens: 4 }), 90, 100)).toBe(4);
    expect(maxNewTokensFor(chatRequest({ defaultMaxTokens: 40 }), 90, 100)).toBe(10);
    expect(maxNewTokensFor(chatRequest(), 90, 100)).toBe(10);
  });
});

describe('thinking', () => {
  it('reads a thinking mode from a template, and thinks only when asked outside a raw prompt', () => {
    expect(templateThinks('{% if enable_thinking %}')).toBe(true);
    expect(templateThinks('<think>\n')).toBe(true);
    expect(templateThinks('{{ messages }}')).toBe(false);
    expect(templateThinks(undefined)).toBe(false);
    expect(requestThinks(true, chatRequest({ thinking: true }))).toBe(true);
    expect(requestThinks(true, chatRequest({ thinking: true, messages: [], prompt: 'x' }))).toBe(false);
    expect(requestThinks(false, chatRequest({ thinking: true }))).toBe(false);
  });
});

describe('generateTokens', () => {
  it('refuses a request that does not fit before running anything', async () => {
    let ran = false;
    const run = () => {
      ran = true;
      return Promise.resolve({ cachedPromptTokens: 0 });
    };
    const request = chatRequest({ maxTokens: 96 });
    await expect(generateTokens(fakeTokenizer(), request, OPTIONS, run)).rejects.toMatchObject({
      kind: 'context_length_exceeded',
    });
    expect(ran).toBe(false);
  });

  it('picks the most likely token greedily, ends at the end token, and counts the usage', async () => {
    const { result, appended, steps } = await generate({}, (_, i) =>
      i < 2 ? logits({ [B]: 1, [C]: 0.5 }) : logits({ [EOS]: 1 }),
    );
    expect(steps.maxNewTokens).toBe(95);
    expect(appended).toEqual([[B], [B], [EOS]]);
    expect(result.choices[0]).toMatchObject({ text: 'bb', finishReason: 'stop' });
    expect(result.usage).toEqual({ promptTokens: 5, completionTokens: 3, cachedPromptTokens: 2 });
  });

  it('ends a row at its token limit', async () => {
    const { result } = await generate({ maxTokens: 3 }, () => logits({ [A]: 1 }));
    expect(result.choices[0]).toMatchObject({ text: 'aaa', finishReason: 'length' });
  });

  it('adds logit_bias before the pick', async () => {
    const { result } = await generate({ maxTokens: 2, logitBias: { [C]: 5 } }, () => logits({ [B]: 1, [C]: 0 }));
    expect(result.choices[0]!.text).toBe('cc');
  });

  it('subtracts the presence and frequency penalties of the tokens generated so far', async () => {
    const row = () => logits({ [A]: 1, [B]: 0.5, [C]: 0.2 });
    expect((await generate({ maxTokens: 3 }, row)).result.choices[0]!.text).toBe('aaa');
    expect((await generate({ maxTokens: 3, presencePenalty: 1 }, row)).result.choices[0]!.text).toBe('abc');
    // a: 1, then 0.4 (one a) under b's 0.5, then 0.4 over b's -0.1 and c's 0.2.
    expect((await generate({ maxTokens: 3, frequencyPenalty: 0.6 }, row)).result.choices[0]!.text).toBe('aba');
  });

  it('draws the same tokens twice from the same seed', async () => {
    const flat = () => logits({ [A]: 0, [B]: 0, [C]: 0, [X]: 0, [Y]: 0 });
    const draw = async (seed?: number) =>
      (await generate({ maxTokens: 24, temperature: 1, ...(seed !== undefined && { seed }) }, flat)).result.choices[0]!
        .text;
    const first = await draw(42);
    expect(await draw(42)).toBe(first);
    expect(new Set(first).size).toBeGreaterThan(1);
    expect(await draw(43)).not.toBe(first);
  });

  it('reports log probabilities of the tokens it picked', async () => {
    const { result } = await generate({ maxTokens: 1, logprobs: 1 }, () => logits({ [A]: 1, [B]: 1 }));
    const [entry] = result.choices[0]!.logprobs!;
    expect(entry).toMatchObject({ token: 'a', topLogprobs: [{ token: 'a' }] });
    // The other nine tokens at -10 weigh too.
    expect(entry!.logprob).toBeCloseTo(1 - Math.log(2 * Math.exp(1) + 9 * Math.exp(-10)), 5);
  });

  it('appends the tokens a grammar forces (jump-forward), each with probability 1', async () => {
    const constraint = { type: 'json', schema: null } as const;
    const tokenizer = fakeTokenizer(() => forcingGrammar(['xy']));
    const run = (options: Partial<GenerationOptions>) =>
      generate({ maxTokens: 4, constraint, logprobs: 0 }, () => logits({ [A]: 1 }), options, tokenizer);
    const jumped = await run({});
    expect(jumped.appended).toEqual([[A, X, Y], [A]]);
    expect(jumped.result.choices[0]!.text).toBe('axya');
    expect(jumped.result.choices[0]!.logprobs!.map((l) => l.logprob)).toEqual([
      expect.any(Number),
      0,
      0,
      expect.any(Number),
    ]);
    const stepwise = await run({ jumpForward: false });
    expect(stepwise.appended).toEqual([[A], [A], [A], [A]]);
  });

  it('disposes its grammars, and hands events on after the result has them', async () => {
    let disposed = 0;
    const tokenizer = fakeTokenizer(() => ({ ...forcingGrammar([]), dispose: () => void disposed++ }));
    const { events, result } = await generate(
      { n: 2, maxTokens: 1, constraint: { type: 'json', schema: null } },
      () => logits({ [A]: 1 }),
      {},
      tokenizer,
    );
    expect(disposed).toBe(2);
    expect(result.choices.map((c) => c.text)).toEqual(['a', 'a']);
    expect(events.filter((e) => e.type === 'finish')).toHaveLength(2);
  });
});

describe('thought budget', () => {
  // A model that would think forever: `a` after `a`, never `</think>` of its own.
  const thinker = () => logits({ [A]: 1, [B]: 0.5 });
  const think = (request: Partial<ChatRequest>) => generate({ maxTokens: 40, ...request }, thinker, { thinking: true });

  it.each([
    ['low', 10],
    ['medium', 20],
    ['high', 30],
    ['xhigh', 36],
  ] as const)(
    'closes a thought at %s effort after its share of max_tokens (%i tokens), then answers',
    async (effort, budget) => {
      const { result, appended } = await think({ reasoningEffort: effort });
      // The end tag is written in the model's place, as the budget's last token.
      expect(appended.flat().indexOf(THINK_END)).toBe(budget - 1);
      expect(result.choices[0]).toMatchObject({
        reasoning: 'a'.repeat(budget - 1),
        text: 'a'.repeat(40 - budget),
        finishReason: 'length',
      });
      expect(result.usage).toMatchObject({ completionTokens: 40, reasoningTokens: budget });
    },
  );

  it('gives a request without an effort the medium budget, and one that thinks at max only max_tokens', async () => {
    expect((await think({})).result.usage.reasoningTokens).toBe(20);
    const unbounded = await think({ reasoningEffort: 'max' });
    expect(unbounded.appended.flat()).not.toContain(THINK_END);
    expect(unbounded.result.choices[0]).toMatchObject({ text: '', finishReason: 'length' });
    expect(unbounded.result.usage.reasoningTokens).toBe(40);
  });

  it('leaves a thought that ends within its budget as the model wrote it', async () => {
    const { appended, result } = await generate(
      { maxTokens: 40, reasoningEffort: 'low' },
      (_, i) =>
        i < 3 ? logits({ [A]: 1 }) : i === 3 ? logits({ [THINK_END]: 1 }) : logits({ [B]: 1, [EOS]: i > 5 ? 2 : 0 }),
      { thinking: true },
    );
    expect(appended.flat()).toEqual([A, A, A, THINK_END, B, B, EOS]);
    expect(result.choices[0]).toMatchObject({ reasoning: 'aaa', text: 'bb', finishReason: 'stop' });
  });

  it('writes the end tag through the grammar, with probability 1, and holds the answer to it after', async () => {
    const accepted: number[] = [];
    const grammar = (): ChoiceGrammar => ({ ...forcingGrammar([]), accept: (t) => (accepted.push(t), true) });
    const { result } = await generate(
      { maxTokens: 8, reasoningEffort: 'low', constraint: { type: 'json', schema: null }, logprobs: 0 },
      thinker,
      { thinking: true, jumpForward: false },
      fakeTokenizer(grammar),
    );
    expect(accepted.slice(0, 2)).toEqual([A, THINK_END]);
    expect(result.choices[0]).toMatchObject({ reasoning: 'a', text: 'aaaaaa' });
    expect(result.choices[0]!.logprobs).toHaveLength(6);
  });
});

describe('forcedTokens', () => {
  const tokenizer = fakeTokenizer();
  it('forces the forced text as the tokenizer writes it after the generated tail', () => {
    expect(forcedTokens(tokenizer, { forcedText: () => 'xy' }, [A])).toEqual([X, Y]);
  });

  it('forces nothing when a token spans the end of the generated text', () => {
    // `{` then `"x`: the tokenizer writes `{"` as one token.
    expect(forcedTokens(tokenizer, { forcedText: () => '"x' }, [4])).toEqual([]);
  });

  it('leaves the last tokens that what follows could merge with to the model', () => {
    // `{` then a `"` would be `{"`.
    expect(forcedTokens(tokenizer, { forcedText: () => 'x{' }, [A])).toEqual([X]);
  });

  it('forces nothing without forced text', () => {
    expect(forcedTokens(tokenizer, { forcedText: () => '' }, [A])).toEqual([]);
  });
});

/** Everything a runtime may draw natively but logprobs (node-llama-cpp's sampler, less its nucleus). */
const DRAWS_ALL: NativeSampling = {
  temperature: true,
  nucleus: false,
  penalties: true,
  logitBias: true,
  grammar: true,
  logprobs: -1,
};

/**
 * Runs the steps as `generate` does, on a fake engine that draws natively where a row has a native step: it applies
 * the plan's bias and penalties to the logits itself (over the tokens the step says the row generated) and hands over
 * the argmax alone. Returns the plans it was given.
 */
async function generateNatively(
  request: Partial<ChatRequest>,
  step: (row: number, index: number) => Float32Array,
  options: Partial<GenerationOptions> = {},
  tokenizer = fakeTokenizer(),
) {
  const plans: SamplingPlan[] = [];
  const result = await generateTokens(tokenizer, chatRequest(request), { ...OPTIONS, ...options }, (steps) => {
    for (let row = 0; row < steps.rows; row++) {
      for (let i = 0; i < 50 && !steps.done(row); i++) {
        const native = steps.native?.(row);
        const logits = step(row, i);
        if (!native) {
          steps.next(row, logits, true);
          continue;
        }
        plans.push(native.plan);
        const counts = new Map<number, number>();
        for (const token of native.generated) counts.set(token, (counts.get(token) ?? 0) + 1);
        adjustLogits(logits, native.plan, counts);
        const token = logits.indexOf(Math.max(...logits));
        steps.next(row, { token, ...(native.plan.logprobs !== undefined && { logprob: -0.25, top: [] }) }, true);
      }
    }
    return Promise.resolve({ cachedPromptTokens: 0 });
  });
  return { result, plans };
}

describe('sampling plans', () => {
  it('runs a row natively only where the engine covers its whole plan', () => {
    const plan: SamplingPlan = { temperature: 0, topP: 1, seed: 1, presencePenalty: 0, frequencyPenalty: 0 };
    expect(executesPlan(undefined, plan)).toBe(false);
    expect(executesPlan(DRAWS_ALL, plan)).toBe(true);
    // A nucleus matters only under a temperature.
    expect(executesPlan(DRAWS_ALL, { ...plan, topP: 0.5 })).toBe(true);
    expect(executesPlan(DRAWS_ALL, { ...plan, temperature: 0.7, topP: 0.5 })).toBe(false);
    expect(executesPlan({ ...DRAWS_ALL, nucleus: true }, { ...plan, temperature: 0.7, topP: 0.5 })).toBe(true);
    expect(executesPlan({ ...DRAWS_ALL, temperature: false }, { ...plan, temperature: 0.7 })).toBe(false);
    expect(executesPlan({ ...DRAWS_ALL, penalties: false }, { ...plan, presencePenalty: 1 })).toBe(false);
    expect(executesPlan({ ...DRAWS_ALL, logitBias: false }, { ...plan, logitBias: logitBiasOf({ 1: 5 }) })).toBe(false);
    expect(executesPlan({ ...DRAWS_ALL, grammar: false }, { ...plan, grammar: 'root ::= "a"' })).toBe(false);
    expect(executesPlan(DRAWS_ALL, { ...plan, logprobs: 0 })).toBe(false);
    expect(executesPlan({ ...DRAWS_ALL, logprobs: 5 }, { ...plan, logprobs: 5 })).toBe(true);
    expect(executesPlan({ ...DRAWS_ALL, logprobs: 5 }, { ...plan, logprobs: 6 })).toBe(false);
  });

  it('gives the same greedy tokens with bias and penalties drawn natively as on the logits path', async () => {
    const row = () => logits({ [A]: 1, [B]: 0.5, [C]: 0.2, [X]: 0.1 });
    const request = { maxTokens: 6, presencePenalty: 0.3, frequencyPenalty: 0.4, logitBias: { [X]: 0.5 } };
    const onLogits = await generate(request, row);
    const native = await generateNatively(request, row, { executes: DRAWS_ALL });
    expect(native.plans).toHaveLength(6);
    expect(native.plans[0]).toMatchObject({ temperature: 0, presencePenalty: 0.3, frequencyPenalty: 0.4 });
    expect(native.result.choices[0]!.text).toBe(onLogits.result.choices[0]!.text);
    expect(new Set(native.result.choices[0]!.text).size).toBeGreaterThan(2);
  });

  it('keeps on the logits path what the engine does not draw: logprobs, a nucleus, sampled choices sharing a prompt', async () => {
    const row = () => logits({ [A]: 1 });
    const plansOf = async (request: Partial<ChatRequest>) =>
      (await generateNatively({ maxTokens: 2, ...request }, row, { executes: DRAWS_ALL })).plans.length;
    expect(await plansOf({})).toBe(2);
    expect(await plansOf({ logprobs: 0 })).toBe(0);
    expect(await plansOf({ temperature: 0.7, topP: 0.9 })).toBe(0);
    expect(await plansOf({ temperature: 0.7 })).toBe(2);
    expect(await plansOf({ temperature: 0.7, n: 2 })).toBe(0);
    // Greedy choices share the prompt's first draw: natively too, each with its own seed.
    const greedy = await generateNatively({ maxTokens: 2, n: 2, seed: 5 }, row, { executes: DRAWS_ALL });
    expect(greedy.plans).toHaveLength(4);
    expect(greedy.plans[0]!.seed).not.toBe(greedy.plans[2]!.seed);
  });

  it("spells a native draw's logprob, where the engine reports as many alternatives as asked", async () => {
    const row = () => logits({ [A]: 1 });
    const executes = { ...DRAWS_ALL, logprobs: 0 };
    const native = await generateNatively({ maxTokens: 2, logprobs: 0 }, row, { executes });
    expect(native.plans).toHaveLength(2);
    expect(native.result.choices[0]!.logprobs).toEqual([
      { token: 'a', logprob: -0.25, bytes: [97], topLogprobs: [] },
      { token: 'a', logprob: -0.25, bytes: [97], topLogprobs: [] },
    ]);
    expect((await generateNatively({ maxTokens: 2, logprobs: 1 }, row, { executes })).plans).toHaveLength(0);
  });

  it("constrains natively with the constraint's GBNF, else with Lantern's grammar on the logits path", async () => {
    const constraint = { type: 'json', schema: null } as const;
    let compiled = 0;
    const tokenizer = fakeTokenizer(() => {
      compiled += 1;
      return forcingGrammar([]);
    });
    const gbnf = 'root ::= "a"+';
    const asked: unknown[] = [];
    const nativeGrammar = (...args: unknown[]) => {
      asked.push(args);
      return Promise.resolve(gbnf);
    };
    const row = () => logits({ [A]: 1 });
    const native = await generateNatively(
      { maxTokens: 2, constraint },
      row,
      { executes: DRAWS_ALL, nativeGrammar },
      tokenizer,
    );
    expect(native.plans.map((p) => p.grammar)).toEqual([gbnf, gbnf]);
    expect(asked).toEqual([[constraint, HERMES, false]]);
    expect(compiled).toBe(0);
    // No GBNF for it, or an engine without grammars: Lantern's matcher, on the logits path.
    const without = await generateNatively(
      { maxTokens: 2, constraint },
      row,
      { executes: DRAWS_ALL, nativeGrammar: () => Promise.resolve(undefined) },
      tokenizer,
    );
    expect(without.plans).toHaveLength(0);
    expect(compiled).toBe(1);
    const refused = await generateNatively(
      { maxTokens: 2, constraint },
      row,
      { executes: { ...DRAWS_ALL, grammar: false }, nativeGrammar },
      tokenizer,
    );
    expect(refused.plans).toHaveLength(0);
    expect(asked).toHaveLength(1);
  });

  it("writes a spent thought budget's end tag in a native draw's place", async () => {
    const { result, plans } = await generateNatively(
      { maxTokens: 40, reasoningEffort: 'low' },
      () => logits({ [A]: 1, [B]: 0.5 }),
      { executes: DRAWS_ALL, thinking: true },
    );
    // Every step drawn natively; the end tag written over the draw of the budget's last token (the tenth).
    expect(plans).toHaveLength(40);
    expect(result.choices[0]).toMatchObject({ reasoning: 'a'.repeat(9), text: 'a'.repeat(30) });
  });

  it('goes without what needs a tokenizer that cannot encode in a step (a prediction)', async () => {
    const { encode: _encode, ...tokenizer } = fakeTokenizer();
    const { result } = await generate({ maxTokens: 3, prediction: 'xyz' }, () => logits({ [A]: 1 }), {}, tokenizer);
    expect(result.choices[0]!.text).toBe('aaa');
    expect(result.usage.acceptedPredictionTokens).toBeUndefined();
  });
});
