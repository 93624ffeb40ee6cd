import { describe, expect, it } from 'vitest';
import { FakeWebLLM, fakeCreate, fakeTokens, webLLMError } from '../../../test/support/fake-web-llm.ts';
import type { ChatEvent, ChatMessage, ChatRequest, LoadProgress } from '../../engine/index.ts';
import { WebLLMChatModel, toWebLLMRequest } from './web-llm-chat-model.ts';

const candidate = { engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC', downloadBytes: 1000 } as const;

const request = (overrides: Partial<ChatRequest> = {}): ChatRequest => ({
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hello there' },
  ],
  temperature: 0.7,
  topP: 0.9,
  presencePenalty: 0.5,
  frequencyPenalty: -0.5,
  stop: [],
  n: 1,
  ...overrides,
});

async function loaded() {
  const create = fakeCreate();
  const progress: LoadProgress[] = [];
  const model = await WebLLMChatModel.load(candidate, {
    id: 'crimson-falcon-4',
    onProgress: (p) => progress.push(p),
    create,
  });
  return { model, fake: create.engines[0]!, progress };
}

describe('WebLLMChatModel', () => {
  it('reports loading progress under the public ID', async () => {
    const { progress } = await loaded();
    expect(progress).toEqual([
      { status: 'progress_total', model: 'crimson-falcon-4', progress: 50, loaded: 500, total: 1000 },
      { status: 'progress_total', model: 'crimson-falcon-4', progress: 100, loaded: 1000, total: 1000 },
    ]);
  });

  it('translates the request into web-llm terms, one streamed request per choice', () => {
    expect(toWebLLMRequest(request({ maxTokens: 7, seed: 40, logitBias: { 5: -100 } }), 2)).toEqual({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      n: 1,
      temperature: 0.7,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      max_tokens: 7,
      seed: 42,
      logit_bias: { 5: -100 },
    });
    expect(toWebLLMRequest(request(), 0)).not.toHaveProperty('seed');
    expect(toWebLLMRequest(request(), 0)).not.toHaveProperty('max_tokens');
  });

  it('streams every token as an event and translates the answer back, usage included', async () => {
    const { model } = await loaded();
    const events: ChatEvent[] = [];
    const result = await model.generate(request({ seed: 1 }), { onEvent: (e) => events.push(e) });
    expect(events.filter((e) => e.type === 'delta')).toHaveLength(10);
    expect(events.at(-1)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    expect(result.choices).toEqual([
      { text: Array.from({ length: 10 }, (_, i) => `t${i}1 `).join(''), finishReason: 'stop' },
    ]);
    // Ten tokens of text and the end-of-reply token, as web-llm counts them.
    expect(result.usage).toEqual({ promptTokens: 4, completionTokens: 11 });
  });

  it('generates n choices one after the other, seeded seed + i, counting the prompt once', async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(request({ n: 3, seed: 10, maxTokens: 2 }));
    // Choice 0 last: it is the conversation web-llm keeps.
    expect(fake.requests.map((r) => r.seed)).toEqual([12, 11, 10]);
    expect(result.choices).toEqual([
      { text: 't010 t110 ', finishReason: 'length' },
      { text: 't011 t111 ', finishReason: 'length' },
      { text: 't012 t112 ', finishReason: 'length' },
    ]);
    expect(result.usage).toEqual({ promptTokens: 4, completionTokens: 6 });
  });

  it('cuts at a stop sequence split across tokens, without leaking it, and releases web-llm at once', async () => {
    const { model, fake } = await loaded();
    fake.reply = () => ['The ', 'answer', ' is', ' 4', '2.\n', '\nUs', 'er:', ' more', ' text'];
    const deltas: string[] = [];
    const result = await model.generate(request({ stop: ['\n\nUser:'] }), {
      onEvent: (e) => e.type === 'delta' && deltas.push(e.text),
    });
    expect(result.choices[0]).toEqual({ text: 'The answer is 42.', finishReason: 'stop' });
    expect(deltas.join('')).toBe('The answer is 42.');
    expect(fake.tokensGenerated).toBe(7); // no token generated after the stop sequence matched
    expect(fake.locked).toBe(false);
  });

  it('stops within a token of an abort, releases the lock, and the next generation is whole (web-llm#447)', async () => {
    const { model, fake } = await loaded();
    fake.reply = () => Array.from({ length: 1000 }, () => 'x');
    const abort = new AbortController();
    let seen = 0;
    const pending = model.generate(request(), {
      signal: abort.signal,
      onEvent: () => {
        if (++seen === 3) abort.abort();
      },
    });
    await expect(pending).rejects.toMatchObject({ name: 'EngineError', kind: 'aborted' });
    expect(fake.tokensGenerated).toBeLessThanOrEqual(4);
    expect(fake.locked).toBe(false);

    fake.reply = () => ['whole', ' reply'];
    const next = await model.generate(request());
    expect(next.choices[0]!.text).toBe('whole reply');
  });

  it.each([
    ['ContextWindowSizeExceededError', 'context_length_exceeded', 'messages'],
    ['SystemMessageOrderError', 'invalid_request', undefined],
    ['DeviceLostError', 'internal', undefined],
    ['SomethingNew', 'internal', undefined],
  ])('maps %s to a typed %s error', async (name, kind, param) => {
    const { model, fake } = await loaded();
    fake.failNext = webLLMError(name, `web-llm says ${name}`);
    const error = await model.generate(request()).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'EngineError', kind, message: `web-llm says ${name}`, param });
    expect(fake.locked).toBe(false);
  });

  it('maps a real context overflow from the engine', async () => {
    const { model, fake } = await loaded();
    fake.contextWindow = 3;
    await expect(model.generate(request())).rejects.toMatchObject({
      kind: 'context_length_exceeded',
      message: expect.stringMatching(/context window size: 3/),
    });
  });

  it.each(['ShaderF16SupportError', 'WebGPUNotAvailableError', 'DeviceLostError', 'NetworkError'])(
    'fails to load with a typed load_failed error on %s',
    async (name) => {
      const error = await WebLLMChatModel.load(candidate, {
        id: 'crimson-falcon-4',
        create: fakeCreate({ fail: webLLMError(name) }),
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: 'EngineError',
        kind: name === 'DeviceLostError' ? 'internal' : 'load_failed',
      });
    },
  );
});

