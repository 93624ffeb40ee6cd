import { readFileSync } from 'node:fs';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type ModelProfile } from '../src/index.ts';
import { chatRequest } from './support/chat-request.ts';
import { BUNDLED_MODELS, HAS_STORIES_260K, sdkClient, STORIES_260K } from './support/lantern.ts';

/**
 * Prefix reuse on the transformers.js engine, through the openai SDK: every answer of an engine that reuses cached
 * prefixes must be exactly the answer of one that recomputes each prompt from scratch (the same text from the same
 * number of tokens), while `usage.prompt_tokens_details.cached_tokens` shows the prefix that was not computed again.
 */
type Message = OpenAI.ChatCompletionMessageParam;
type Params = Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, 'model'>;

const MODEL = 'chat';
const SYSTEM =
  'You are a careful assistant. You answer in short sentences, you never invent facts, and when a question is ' +
  'unclear you say so and ask for what is missing. You write numbers as digits.';

/** The profile of one chat model, in `folder`, with its own prefix cache budget (0: no reuse). */
function profileOf(folder: string, prefixCacheBytes?: number): ModelProfile {
  return {
    [MODEL]: {
      task: 'chat',
      created: 0,
      candidates: [
        {
          engine: 'transformers',
          model: folder,
          dtype: 'fp32',
          device: 'cpu',
          ...(prefixCacheBytes !== undefined && { prefixCacheBytes }),
        },
      ],
    },
  };
}

const clientFor = (folder: string, prefixCacheBytes?: number) =>
  sdkClient({ profile: profileOf(folder, prefixCacheBytes) });

/** Bytes of keys and values a token takes in a model folder's fp32 LLaMA. */
function kvBytesPerToken(folder: string): number {
  const config = JSON.parse(readFileSync(`${folder}/config.json`, 'utf8')) as Record<string, number>;
  const headDim = config.head_dim ?? config.hidden_size! / config.num_attention_heads!;
  return config.num_hidden_layers! * 2 * config.num_key_value_heads! * headDim * 4;
}

const cached = (completion: OpenAI.ChatCompletion) => completion.usage?.prompt_tokens_details?.cached_tokens ?? 0;

const cases = [
  { name: 'the bundled tiny chat model', folder: `${BUNDLED_MODELS}/tiny-chat`, run: true },
  { name: 'stories260K (../shared/models)', folder: STORIES_260K, run: HAS_STORIES_260K },
];

