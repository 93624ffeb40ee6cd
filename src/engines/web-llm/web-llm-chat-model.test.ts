import { describe, expect, it } from 'vitest';
import { FakeWebLLM, fakeCreate, webLLMError } from '../../../test/support/fake-web-llm.ts';
import type { ChatEvent, ChatRequest, LoadProgress } from '../../engine/index.ts';
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
    // An omitted max_tokens is bounded by the handler's limit (web-llm stops at its window's end by itself).
    expect(toWebLLMRequest(request({ defaultMaxTokens: 50 }), 0).max_tokens).toBe(50);
    expect(toWebLLMRequest(request({ maxTokens: 7, defaultMaxTokens: 50 }), 0).max_tokens).toBe(7);
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
    expect(result.usage).toEqual({ promptTokens: 4, completionTokens: 10 });
  });

  it('generates n choices one after the other, seeded seed + i, counting the prompt once', async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(request({ n: 3, seed: 10, maxTokens: 2 }));
    expect(fake.requests.map((r) => r.seed)).toEqual([10, 11, 12]);
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

describe('FakeWebLLM', () => {
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
