import type { ChatCompletionChunk, ChatCompletionRequestStreaming } from '@mlc-ai/web-llm';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_THINKING_BLOCK,
  fakeCreate,
  fakeEngine,
  type FakeWebLLM,
  webLLMError,
  type FakeCreateOptions,
} from '../../../test/support/fake-web-llm.ts';
import type { ChatEvent, ChatMessage, ChatRequest, LoadProgress } from '../../engine-interface/index.ts';
import { WebLLMChatModel, toWebLLMRequest, webLLMMessages } from './web-llm-chat-model.ts';
import { nativeRowPlan } from '../../generation/native-choices.ts';
import { rowSeed } from '../../generation/decode-loop.ts';
import { seed31 } from '../../generation/seeded-random.ts';
import { WEB_LLM_ERROR_NAMES } from './web-llm-errors.ts';
import { toolConstraint } from '../../../test/support/tools.ts';

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

async function loaded(options: FakeCreateOptions = {}) {
  const create = fakeCreate(options);
  const progress: LoadProgress[] = [];
  const model = await WebLLMChatModel.load(candidate, {
    id: 'crimson-falcon-4',
    onProgress: (p) => progress.push(p),
    create,
  });
  return { model, fake: create.engines[0]!, progress };
}

describe('WebLLMChatModel', () => {
  it("reports web-llm's three load passes as one rising progress, naming each phase; a cached model downloads nothing", async () => {
    const load = async (create: ReturnType<typeof fakeCreate>) => {
      const progress: LoadProgress[] = [];
      await WebLLMChatModel.load(candidate, { id: 'crimson-falcon-4', onProgress: (p) => progress.push(p), create });
      expect(progress.every((p) => p.model === 'crimson-falcon-4')).toBe(true);
      const totals = progress.flatMap((p) => (p.status === 'progress_total' ? [p.progress] : []));
      expect(totals).toEqual([...totals].sort((a, b) => a - b)); // never back to 0
      expect(totals.at(-1)).toBe(100);
      const phases = progress.flatMap((p) => (p.status === 'initiate' ? [p.file] : []));
      const downloads = progress.flatMap((p) => (p.status === 'download' ? [p.file] : []));
      const done = progress.flatMap((p) => (p.status === 'done' ? [p.file] : []));
      expect(done).toEqual(phases);
      for (const p of progress) if (p.status === 'progress') expect(phases).toContain(p.file);
      return { progress, phases, downloads };
    };
    const first = fakeCreate();
    const cold = await load(first);
    expect(cold.phases).toEqual(['fetch-weights', 'load-weights', 'compile-shaders']);
    expect(cold.downloads).toEqual(['fetch-weights']);
    // Shards fetched, of web-llm's four; the bytes of the download, from the candidate's size.
    expect(cold.progress.find((p) => p.status === 'progress')).toEqual({
      status: 'progress',
      model: 'crimson-falcon-4',
      file: 'fetch-weights',
      loaded: 1,
      total: 4,
      progress: 25,
    });
    expect(cold.progress.findLast((p) => p.status === 'progress_total')).toMatchObject({ loaded: 1000, total: 1000 });
    // The same origin again: web-llm finds every shard in its cache and only loads them.
    const warm = await load(fakeCreate({ caches: first.caches }));
    expect(warm.phases).toEqual(['load-weights', 'compile-shaders']);
    expect(warm.downloads).toEqual([]);
    expect(warm.progress.findLast((p) => p.status === 'progress_total')).toMatchObject({ loaded: 0, total: 0 });
  });

  it("translates a row's plan into web-llm terms, one streamed request per choice, seeded with the row's seed", () => {
    const sent = (r: ChatRequest, row = 0) => toWebLLMRequest(r, nativeRowPlan(r, row));
    expect(sent(request({ maxTokens: 7, seed: 40, logitBias: { 5: -100 } }), 2)).toEqual({
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
      repetition_penalty: 1,
      max_tokens: 7,
      seed: rowSeed(seed31(40), 2),
      logit_bias: { 5: -100 },
    });
    // The first row draws from the request's own seed; unseeded, from web-llm's own generator.
    expect(sent(request({ seed: 40 })).seed).toBe(40);
    expect(sent(request())).not.toHaveProperty('seed');
    expect(sent(request())).not.toHaveProperty('max_tokens');
    // An omitted max_tokens is bounded by the handler's limit (web-llm stops at its window's end by itself).
    expect(sent(request({ defaultMaxTokens: 50 })).max_tokens).toBe(50);
    expect(sent(request({ maxTokens: 7, defaultMaxTokens: 50 })).max_tokens).toBe(7);
  });

  it("sends a turn's images as OpenAI's image_url parts, in place, without the detail web-llm refuses", () => {
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    const messages = webLLMMessages(
      request({
        messages: [
          {
            role: 'user',
            content: 'Compare with',
            images: [
              { url, detail: 'high', at: 0, param: 'messages[0].content[0]' },
              { url: 'https://example.com/b.png', detail: 'auto', at: 7, param: 'messages[0].content[2]' },
            ],
          },
        ],
      }),
    );
    expect(messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url } },
          { type: 'text', text: 'Compare' },
          { type: 'image_url', image_url: { url: 'https://example.com/b.png' } },
          { type: 'text', text: ' with' },
        ],
      },
    ]);
  });

  it('streams every token as an event and translates the answer back, usage included', async () => {
    const { model, fake } = await loaded();
    const events: ChatEvent[] = [];
    const result = await model.generate(request({ seed: 1 }), { onEvent: (e) => events.push(e) });
    expect(events.filter((e) => e.type === 'delta')).toHaveLength(10);
    expect(events.at(-1)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
    expect(result.choices).toEqual([
      { text: Array.from({ length: 10 }, (_, i) => `t${i}1 `).join(''), finishReason: 'stop' },
    ]);
    // The prompt as web-llm counts it; ten tokens of text and the end-of-reply token, as web-llm counts them.
    expect(result.usage).toEqual({ promptTokens: fake.prefills[0]!.tokens, completionTokens: 11 });
  });

  it("generates n choices as the core's rows, from the last to the first, each with its own seed, counting the prompt once", async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(request({ n: 3, seed: 10, maxTokens: 2 }));
    // Choice 0 last: it is the conversation web-llm keeps. Its seed is the request's; the others' are mixed from it.
    const seeds = [10, rowSeed(seed31(10), 1), rowSeed(seed31(10), 2)];
    expect(fake.requests.map((r) => r.seed)).toEqual([...seeds].reverse());
    // Each choice is the first two tokens of what the fake model writes under its seed.
    const firstTwo = (seed: number) => {
      const ids = fake.tokenizer.encode(Array.from({ length: 10 }, (_, i) => `t${i}${seed} `).join(''));
      return fake.tokenizer.decode(ids.slice(0, 2));
    };
    expect(result.choices).toEqual(seeds.map((seed) => ({ text: firstTwo(seed), finishReason: 'length' })));
    expect(result.choices[0]!.text).toBe('t010 t110 ');
    expect(result.usage).toEqual({ promptTokens: fake.prefills[0]!.tokens, completionTokens: 6 });
    // The same seed, the same choices.
    expect((await model.generate(request({ n: 3, seed: 10, maxTokens: 2 }))).choices).toEqual(result.choices);
  });

  it("counts the completion's tokens as the core's pipelines saw them, not as web-llm's usage chunk says", async () => {
    const { model, fake } = await loaded();
    // web-llm's own count is read only to know whether an end token followed the last token written.
    fake.pipeline.getCurRoundCompletionTotalTokens = () => 1000;
    const result = await model.generate(request({ seed: 1 }));
    // Ten tokens written and the end token drawn after them.
    expect(result.usage.completionTokens).toBe(11);
  });

  it('cuts at a stop sequence split across tokens, without leaking it, counting the prompt, and releases web-llm', async () => {
    const words = ['The ', 'answer', ' is', ' 4', '2.\n', '\nUs', 'er:', ' more', ' text'];
    const { model, fake } = await loaded({ words });
    fake.reply = () => words;
    const deltas: string[] = [];
    const result = await model.generate(request({ stop: ['\n\nUser:'] }), {
      onEvent: (e) => e.type === 'delta' && deltas.push(e.text),
    });
    expect(result.choices[0]).toEqual({ text: 'The answer is 42.', finishReason: 'stop' });
    expect(deltas.join('')).toBe('The answer is 42.');
    expect(fake.tokensGenerated).toBe(7); // no token generated after the stop sequence matched
    // The prompt's tokens come from web-llm's usage chunk, which the interrupted stream still ends with.
    expect(result.usage).toEqual({ promptTokens: fake.prefills[0]!.tokens, completionTokens: 7 });
    expect(fake.locked).toBe(false);
    // The interrupt ended that generation only.
    fake.reply = () => ['whole', ' reply'];
    expect((await model.generate(request())).choices[0]!.text).toBe('whole reply');
  });

  it("answers any safe-integer seed (llama.cpp's random is -1): web-llm gets the non-negative seed of the same residue", async () => {
    const { model, fake } = await loaded();
    const first = await model.generate(request({ seed: -1, n: 2 }));
    // web-llm's generator keeps a seed modulo 2^31 - 1 and refuses a negative one: -1 is sent as 2^31 - 2.
    expect(fake.requests.map((r) => r.seed)).toEqual([rowSeed(seed31(-1), 1), 2147483646]);
    expect((await model.generate(request({ seed: -1, n: 2 }))).choices).toEqual(first.choices);
    for (const seed of [Number.MIN_SAFE_INTEGER, -2147483647, Number.MAX_SAFE_INTEGER]) {
      const sent = toWebLLMRequest(request({ seed }), nativeRowPlan(request({ seed }), 0)).seed!;
      expect(sent).toBeGreaterThanOrEqual(0);
      expect(sent).toBeLessThan(2147483647);
      await expect(model.generate(request({ seed }))).resolves.toMatchObject({ choices: [{ finishReason: 'stop' }] });
    }
  });

  it("applies only the request's penalties: web-llm's repetition_penalty is neutral, whatever the model's config says", async () => {
    const create = fakeCreate();
    const qwen = { engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC' } as const;
    const model = await WebLLMChatModel.load(qwen, { id: 'm', create });
    const fake = create.engines[0]!;
    expect(fake.chatConfig.repetition_penalty).toBe(1.1); // Qwen2.5's generation_config.json
    // A model that slightly prefers `a` to `b`, three times: greedy is `aaa` unless a hidden penalty weighs on `a`.
    fake.scores = (written, tokenizer) => {
      const logits = new Float32Array(tokenizer.getVocabSize()).fill(-10);
      if (written.length === 3) logits[tokenizer.id('<|im_end|>')] = 10;
      else [logits[tokenizer.id('a')], logits[tokenizer.id('b')]] = [1, 0.95];
      return logits;
    };
    const plain = { temperature: 0, presencePenalty: 0, frequencyPenalty: 0 };
    expect((await model.generate(request(plain))).choices[0]!.text).toBe('aaa');
    expect(fake.requests[0]!.repetition_penalty).toBe(1);
    const raw = await model.generate(request({ ...plain, prompt: 'x', messages: [] }));
    expect(raw.choices[0]!.text).toBe('aaa');
    expect(fake.completionRequests[0]!.repetition_penalty).toBe(1);
  });

  it('gives top_p 0 its OpenAI meaning, the most likely token only: web-llm refuses it, so it is temperature 0', async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(request({ topP: 0, temperature: 1.5, seed: 3 }));
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(fake.requests[0]).toMatchObject({ temperature: 0, top_p: 1, seed: 3 });
  });

  it.each([
    ['Qwen3-0.6B-q4f16_1-MLC', true],
    ['Qwen3.5-0.8B-q4f32_1-MLC', true],
    ['SmolLM2-360M-Instruct-q4f16_1-MLC', false],
    ['Qwen2.5-0.5B-Instruct-q4f16_1-MLC', false],
  ])('switches the thinking mode of %s off unless asked (has one: %s)', async (name, thinks) => {
    const create = fakeCreate();
    const model = await WebLLMChatModel.load({ engine: 'web-llm', model: name }, { id: 'm', create });
    const fake = create.engines[0]!;
    fake.reply = () => ['Paris', '.'];
    const deltas: string[] = [];
    const off = await model.generate(request(), { onEvent: (e) => e.type === 'delta' && deltas.push(e.text) });
    expect(fake.requests[0]!.extra_body).toEqual(thinks ? { enable_thinking: false } : undefined);
    // web-llm writes an empty thinking block into the reply when it switches thinking off: not the model's answer.
    expect(off.choices[0]!.text).toBe('Paris.');
    expect(deltas.join('')).toBe('Paris.');
    await model.generate(request({ thinking: true }));
    expect(fake.requests[1]).not.toHaveProperty('extra_body');
  });

  it("counts max_tokens on the reply only, though web-llm counts its empty thinking block's tokens in its output", async () => {
    const create = fakeCreate();
    const model = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC' },
      { id: 'm', create },
    );
    const fake = create.engines[0]!;
    for (const maxTokens of [1, 2, 4, 5]) {
      const result = await model.generate(request({ maxTokens, seed: 1 }));
      expect(result.choices[0]).toEqual({
        text: Array.from({ length: maxTokens }, (_, i) => `t${i}1 `).join(''),
        finishReason: 'length',
      });
      expect(result.usage.completionTokens).toBe(maxTokens);
    }
    // Thinking on, web-llm writes no block: max_tokens goes as it is.
    await model.generate(request({ maxTokens: 3, thinking: true }));
    expect(fake.requests.at(-1)!.max_tokens).toBe(3);
  });

  it("gives a raw prompt the BOS its tokenizer adds, as transformers.js does (web-llm's text completion adds none)", async () => {
    const create = fakeCreate();
    const llama = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Llama-3.2-1B-Instruct-q4f16_1-MLC' },
      { id: 'm', create },
    );
    const raw = request({ prompt: 'Once upon a time', messages: [], maxTokens: 2 });
    await llama.generate(raw);
    const fake = create.engines[0]!;
    const prompt = fake.tokenizer.encode('Once upon a time');
    expect(fake.prefills.at(-1)!.ids).toEqual([fake.tokenizer.id('<|begin_of_text|>'), ...prompt]);
    // Qwen's tokenizer adds none.
    const qwen = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC' },
      { id: 'm', create },
    );
    await qwen.generate(raw);
    expect(create.engines[1]!.prefills.at(-1)!.ids).toEqual([...prompt]);
  });

  it("reports a thinking model's thought apart from its answer when asked to think, counting its tokens", async () => {
    const create = fakeCreate();
    const model = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC' },
      { id: 'm', create },
    );
    const fake = create.engines[0]!;
    fake.reply = () => ['<think>', '\nThe capital ', 'is Paris.\n', '</think>', '\n\n', 'Paris', '.'];
    const events: ChatEvent[] = [];
    const result = await model.generate(request({ thinking: true }), { onEvent: (e) => events.push(e) });
    expect(fake.requests[0]).not.toHaveProperty('extra_body');
    expect(result.choices[0]).toEqual({ text: 'Paris.', reasoning: 'The capital is Paris.', finishReason: 'stop' });
    expect(
      events
        .filter((e) => e.type === 'delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('Paris.');
    // The thought's tokens, `</think>` included, as the fake's tokenizer makes them; then the answer's and the end's.
    const { tokenizer } = fake;
    const thought = ['<think>', '\nThe capital ', 'is Paris.\n', '</think>'].map((t) => tokenizer.encode(t).length);
    const reasoningTokens = thought.reduce((a, b) => a + b, 0);
    expect(result.usage.reasoningTokens).toBe(reasoningTokens);
    expect(result.usage.completionTokens).toBe(reasoningTokens + tokenizer.encode('\n\nParis.').length + 1);
  });

  it('lets a thinking model think before the constrained answer: the grammar opens with its thought', async () => {
    const create = fakeCreate();
    const model = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC' },
      { id: 'm', create },
    );
    const fake = create.engines[0]!;
    fake.reply = () => ['<think>', '\nA number.\n', '</think>', '\n\n', '{"a":', '1}'];
    const constraint = { type: 'json', schema: { type: 'object', properties: { a: { type: 'integer' } } } } as const;
    const result = await model.generate(request({ thinking: true, constraint, temperature: 0 }));
    expect(fake.requests[0]!.response_format).toMatchObject({ type: 'structural_tag' });
    expect(result.choices[0]).toEqual({ text: '{"a":1}', reasoning: 'A number.', finishReason: 'stop' });
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
    ['DeviceLostError', 'internal', undefined],
    ['SomethingNew', 'internal', undefined],
  ])('maps %s to a typed %s error', async (name, kind, param) => {
    const { model, fake } = await loaded();
    fake.failNext = webLLMError(name, `web-llm says ${name}`);
    const error = await model.generate(request()).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'EngineError', kind, message: `web-llm says ${name}`, param });
    expect(fake.locked).toBe(false);
  });

  // web-llm's own messages (lib/index.js, 0.2.86): its config errors name the parameter only in their message.
  it.each([
    ['RangeError', 'Make sure 0 < top_p <= 1.', 'top_p'],
    ['RangeError', 'Make sure -2 < frequency_penalty <= 2.', 'frequency_penalty'],
    ['RangeError', 'Make sure -100 < logit_bias <= 100. Got 120 for tokenID 5', 'logit_bias'],
    ['MinValueError', 'Make sure `max_tokens` > 0.', 'max_tokens'],
    ['NonNegativeError', 'Make sure temperature >= 0.', 'temperature'],
    ['InvalidNumberStringError', "Make sure logit_bias's keys to be number represented in string. Got x", 'logit_bias'],
    ['DependencyError', 'top_logprobs requires logprobs to be true.', 'top_logprobs'],
    ['ConfigValueError', 'Something about presence_penalty.', 'presence_penalty'],
    ['SeedTypeError', '`seed` should be an integer, but got 1.5', 'seed'],
    ['StreamingCountError', 'When streaming, `n` cannot be > 1.', 'n'],
    ['SystemMessageOrderError', 'System prompt should always be the first message in `messages`.', 'messages'],
    ['MessageOrderError', 'Last message should be from either `user` or `tool`.', 'messages'],
  ])('maps %s (%j) to a 400 naming %s, not a broken engine', async (name, message, param) => {
    const { model, fake } = await loaded();
    fake.failNext = webLLMError(name, message);
    const error = await model.generate(request()).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'EngineError',
      kind: 'invalid_request',
      param,
      message: `Invalid value for '${param}': ${message}`,
    });
    expect(fake.locked).toBe(false);
  });

  it("tells web-llm's RangeError (a value it refuses) from the built-in one (a buffer that could not be allocated)", async () => {
    const { model, fake } = await loaded();
    fake.failNext = new RangeError('Array buffer allocation failed');
    await expect(model.generate(request())).rejects.toMatchObject({ kind: 'internal' });
    fake.failNext = webLLMError('RangeError', 'Make sure 0 < top_p <= 1.');
    await expect(model.generate(request())).rejects.toMatchObject({ kind: 'invalid_request', param: 'top_p' });
  });

  it("maps a grammar web-llm could not compile as the request's (response_format, tools), not a broken engine", async () => {
    const { model, fake } = await loaded();
    const initError = (cause: string) => {
      const error = webLLMError(
        'GrammarMatcherInitError',
        `Failed to initialize the grammar matcher for response format \`grammar\`: ${cause}`,
      );
      error.cause = new Error(cause);
      return error;
    };
    const json = { type: 'json', schema: { type: 'object' } } as const;
    fake.failNext = initError('[FATAL] grammar too large');
    await expect(model.generate(request({ constraint: json }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'response_format',
    });
    fake.failNext = initError('[FATAL] grammar too large');
    const tools = toolConstraint([{ name: 'f', parameters: { type: 'object' } }]);
    await expect(model.generate(request({ constraint: tools }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'tools',
    });
    // An XGrammar that aborted is dead for every later grammar: the worker must be replaced.
    fake.failNext = initError('Aborted(). Build with -sASSERTIONS for more info.');
    await expect(model.generate(request({ constraint: json }))).rejects.toMatchObject({ kind: 'internal' });
  });

  it('maps only the error names web-llm 0.2.86 defines', async () => {
    const source = await readFile(fileURLToPath(import.meta.resolve('@mlc-ai/web-llm')), 'utf8');
    const defined = new Set([...source.matchAll(/this\.name = "(\w+)"/g)].map((m) => m[1]));
    expect(WEB_LLM_ERROR_NAMES.filter((name) => !defined.has(name))).toEqual([]);
  });

  it("refuses what web-llm's own request check refuses, as the client's error", async () => {
    const { model } = await loaded();
    // web-llm takes images only on a vision model; its exported check runs in create(), as in web-llm.
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    const image = request({
      messages: [{ role: 'user', content: 'What is it?', images: [{ url, detail: 'auto', at: 0, param: 'p' }] }],
    });
    await expect(model.generate(image)).rejects.toMatchObject({ kind: 'invalid_request', param: 'messages' });
  });

  it('sends every system message in one, first, in their order (web-llm takes one, first), as the CPU engines answer', async () => {
    const { model, fake } = await loaded();
    const result = await model.generate(
      request({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'system', content: 'Answer in French.' },
          { role: 'user', content: 'Hello' },
          { role: 'assistant', content: 'Bonjour.' },
          { role: 'system', content: 'Now answer in German.' },
          { role: 'user', content: 'And now?' },
        ],
      }),
    );
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(fake.requests[0]!.messages).toEqual([
      { role: 'system', content: 'Be brief.\n\nAnswer in French.\n\nNow answer in German.' },
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Bonjour.' },
      { role: 'user', content: 'And now?' },
    ]);
  });

  it("gives web-llm the candidate's context window as chat options; without one, web-llm's prebuilt 4,096", async () => {
    const long = request({ messages: [{ role: 'user', content: 't0 '.repeat(5000) }], maxTokens: 2 });
    const create = fakeCreate();
    const wide = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC', contextWindow: 8192 },
      { id: 'm', create },
    );
    expect(create.engines[0]!.contextWindow).toBe(8192);
    await expect(wide.generate(long)).resolves.toMatchObject({ choices: [{ finishReason: 'length' }] });
    const plain = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC' },
      { id: 'm', create },
    );
    expect(create.engines[1]!.contextWindow).toBe(4096);
    await expect(plain.generate(long)).rejects.toMatchObject({ kind: 'context_length_exceeded' });
  });

  it('maps a real context overflow from the engine', async () => {
    const { model, fake } = await loaded();
    fake.contextWindow = 3;
    await expect(model.generate(request())).rejects.toMatchObject({
      kind: 'context_length_exceeded',
      message: expect.stringMatching(/context window size: 3/),
    });
  });

  it.each([
    'ShaderF16SupportError',
    'WebGPUNotAvailableError',
    'DeviceLostError',
    'NetworkError',
    'MinValueError', // a model whose own config web-llm refuses (prefill_chunk_size): not the client's error
  ])('fails to load with a typed load_failed error on %s', async (name) => {
    const error = await WebLLMChatModel.load(candidate, {
      id: 'crimson-falcon-4',
      create: fakeCreate({ fail: webLLMError(name) }),
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'EngineError',
      kind: name === 'DeviceLostError' ? 'internal' : 'load_failed',
    });
  });
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
    for (const next of ['and then', 'go on please', undefined]) {
      const result = await model.generate(request({ messages }));
      usages.push(result.usage);
      if (next) messages = turn(messages, result, next);
    }
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true, true]);
    // Every token of the prompt in web-llm's KV cache, as if it had prefilled them all.
    expect(usages.map((u) => u.promptTokens)).toEqual(fake.prefills.map((p) => p.filled));
    // Cached: the prompt and reply before (less the reply's end token, never fed back).
    expect(usages.map((u) => u.cachedPromptTokens)).toEqual([
      undefined,
      usages[0]!.promptTokens + usages[0]!.completionTokens - 1,
      usages[1]!.promptTokens + usages[1]!.completionTokens - 1,
    ]);
  });

  it('counts no cached token when the tools change between turns: web-llm compares the system message they are in', async () => {
    const { model, fake } = await loaded();
    fake.reply = () => ['Hello ', 'there'];
    const tools = (name: string) => toolConstraint([{ name, parameters: { type: 'object' } }]);
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
    const first = await model.generate(request({ messages, constraint: tools('get_weather'), temperature: 0 }));
    const next = turn(messages, first, 'And now?');
    const same = await model.generate(request({ messages: next, constraint: tools('get_weather'), temperature: 0 }));
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true]);
    expect(same.usage.cachedPromptTokens).toBeGreaterThan(0);
    const changed = await model.generate(
      request({ messages: turn(next, same, 'Again?'), constraint: tools('get_time'), temperature: 0 }),
    );
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true, false]);
    expect(changed.usage.cachedPromptTokens).toBeUndefined();
    expect(changed.usage.promptTokens).toBe(fake.prefills[2]!.filled);
  });

  it('still counts the cached tokens after a request web-llm refused before its prefill (its cache is intact)', async () => {
    const { model, fake } = await loaded();
    const messages: ChatMessage[] = [{ role: 'user', content: 'Hello there' }];
    const first = await model.generate(request({ messages }));
    const next = turn(messages, first, 'more');
    // web-llm's generation-config check (a RangeError) runs before it touches its conversation.
    await expect(model.generate(request({ messages: next, presencePenalty: 3 }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'presence_penalty',
    });
    const retried = await model.generate(request({ messages: next }));
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true]);
    expect(retried.usage.promptTokens).toBe(fake.prefills[1]!.filled);
    expect(retried.usage.cachedPromptTokens).toBe(first.usage.promptTokens + first.usage.completionTokens - 1);
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

  it('sends a thinking model the conversation as web-llm holds it (its empty thinking block included)', async () => {
    const create = fakeCreate();
    const model = await WebLLMChatModel.load(
      { engine: 'web-llm', model: 'Qwen3-0.6B-q4f16_1-MLC' },
      { id: 'm', create },
    );
    const fake = create.engines[0]!;
    fake.reply = () => ['Paris', '.'];
    let messages: ChatMessage[] = [{ role: 'user', content: 'Capital of France?' }];
    for (const next of ['And of Italy?', 'Thanks']) {
      const result = await model.generate(request({ messages }));
      expect(result.choices[0]!.text).toBe('Paris.');
      messages = turn(messages, result, next);
    }
    await model.generate(request({ messages }));
    // The first prefill: the thinking block's tokens counted at load.
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, false, true, true]);
    // What the client sent back: 'Paris.'; what web-llm holds, and is sent: its reply as it wrote it.
    expect(fake.requests[2]!.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual([
      `${EMPTY_THINKING_BLOCK}Paris.`,
      `${EMPTY_THINKING_BLOCK}Paris.`,
    ]);
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

describe('FakeWebLLM, as web-llm 0.2.86 behaves', () => {
  const ask = (fake: FakeWebLLM, extra: Partial<ChatCompletionRequestStreaming> = {}) =>
    fake.chat.completions.create({
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      ...extra,
    });

  async function read(fake: FakeWebLLM, messages: { role: 'system' | 'user' | 'assistant'; content: string }[]) {
    let text = '';
    const stream = await fake.chat.completions.create({ messages, stream: true } as ChatCompletionRequestStreaming);
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    return text;
  }

  it("reuses its cache only for the exact conversation it holds, as web-llm's compareConversationObject does", async () => {
    const fake = await fakeEngine();
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

  it('fails on a negative seed as web-llm does: a plain Error from its random generator, on the first read', async () => {
    const stream = await ask(await fakeEngine(), { seed: -1 });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      name: 'Error',
      message: 'Random state is unexpectedly not strictly positive.',
    });
  });

  it("loads with web-llm's window: the model record's override (4,096, or 1,024 for a -1k build), unless chat options set one", async () => {
    expect((await fakeEngine('Qwen3-0.6B-q4f16_1-MLC')).contextWindow).toBe(4096);
    expect((await fakeEngine('Llama-3.1-8B-Instruct-q4f16_1-MLC-1k')).contextWindow).toBe(1024);
    const chatOpts = { context_window_size: 16384 };
    expect((await fakeEngine('Qwen3-0.6B-q4f16_1-MLC', {}, {}, chatOpts)).contextWindow).toBe(16384);
  });

  it('refuses a system message that is not first, with its SystemMessageOrderError', async () => {
    const messages = [
      { role: 'user' as const, content: 'hi' },
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'hi' },
    ];
    await expect(ask(await fakeEngine(), { messages })).rejects.toMatchObject({
      name: 'SystemMessageOrderError',
      message: 'System prompt should always be the first message in `messages`.',
    });
  });

  it('refuses top_p 0 on the first read of the stream, with its RangeError', async () => {
    const stream = await ask(await fakeEngine(), { top_p: 0 });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      name: 'RangeError',
      message: 'Make sure 0 < top_p <= 1.',
    });
  });

  it('ends an interrupted generation with finish_reason abort and its usage; the next one is whole', async () => {
    const fake = await fakeEngine();
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of await ask(fake)) {
      chunks.push(chunk);
      if (chunks.length === 2) await fake.interruptGenerate();
    }
    expect(chunks.map((c) => c.choices[0]?.finish_reason ?? (c.usage ? 'usage' : null))).toEqual([
      null,
      null,
      'abort',
      'usage',
    ]);
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: fake.prefills[0]!.tokens, completion_tokens: 2 });
    const next: ChatCompletionChunk[] = [];
    for await (const chunk of await ask(fake)) next.push(chunk);
    expect(next.filter((c) => c.choices[0]?.delta.content)).toHaveLength(10);
  });
});