describe.each(cases)('prefix reuse on $name', ({ folder, run }) => {
  let reuse: OpenAI;
  let scratch: OpenAI;
  beforeAll(async () => {
    if (!run) return;
    reuse = (await clientFor(folder)).client;
    scratch = (await clientFor(folder, 0)).client;
  });

  /** Sends the same request to both engines: the answers must agree; returns the reusing engine's. */
  async function both(params: Params, client = reuse): Promise<OpenAI.ChatCompletion> {
    const [a, b] = await Promise.all([
      client.chat.completions.create({ model: MODEL, ...params }),
      scratch.chat.completions.create({ model: MODEL, ...params }),
    ]);
    // Log probabilities the same tokens, the same values to float rounding: keys and values of the reply's tokens were
    // computed one token at a time when cached, with the whole prompt when recomputed (a matrix-vector product rounds
    // differently from a matrix product, in the last bits).
    const logprobs = (c: OpenAI.ChatCompletion) => c.choices.flatMap((x) => x.logprobs?.content ?? []);
    expect(logprobs(a).map((t) => t.token)).toEqual(logprobs(b).map((t) => t.token));
    logprobs(a).forEach((t, i) => expect(t.logprob).toBeCloseTo(logprobs(b)[i]!.logprob, 5));
    expect(a.choices.map((c) => [c.message.content, c.finish_reason])).toEqual(
      b.choices.map((c) => [c.message.content, c.finish_reason]),
    );
    expect(a.usage!.prompt_tokens).toBe(b.usage!.prompt_tokens);
    expect(a.usage!.completion_tokens).toBe(b.usage!.completion_tokens);
    expect(cached(b)).toBe(0);
    return a;
  }

  it.skipIf(!run)('continues a conversation turn after turn, prefilling only the new turn', async () => {
    const messages: Message[] = [{ role: 'user', content: 'Count to 10.' }];
    for (const next of ['What is 3 + 4?', 'Tell me a story.', 'Spell cat.']) {
      const answer = await both({ messages, temperature: 0, max_tokens: 40, logprobs: true });
      messages.push(
        { role: 'assistant', content: answer.choices[0]!.message.content },
        { role: 'user', content: next },
      );
    }
    const last = await both({ messages, temperature: 0, max_tokens: 40, logprobs: true });
    // Everything up to the last reply was cached: the previous prompt and the reply the model generated.
    expect(cached(last)).toBeGreaterThan(last.usage!.prompt_tokens / 2);
  });

  it.skipIf(!run)('shares a system prompt between conversations', async () => {
    const { client } = await clientFor(folder);
    const ask = (content: string) =>
      both(
        {
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content },
          ],
          temperature: 0,
          max_tokens: 24,
        },
        client,
      );
    const first = await ask('Hello');
    expect(cached(first)).toBe(0);
    for (const question of ['What colour is grass?', 'Name three fruits.']) {
      const answer = await ask(question);
      // At least the system prompt; not the question.
      expect(cached(answer)).toBeGreaterThan(first.usage!.prompt_tokens / 2);
      expect(cached(answer)).toBeLessThan(answer.usage!.prompt_tokens);
    }
  });

  it.skipIf(!run)('gives the same answers after its entries were evicted', async () => {
    const a: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Tell me a story.' },
    ];
    const b: Message[] = [{ role: 'user', content: 'Hi' }];
    const params = { temperature: 0, max_tokens: 20 };
    // A budget that holds the cache of conversation A's second turn exactly: B's first turn then evicts it.
    const turn = async (client: OpenAI, messages: Message[]) => {
      const answer = await client.chat.completions.create({ model: MODEL, messages, ...params });
      messages.push(
        { role: 'assistant', content: answer.choices[0]!.message.content },
        { role: 'user', content: 'Hi' },
      );
      return answer;
    };
    const rehearsal = structuredClone(a);
    await turn(scratch, rehearsal);
    const { usage } = await turn(scratch, rehearsal);
    const { client } = await clientFor(
      folder,
      kvBytesPerToken(folder) * (usage!.prompt_tokens + usage!.completion_tokens - 1),
    );

    const first = await both({ messages: a, ...params }, client);
    a.push({ role: 'assistant', content: first.choices[0]!.message.content }, { role: 'user', content: 'Hi' });
    const second = await both({ messages: a, ...params }, client);
    expect(cached(second)).toBeGreaterThan(0);
    a.push({ role: 'assistant', content: second.choices[0]!.message.content }, { role: 'user', content: 'Hi' });
    await both({ messages: b, ...params }, client);
    const third = await both({ messages: a, ...params }, client);
    // Conversation A's cache is gone: at most what it shares with B's was reused.
    expect(cached(third)).toBeLessThan(second.usage!.prompt_tokens);
  });

  it.skipIf(!run)('samples n choices with a seed as it would from scratch, and continues any of them', async () => {
    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Tell me a story.' },
    ];
    const params = { temperature: 1.2, seed: 7, n: 3, max_tokens: 24 };
    const first = await both({ messages, ...params });
    // Continue the second choice, not the first.
    messages.push({ role: 'assistant', content: first.choices[1]!.message.content }, { role: 'user', content: 'Hi' });
    const second = await both({ messages, ...params });
    expect(cached(second)).toBeGreaterThanOrEqual(first.usage!.prompt_tokens);
  });

  it.skipIf(!run)('continues after a stop sequence ended the previous reply', async () => {
    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Count to 20.' },
    ];
    const whole = await both({ messages, temperature: 0, max_tokens: 40 });
    // A stop sequence from the middle of the reply the model gives.
    const text = whole.choices[0]!.message.content!;
    const stop = text
      .slice(Math.floor(text.length / 2))
      .trim()
      .slice(0, 2);
    const stopped = await both({ messages, temperature: 0, stop: [stop], max_tokens: 40 });
    expect(stopped.choices[0]!.finish_reason).toBe('stop');
    messages.push(
      { role: 'assistant', content: stopped.choices[0]!.message.content },
      { role: 'user', content: 'Spell cat.' },
    );
    const next = await both({ messages, temperature: 0, max_tokens: 30 });
    expect(cached(next)).toBeGreaterThanOrEqual(stopped.usage!.prompt_tokens);
  });

  it.skipIf(!run)('does not depend on logits processors: a biased turn, then an unbiased one', async () => {
    const messages: Message[] = [{ role: 'user', content: 'What is 2 + 2?' }];
    const biased = await both({ messages, temperature: 0, logit_bias: { 20: 50 }, max_tokens: 12 });
    messages.push(
      { role: 'assistant', content: biased.choices[0]!.message.content },
      { role: 'user', content: 'Hello' },
    );
    const plain = await both({ messages, temperature: 0, frequency_penalty: 1, max_tokens: 30 });
    expect(cached(plain)).toBeGreaterThan(0);
  });

  it.skipIf(!run)('composes with structured output and logprobs: a constrained turn, then a free one', async () => {
    const messages: Message[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'Name three fruits.' },
    ];
    const schema = {
      type: 'object',
      properties: { fruits: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 } },
      required: ['fruits'],
      additionalProperties: false,
    };
    const constrained = await both({
      messages,
      temperature: 0,
      max_tokens: 80,
      logprobs: true,
      top_logprobs: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'fruits', schema, strict: true } },
    });
    expect(cached(constrained)).toBeGreaterThan(0); // the system prompt, from the tests before
    messages.push(
      { role: 'assistant', content: constrained.choices[0]!.message.content },
      { role: 'user', content: 'Spell cat.' },
    );
    const free = await both({ messages, temperature: 0, max_tokens: 30 });
    expect(cached(free)).toBeGreaterThan(constrained.usage!.prompt_tokens);
  });

  it.skipIf(!run)('keeps what an aborted generation computed, and reuses it correctly', async () => {
    const { client } = await clientFor(folder);
    const params = {
      messages: [
        { role: 'system' as const, content: SYSTEM },
        { role: 'user' as const, content: 'Tell me a story.' },
      ],
      temperature: 0,
      max_tokens: 60,
    };
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: MODEL, ...params, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content && ++chunks === 3) {
        controller.abort();
        break;
      }
    }
    const retried = await both(params, client);
    expect(cached(retried)).toBe(retried.usage!.prompt_tokens - 1);
  });

  it.skipIf(!run)('frees the cache of a generation that failed, and answers the next request correctly', async () => {
    const engine = createEngine({ profile: profileOf(folder) });
    const fresh = createEngine({ profile: profileOf(folder, 0) });
    const request = chatRequest({ messages: [{ role: 'user', content: 'Tell me a story.' }], maxTokens: 40 });
    let deltas = 0;
    const failing = engine.chat(MODEL, request, {
      onEvent: () => {
        if (++deltas === 5) throw new Error('the consumer went away');
      },
    });
    await expect(failing).rejects.toThrow('the consumer went away');
    const [again, expected] = await Promise.all([engine.chat(MODEL, request), fresh.chat(MODEL, request)]);
    expect(again.choices).toEqual(expected.choices);
  });
});
