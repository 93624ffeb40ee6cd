import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '../src/index.ts';
import { reference, sdkClient, type ChatReference, type SdkClient } from './support/lantern.ts';

/**
 * Chat completions through the official openai SDK, on the bundled tiny chat model with real inference. Expected
 * texts come from reference.json, computed in PyTorch when the fixture was generated.
 */
const refs = reference<ChatReference[]>('tiny-chat');
const byPrompt = (prompt: string) => refs.find((r) => r.messages.at(-1)!.content === prompt)!;
const count = byPrompt('Count to 10.');
const story = byPrompt('Tell me a story.');
const wave = byPrompt('Send a wave.');
const model = 'crimson-falcon-4';

let handler: Handler;
let key: string;
let client: SdkClient['client'];
let calls: SdkClient['calls'];

beforeAll(async () => {
  ({ client, handler, key, calls } = await sdkClient());
});

describe('non-streamed', () => {
  it.each(refs.map((r) => [r.messages.at(-1)!.content, r] as const))(
    'answers %j greedily as PyTorch did, ending on its own',
    async (_prompt, ref) => {
      const completion = await client.chat.completions.create({ model, messages: ref.messages, temperature: 0 });
      expect(completion.object).toBe('chat.completion');
      expect(completion.model).toBe(model);
      expect(completion.choices).toHaveLength(1);
      expect(completion.choices[0]!.message).toMatchObject({ role: 'assistant', content: ref.greedy_text });
      expect(completion.choices[0]!.finish_reason).toBe('stop');
      expect(completion.usage).toMatchObject({
        prompt_tokens: ref.input_ids.length,
        completion_tokens: ref.greedy_ids.length,
        total_tokens: ref.input_ids.length + ref.greedy_ids.length,
      });
    },
  );

  it('stops at max_tokens with finish_reason "length" (and max_completion_tokens too)', async () => {
    for (const limit of [{ max_tokens: 6 }, { max_completion_tokens: 6 }]) {
      const completion = await client.chat.completions.create({
        model,
        messages: story.messages,
        temperature: 0,
        ...limit,
      });
      expect(completion.choices[0]!.finish_reason).toBe('length');
      expect(completion.usage!.completion_tokens).toBe(6);
      expect(story.greedy_text.startsWith(completion.choices[0]!.message.content!)).toBe(true);
      expect(completion.choices[0]!.message.content!.length).toBeGreaterThan(5);
    }
  });

  it('bounds an omitted max_tokens by limits.maxTokens, and by the context window when that is smaller', async () => {
    const { client: capped } = await sdkClient({ handler: { limits: { maxTokens: 5 } } });
    const short = await capped.chat.completions.create({ model, messages: story.messages, temperature: 0 });
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.usage!.completion_tokens).toBe(5);
    expect(story.greedy_text.startsWith(short.choices[0]!.message.content!)).toBe(true);

    // The default limit (4,096) is over this model's 1,024-token window: an omitted max_tokens still answers, whole.
    const whole = await client.chat.completions.create({ model, messages: story.messages, temperature: 0 });
    expect(whole.choices[0]!.message.content).toBe(story.greedy_text);
  });

  it('cuts at a stop sequence that spans tokens, which never appears in the output', async () => {
    const completion = await client.chat.completions.create({
      model,
      messages: count.messages,
      temperature: 0,
      stop: ['7, 8', 'never'],
    });
    expect(completion.choices[0]!.message.content).toBe('1, 2, 3, 4, 5, 6, ');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
  });

  it('returns n choices; greedy choices agree and seeded sampling is reproducible', async () => {
    const greedy = await client.chat.completions.create({ model, messages: count.messages, temperature: 0, n: 3 });
    expect(greedy.choices.map((c) => [c.index, c.message.content])).toEqual(
      [0, 1, 2].map((i) => [i, count.greedy_text]),
    );
    expect(greedy.usage!.completion_tokens).toBe(3 * count.greedy_ids.length);
    expect(greedy.usage!.prompt_tokens).toBe(count.input_ids.length);

    const messages = [{ role: 'user' as const, content: 'Tell me about a zebra named Quantum.' }];
    const sample = (seed: number) =>
      client.chat.completions.create({ model, messages, temperature: 2, n: 2, seed, max_tokens: 24 });
    const [a, b, c] = await Promise.all([sample(11), sample(11), sample(12)]);
    const texts = (r: OpenAI.ChatCompletion) => r.choices.map((ch) => ch.message.content);
    expect(texts(a)).toEqual(texts(b));
    expect(texts(a)).not.toEqual(texts(c));
    expect(texts(a)[0]).not.toEqual(texts(a)[1]);
  });

  it('samples only the most likely token under a tiny top_p or top_p 0 (as OpenAI means it), even at temperature 2', async () => {
    for (const topP of [1e-6, 0]) {
      const completion = await client.chat.completions.create({
        model,
        messages: story.messages,
        temperature: 2,
        top_p: topP,
        seed: 1,
      });
      expect(completion.choices[0]!.message.content).toBe(story.greedy_text);
    }
  });

  it('refuses a prompt over the context window with context_length_exceeded', async () => {
    const long = [{ role: 'user' as const, content: 'lantern '.repeat(1100) }];
    const error = await client.chat.completions.create({ model, messages: long }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'messages' });
    expect((error as Error).message).toMatch(/maximum context length is 1024 tokens/);

    const tooMuch = await client.chat.completions
      .create({ model, messages: count.messages, max_tokens: 1024 - count.input_ids.length + 1 })
      .catch((e: unknown) => e);
    expect(tooMuch).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    const fits = await client.chat.completions.create({
      model,
      messages: count.messages,
      temperature: 0,
      max_tokens: 1024 - count.input_ids.length,
    });
    expect(fits.choices[0]!.message.content).toBe(count.greedy_text);
  });
});

