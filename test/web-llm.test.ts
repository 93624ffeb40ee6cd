import * as Comlink from 'comlink';
import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebLLMChatModel } from '../src/engines/web-llm/web-llm-chat-model.ts';
import { CPU_ONLY, createLocalEngine, createModelRouter, type ModelProfile } from '../src/index.ts';
import { registerEngineErrorTransfer } from '../src/worker/protocol.ts';
import { createWorkerApi } from '../src/worker/worker-api.ts';
import { EngineWorkerClient } from '../sw/engine-worker-client.ts';
import { fakeCreate, webLLMError } from './support/fake-web-llm.ts';
import { sdkRefusal } from './support/api-error.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/**
 * web-llm as a browser app meets it, with the fake web-llm in place of the real one (which needs a GPU and the
 * network), put together as a browser puts it: the openai SDK → the /v1 handler → the model router → the service
 * worker's client of the engine worker → Comlink over a real MessageChannel → the engine worker's API → the local
 * engine → the web-llm adapter. What the worker would do about a failure is watched through its
 * `fatal` hook: that is where the host is asked to replace it.
 */
registerEngineErrorTransfer();

const profile: ModelProfile = {
  'crimson-falcon-4': {
    task: 'chat',
    created: 0,
    candidates: [{ engine: 'web-llm', model: 'SmolLM2-360M-Instruct-q4f32_1-MLC' }],
  },
  'indigo-owl-4': { task: 'chat', created: 0, candidates: [{ engine: 'web-llm', model: 'Qwen3-0.6B-q4f32_1-MLC' }] },
};
const hello = [{ role: 'user' as const, content: 'Hello there' }];

let create: ReturnType<typeof fakeCreate>;
let fatal: string[];
let client: SdkClient['client'];
const ports: MessagePort[] = [];

beforeEach(async () => {
  create = fakeCreate();
  fatal = [];
  const local = createLocalEngine({
    loaders: {
      chat: async (candidate, context) => {
        if (candidate.engine !== 'web-llm') throw new Error('web-llm candidates only here');
        return WebLLMChatModel.load(candidate, { ...context, create });
      },
      embeddings: async () => {
        throw new Error('no embeddings here');
      },
      transcription: async () => {
        throw new Error('no speech here');
      },
      speech: async () => {
        throw new Error('no speech here');
      },
    },
  });
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  Comlink.expose(
    createWorkerApi(() => local, { report: () => {}, fatal: (reason) => fatal.push(reason) }),
    port1,
  );
  const worker = new EngineWorkerClient({ requestPort: () => {} });
  worker.connect(port2, 'host#1', { profile, policy: 'local-first', device: { ...CPU_ONLY, webgpu: true } });
  const engine = createModelRouter({ local: worker, routing: (signal) => worker.routing(signal) });
  ({ client } = await sdkClient({ engine, handler: { onServerError: () => {} } }));
});
afterEach(() => ports.splice(0).forEach((port) => port.close()));