describe('WebLLMChatModel and web-llm prefix reuse', () => {
  const reply = (i: number) => [`reply `, `${i} `, `ends `];
  const turn = (messages: ChatMessage[], result: { choices: { text: string }[] }, next: string): ChatMessage[] => [
    ...messages,
    { role: 'assistant', content: result.choices[0]!.text },
    { role: 'user', content: next },
  ];

  it('sends each turn so that web-llm keeps its cache, and counts the whole prompt', async () => {
    const { model, fake } = await loaded();
    let calls = 0;
    fake.reply = () => reply(calls++);
    let messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
    ];
    const usages = [];
    const wholes = [];
    const whole = (m: ChatMessage[]) => m.reduce((n, x) => n + fakeTokens(x.content), 0);
    for (const next of ['and then', 'go on please', undefined]) {
      const result = await model.generate(request({ messages }));
      usages.push(result.usage);
      wholes.push(whole(messages));
      if (next) messages = turn(messages, result, next);
    }
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true, true]);
    // As if web-llm had prefilled every message; cached: the prompt and reply (less its end token) before.
    expect(usages.map((u) => u.promptTokens)).toEqual(wholes);
    expect(usages.map((u) => u.cachedPromptTokens)).toEqual([undefined, 4 + 3, 4 + 3 + 2 + 3]);
  });

  it('with n > 1, leaves web-llm holding choice 0, which the next turn continues', async () => {
    const { model, fake } = await loaded();
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];
    const first = await model.generate(request({ messages, n: 3, seed: 1 }));
    await model.generate(request({ messages: turn(messages, first, 'more') }));
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, false, false, true]);
  });

  it.each([
    ['cut by max_tokens', { maxTokens: 2 }],
    ['ended by a stop sequence', { stop: ['1 '] }],
  ])('starts afresh after a reply %s, and says no token was cached', async (_name, overrides) => {
    const { model, fake } = await loaded();
    fake.reply = () => reply(1);
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];
    const first = await model.generate(request({ messages, ...overrides }));
    const second = await model.generate(request({ messages: turn(messages, first, 'more') }));
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, false]);
    expect(second.usage.cachedPromptTokens).toBeUndefined();
    expect(second.usage.promptTokens).toBe(fake.prefills[1]!.tokens);
  });

  it('starts afresh after an aborted reply', async () => {
    const { model, fake } = await loaded();
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];
    const abort = new AbortController();
    const aborted = model.generate(request({ messages }), {
      signal: abort.signal,
      onEvent: (e) => e.type === 'delta' && abort.abort(),
    });
    await expect(aborted).rejects.toMatchObject({ kind: 'aborted' });
    const next = [...messages, { role: 'assistant' as const, content: 't0 ' }, { role: 'user' as const, content: 'x' }];
    expect((await model.generate(request({ messages: next }))).usage.cachedPromptTokens).toBeUndefined();
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, false]);
  });
});

describe('FakeWebLLM', () => {
  async function read(fake: FakeWebLLM, messages: { role: 'system' | 'user' | 'assistant'; content: string }[]) {
    let text = '';
    const stream = await fake.chat.completions.create({ messages, stream: true } as never);
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    return text;
  }

  it("reuses its cache only for the exact conversation it holds, as web-llm's compareConversationObject does", async () => {
    const fake = new FakeWebLLM();
    const system = { role: 'system' as const, content: 'Be brief.' };
    const user = { role: 'user' as const, content: 'Hello' };
    const reply = await read(fake, [system, user]);
    const more = { role: 'user' as const, content: 'more' };
    await read(fake, [system, user, { role: 'assistant', content: `${reply} ` }, more]); // not its own reply
    const again = await read(fake, [system, user]);
    await read(fake, [{ ...system, content: 'Be long.' }, user, { role: 'assistant', content: again }, more]);
    const third = await read(fake, [system, user]);
    await read(fake, [system, user, { role: 'assistant', content: third }, more]);
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, false, false, false, false, true]);
  });

  it('has web-llm#447: after interruptGenerate the next generation is empty (which the adapter avoids)', async () => {
    const fake = new FakeWebLLM();
    fake.interruptGenerate();
    const chunks = [];
    for await (const chunk of await fake.chat.completions.create({
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })) {
      chunks.push(chunk);
    }
    expect(chunks).toHaveLength(0);
  });
});