describe('streamed', () => {
  it('streams token by token and finalChatCompletion() carries the usage', async () => {
    const stream = client.chat.completions.stream({
      model,
      messages: count.messages,
      temperature: 0,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    stream.on('content', (delta) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(count.greedy_text);
    expect(final.choices[0]!.finish_reason).toBe('stop');
    expect(final.usage).toMatchObject({
      prompt_tokens: count.input_ids.length,
      completion_tokens: count.greedy_ids.length,
      total_tokens: count.input_ids.length + count.greedy_ids.length,
    });
    // ASCII text: every generated token but the final <|im_end|> is its own event.
    expect(deltas).toHaveLength(count.greedy_ids.length - 1);
    expect(deltas.join('')).toBe(count.greedy_text);
  });

  it('never splits a character across events, and joins to the exact text', async () => {
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await client.chat.completions.create({
      model,
      messages: wave.messages,
      temperature: 0,
      stream: true,
    })) {
      chunks.push(chunk);
    }
    const contents = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? ''));
    expect(contents.join('')).toBe(wave.greedy_text);
    expect(contents.some((c) => c.includes('\uFFFD'))).toBe(false);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => !('usage' in c))).toBe(true);
  });

  it('streams n = 2 with a stop sequence: each choice ends with its own finish_reason', async () => {
    const stream = client.chat.completions.stream({
      model,
      messages: count.messages,
      temperature: 0,
      n: 2,
      stop: ', 5',
      stream_options: { include_usage: true },
    });
    const seen: string[] = [];
    stream.on('chunk', (chunk) => chunk.choices.forEach((c) => seen.push(c.delta.content ?? '')));
    const final = await stream.finalChatCompletion();
    expect(final.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, '1, 2, 3, 4', 'stop'],
      [1, '1, 2, 3, 4', 'stop'],
    ]);
    expect(seen.join('')).not.toContain(', 5');
    expect(final.usage!.prompt_tokens).toBe(count.input_ids.length);
  });

  it('stops generating when the client aborts, and the next request answers normally', async () => {
    const abort = new AbortController();
    const stream = await client.chat.completions.create(
      {
        model,
        messages: [{ role: 'user', content: 'Tell me a story.' }],
        stream: true,
        max_tokens: 1000,
        // <|endoftext|> and <|im_end|> banned: the model cannot end by itself, only the abort can stop it.
        logit_bias: { 0: -100, 2: -100 },
      },
      { signal: abort.signal },
    );
    let received = 0;
    // As over HTTP, the SDK ends the iteration quietly when its request is aborted.
    for await (const _chunk of stream) if (++received === 3) abort.abort();
    const run = calls.at(-1)!;
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ name: 'EngineError', kind: 'aborted' });
    expect(run.eventsAfterAbort).toBeLessThanOrEqual(1); // the token in flight when the abort landed, at most
    expect(run.events).toBeLessThan(20);

    const next = await client.chat.completions.create({ model, messages: count.messages, temperature: 0 });
    expect(next.choices[0]!.message.content).toBe(count.greedy_text);
  });
});