/** Lets the worker's deferred call for a replacement (a macrotask after the answer) happen, if it is coming. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('web-llm through /v1', () => {
  it('answers top_p 0 (valid in the OpenAI API) with the most likely tokens, and the worker stays', async () => {
    const reply = await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, top_p: 0 });
    expect(reply.choices[0]!.message.content).toBe('t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 ');
    expect(create.engines[0]!.requests[0]).toMatchObject({ temperature: 0, top_p: 1 });
    await settle();
    expect(fatal).toEqual([]);
  });

  it("names where a loaded candidate runs in /v1/models (web-llm: WebGPU), as the worker's port reported it", async () => {
    const before = await client.models.retrieve('crimson-falcon-4');
    expect(before).not.toHaveProperty('runs_on'); // nothing loaded yet
    await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, max_tokens: 1 });
    const after = await client.models.retrieve('crimson-falcon-4');
    expect(after).toMatchObject({ runs_on: { 'web-llm:SmolLM2-360M-Instruct-q4f32_1-MLC': { device: 'webgpu' } } });
    // Only what loaded: the other ID's candidate has not.
    expect(await client.models.retrieve('indigo-owl-4')).not.toHaveProperty('runs_on');
  });

  it('answers a value web-llm refuses with a 400 naming it; the worker stays and serves the next request', async () => {
    await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, max_tokens: 1 });
    create.engines[0]!.failNext = webLLMError('MinValueError', 'Make sure `max_tokens` > 0.');
    const error = await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello }).catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      param: 'max_tokens',
      message: "400 Invalid value for 'max_tokens': Make sure `max_tokens` > 0.",
    });
    await settle();
    expect(fatal).toEqual([]);
    const next = await client.chat.completions.create({ model: 'crimson-falcon-4', messages: hello, max_tokens: 2 });
    expect(next.choices[0]!.message.content).toBe('t0 t1 ');
    expect(create.engines).toHaveLength(1); // the model was not loaded again
  });

  it('answers Responses instructions beside a system item: web-llm gets one system message, first', async () => {
    const response = await client.responses.create({
      model: 'crimson-falcon-4',
      instructions: 'Be brief.',
      input: [
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'Hello there' },
      ],
    });
    expect(response.output_text).toBe('t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 ');
    expect(create.engines[0]!.requests[0]!.messages[0]).toEqual({
      role: 'system',
      content: 'Be brief.\n\nAnswer in French.',
    });
    await settle();
    expect(fatal).toEqual([]);
  });

  it('answers a conversation that ends on an assistant turn, or holds only a system message, as the CPU path does', async () => {
    // web-llm refuses both (its MessageOrderError: the last message must be a user's or a tool's); OpenAI answers both.
    const continued = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [...hello, { role: 'assistant', content: 'Hi! Ask me anything.' }],
    });
    expect(continued.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { content: 't0 t1 t2 t3 t4 t5 t6 t7 t8 t9 ' },
    });
    const stream = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'system', content: 'Greet the user.' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('t0 t1 t2 t3 t4 t5 t6 t7 t8 t9 ');
    await settle();
    expect(fatal).toEqual([]);
  });

  it('counts the prompt when a stop sequence ends the stream', async () => {
    const stream = client.chat.completions.stream({
      model: 'crimson-falcon-4',
      messages: hello,
      stop: ['t3'],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('t0 t1 t2 ');
    const prompt = create.engines[0]!.prefills[0]!.tokens;
    expect(final.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 4, total_tokens: prompt + 4 });
  });

  it("switches a Qwen3's thinking off unless asked, and never shows web-llm's empty thinking block", async () => {
    const off = await client.chat.completions.create({ model: 'indigo-owl-4', messages: hello, max_tokens: 2 });
    expect(off.choices[0]!.message.content).toBe('t0 t1 ');
    expect(create.engines[0]!.requests[0]!.extra_body).toEqual({ enable_thinking: false });
    await client.chat.completions.create({
      model: 'indigo-owl-4',
      messages: hello,
      max_tokens: 2,
      // @ts-expect-error -- vLLM's field: the openai SDK passes it through as it is
      chat_template_kwargs: { enable_thinking: true },
    });
    expect(create.engines[0]!.requests[1]).not.toHaveProperty('extra_body');
  });

  it("returns a Qwen3's thought as reasoning_content when asked to reason, and counts its tokens", async () => {
    const ask = () =>
      client.chat.completions.create({ model: 'indigo-owl-4', messages: hello, reasoning_effort: 'high' });
    await ask(); // loads the model
    create.engines[0]!.reply = () => ['<think>', '\nGreet back.\n', '</think>', '\n\n', 'Hello!'];
    const reply = await ask();
    const message = reply.choices[0]!.message as (typeof reply.choices)[0]['message'] & { reasoning_content?: string };
    expect(message.content).toBe('Hello!');
    expect(message.reasoning_content).toBe('Greet back.');
    expect(reply.usage!.completion_tokens_details?.reasoning_tokens).toBeGreaterThan(0);
    expect(create.engines[0]!.requests.at(-1)).not.toHaveProperty('extra_body');
  });

  it('refuses a logit_bias id past the vocabulary before web-llm indexes its GPU logits with it', async () => {
    await client.chat.completions.create({ model: 'indigo-owl-4', messages: hello, max_tokens: 1 }); // loads it
    const sent = create.engines[0]!.requests.length;
    const refusal = await sdkRefusal(
      client.chat.completions.create({ model: 'indigo-owl-4', messages: hello, logit_bias: { 4294967296: 100 } }),
    );
    expect(refusal).toMatchObject({ status: 400, param: 'logit_bias' });
    expect(refusal.message).toMatch(/Invalid key in 'logit_bias': 4294967296\. This model's token ids run from 0 to/);
    expect(create.engines[0]!.requests.length).toBe(sent);
  });

  it("continues a raw prompt with web-llm's text completion (no template, no thinking switch), logprobs and stop", async () => {
    const answer = await client.completions.create({
      model: 'indigo-owl-4',
      prompt: 'Once upon a time',
      max_tokens: 5,
      logprobs: 1,
      seed: 3,
      stop: 't4',
    });
    expect(answer.choices[0]).toMatchObject({ index: 0, text: 't03 t13 t23 t33 ', finish_reason: 'stop' });
    expect(answer.choices[0]!.logprobs).toMatchObject({
      tokens: ['t03 ', 't13 ', 't23 ', 't33 '],
      text_offset: [0, 4, 8, 12],
    });
    const prompt = create.engines[0]!.prefills.at(-1)!.tokens;
    expect(answer.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 });
    // The first, at load: web-llm's count of its thinking block's tokens (see WebLLMChatModel.load).
    const [probe, request] = create.engines[0]!.completionRequests;
    expect(probe).toMatchObject({ prompt: '<think>\n\n</think>\n\n', max_tokens: 1 });
    expect(request).toMatchObject({ prompt: 'Once upon a time', stream: true, seed: 3 });
    // Log probabilities are Lantern's own, read inside web-llm (LogprobRecorder): web-llm is not asked for its own.
    expect(request).not.toHaveProperty('logprobs');
    expect(request).not.toHaveProperty('messages');
    expect(request).not.toHaveProperty('extra_body');
    expect(create.engines[0]!.requests).toEqual([]);
  });
});