describe('wire details', () => {
  it('carries one system_fingerprint per model, on the completion and on every chunk', async () => {
    const completion = await client.chat.completions.create({ model, messages: count.messages, temperature: 0 });
    expect(completion.system_fingerprint).toMatch(/^fp_[0-9a-f]{8}$/);
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({
      model,
      messages: count.messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) chunks.push(chunk);
    expect(new Set(chunks.map((c) => c.system_fingerprint))).toEqual(new Set([completion.system_fingerprint]));
    const other = await client.chat.completions.create({ model: 'indigo-owl-4', messages: count.messages });
    expect(other.system_fingerprint).toMatch(/^fp_/);
    expect(other.system_fingerprint).not.toBe(completion.system_fingerprint);
  });

  it('accepts 64-bit seeds, beyond 2^53 and negative, and samples reproducibly with them', async () => {
    const messages = [{ role: 'user' as const, content: 'Tell me about a zebra named Quantum.' }];
    const sample = (seed: number) =>
      client.chat.completions.create({ model, messages, temperature: 2, seed, max_tokens: 16 });
    for (const seed of [2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1, 2 ** 53 + 2]) {
      const [a, b] = [await sample(seed), await sample(seed)];
      expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
    }
    // As a client writes the largest unsigned 64-bit seed: JSON's number, rounded to 2^64 when parsed.
    const raw = await handler(
      new Request('http://lantern.test/v1/chat/completions', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: `{"model": "${model}", "messages": [{"role": "user", "content": "Hi"}], "seed": 18446744073709551615, "max_tokens": 2}`,
      }),
    );
    expect(raw.status).toBe(200);
  });

  it('takes a prediction (Predicted Outputs): the same answer, and usage says how much of it was accepted', async () => {
    const ask = (prediction?: OpenAI.ChatCompletionPredictionContent) =>
      client.chat.completions.create({ model, messages: story.messages, temperature: 0, prediction });
    const right = await ask({ type: 'content', content: story.greedy_text });
    expect(right.choices[0]!.message.content).toBe(story.greedy_text);
    const details = right.usage!.completion_tokens_details!;
    expect(details.accepted_prediction_tokens).toBeGreaterThan(story.greedy_ids.length / 2);
    expect(right.usage!.completion_tokens).toBe(story.greedy_ids.length);
    // As text parts, and wrong: the same answer again.
    const wrong = await ask({
      type: 'content',
      content: [{ type: 'text', text: 'The sea was calm and grey all day.' }],
    });
    expect(wrong.choices[0]!.message.content).toBe(story.greedy_text);
    const error = await client.chat.completions
      .create({ model, messages: story.messages, prediction: { type: 'audio' } as never })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ param: expect.stringMatching(/^prediction/) });
  });

  it.each([
    [
      { tool_choice: 'auto' as const },
      'tool_choice',
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    ],
    [{ top_logprobs: 2 }, 'top_logprobs', "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled."],
  ])('refuses %j as OpenAI does, naming the parameter', async (params, param, message) => {
    const error = await client.chat.completions
      .create({ model, messages: count.messages, ...params })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ param, code: null, error: { message } });
  });
});
