import { readFileSync } from 'node:fs';
import { AutoTokenizer, type PreTrainedTokenizer } from '@huggingface/transformers';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatRequest } from '../../../test/support/chat-request.ts';
import {
  EMPTY_THINKING_BLOCK,
  fakeCreate,
  loadedWebLLM as loaded,
  type FakeWebLLM,
} from '../../../test/support/fake-web-llm.ts';
import { MemoryCacheStorage } from '../../../test/support/memory-caches.ts';
import { BUNDLED_MODELS } from '../../../test/support/lantern.ts';
import type { ChatMessage, ChatRequest } from '../../engine-interface/index.ts';
import { endingWebLLMTakes, readAssistantRole, withoutPastThoughts } from './web-llm-turns.ts';

const request = (messages: ChatMessage[], overrides: Partial<ChatRequest> = {}) =>
  chatRequest({ messages, ...overrides });

/** The text web-llm prefilled for its last generation, its special tokens spelled out. */
const lastPrompt = (fake: FakeWebLLM) => fake.tokenizer.decode(fake.prefills.at(-1)!.ids);

let tokenizer: PreTrainedTokenizer;
beforeAll(async () => {
  tokenizer = await AutoTokenizer.from_pretrained(`${BUNDLED_MODELS}/tiny-chat`);
});

/** The prompt the CPU engine (transformers.js) renders for `messages` with SmolLM2's own template. */
const cpuPrompt = (messages: ChatMessage[]) =>
  tokenizer.apply_chat_template(messages, {
    chat_template: readFileSync('test/fixtures/chat-templates/smollm2-instruct.jinja', 'utf8'),
    tokenize: false,
    add_generation_prompt: true,
  }) as string;

describe('conversations web-llm refuses, answered as the CPU engines answer them', () => {
  const SMOLLM2 = 'SmolLM2-360M-Instruct-q4f32_1-MLC';

  it('answers one that ends on an assistant turn: that turn closed, then a new reply, the prompt the CPU engine renders', async () => {
    const { model, fake } = await loaded(SMOLLM2);
    const messages: ChatMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi! What would you like to know?' },
    ];
    const result = await model.generate(request(messages));
    expect(result.choices[0]).toMatchObject({ finishReason: 'stop', text: 't0 t1 t2 t3 t4 t5 t6 t7 t8 t9 ' });
    // web-llm is sent the turn as a user's under the assistant's role, which its template writes as an assistant turn.
    expect(fake.requests[0]!.messages.at(-1)).toEqual({
      role: 'user',
      name: '<|im_start|>assistant',
      content: 'Hi! What would you like to know?',
    });
    expect(lastPrompt(fake)).toBe(cpuPrompt(messages));
    expect(lastPrompt(fake)).toMatch(
      /<\|im_start\|>assistant\nHi! What would you like to know\?<\|im_end\|>\n<\|im_start\|>assistant\n$/,
    );
  });

  it("writes the last assistant turn in Llama 3's template as its own assistant turn, then a new header", async () => {
    const { model, fake } = await loaded('Llama-3.2-1B-Instruct-q4f32_1-MLC');
    await model.generate(
      request([
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi.' },
      ]),
    );
    expect(lastPrompt(fake)).toMatch(
      /<\|start_header_id\|>user<\|end_header_id\|>\n\nHello<\|eot_id\|><\|start_header_id\|>assistant<\|end_header_id\|>\n\nHi\.<\|eot_id\|><\|start_header_id\|>assistant<\|end_header_id\|>\n\n$/,
    );
  });

  it('answers one of system messages only, after an empty user turn (web-llm writes a system message only before a turn)', async () => {
    const { model, fake } = await loaded(SMOLLM2);
    const result = await model.generate(request([{ role: 'system', content: 'Say hello.' }]));
    expect(result.choices[0]!.finishReason).toBe('stop');
    expect(lastPrompt(fake)).toBe(
      '<|im_start|>system\nSay hello.<|im_end|>\n<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it("continues the held conversation when the client adds an assistant turn to web-llm's last reply", async () => {
    const { model, fake } = await loaded(SMOLLM2);
    const first: ChatMessage[] = [{ role: 'user', content: 'Hello' }];
    const reply = await model.generate(request(first));
    const next: ChatMessage[] = [
      ...first,
      { role: 'assistant', content: reply.choices[0]!.text },
      { role: 'assistant', content: 'And one more thing:' },
    ];
    const second = await model.generate(request(next));
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true]);
    expect(second.usage.cachedPromptTokens).toBe(reply.usage.promptTokens + reply.usage.completionTokens - 1);
  });
});

describe("a thinking model's past thoughts", () => {
  const QWEN3 = 'Qwen3-0.6B-q4f16_1-MLC';
  const thought = ['<think>', '\nThe capital ', 'is Paris.\n', '</think>', '\n\n', 'Paris', '.'];
  /** Whether each generation reused web-llm's cache (after its load's text completion, which counts a block's tokens). */
  const reused = (fake: FakeWebLLM) => fake.prefills.slice(1).map((p) => p.reused);

  it('are not sent back to web-llm (mlc-llm#3482): each past reply goes with an empty thinking block and its answer', async () => {
    const { model, fake } = await loaded(QWEN3);
    fake.reply = () => thought;
    const first: ChatMessage[] = [{ role: 'user', content: 'Capital of France?' }];
    const one = await model.generate(request(first, { thinking: true }));
    expect(one.choices[0]).toMatchObject({ text: 'Paris.', reasoning: 'The capital is Paris.' });
    // The client sends the reply back as it got it, its thought too (as `reasoning_content`).
    const second = [
      ...first,
      { role: 'assistant' as const, content: 'Paris.', reasoning: 'The capital is Paris.' },
      { role: 'user' as const, content: 'And of Italy?' },
    ];
    fake.reply = () => ['Rome', '.'];
    const two = await model.generate(request(second));
    const sentReplies = (i: number) =>
      fake.requests[i]!.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    expect(sentReplies(1)).toEqual([`${EMPTY_THINKING_BLOCK}Paris.`]);
    expect(lastPrompt(fake)).not.toContain('The capital');
    // web-llm's cache holds the thought: it starts afresh, and no token is said to be cached.
    expect(reused(fake)).toEqual([false, false]);
    expect(two.usage.cachedPromptTokens).toBeUndefined();
    // A reply without a thought is sent as web-llm holds it: the next turn reuses its cache, the first reply sent alike.
    const third = [
      ...second,
      { role: 'assistant' as const, content: 'Rome.' },
      { role: 'user' as const, content: 'Thanks' },
    ];
    const three = await model.generate(request(third));
    expect(sentReplies(2)).toEqual([`${EMPTY_THINKING_BLOCK}Paris.`, `${EMPTY_THINKING_BLOCK}Rome.`]);
    expect(reused(fake)).toEqual([false, false, true]);
    expect(three.usage.cachedPromptTokens).toBe(two.usage.promptTokens + two.usage.completionTokens - 1);
  });

  it('are kept after the last user turn (a tool loop in progress), as in Qwen3 template, and then reuse the cache', async () => {
    const { model, fake } = await loaded(QWEN3);
    fake.reply = () => ['<think>', '\nLook it up.\n', '</think>', '\n\n', 'I will look.'];
    const first: ChatMessage[] = [{ role: 'user', content: 'Weather?' }];
    const one = await model.generate(request(first, { thinking: true }));
    const next = [
      ...first,
      { role: 'assistant' as const, content: one.choices[0]!.text, reasoning: one.choices[0]!.reasoning! },
      { role: 'tool' as const, content: '{"temperature": 18}', toolCallId: 'call_1' },
    ];
    await model.generate(request(next, { thinking: true }));
    expect(fake.requests[1]!.messages[1]!.content).toBe('<think>\nLook it up.\n</think>\n\nI will look.');
    expect(reused(fake)).toEqual([false, true]);
  });
});

describe('withoutPastThoughts', () => {
  it("keeps what follows a past reply's last </think>, after an empty block, as Qwen3's template splits it", () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: '<think>\nx\n</think>\n\nA', reasoning: 'x' },
      { role: 'assistant', content: 'no block' },
      { role: 'user', content: 'b' },
      { role: 'assistant', content: '<think>\ny\n</think>\n\nB' },
    ];
    expect(withoutPastThoughts(messages)).toEqual([
      messages[0],
      { role: 'assistant', content: `${EMPTY_THINKING_BLOCK}A` },
      messages[2],
      messages[3],
      messages[4],
    ]);
    // An empty block is what it is replaced by: the same text again.
    const empty: ChatMessage = { role: 'assistant', content: `${EMPTY_THINKING_BLOCK}A` };
    expect(withoutPastThoughts([empty, { role: 'user', content: 'b' }])[0]).toEqual(empty);
  });
});

describe('endingWebLLMTakes', () => {
  it('leaves a conversation that ends on a user or tool turn as it is', () => {
    const messages = [
      { role: 'system', content: 's' },
      { role: 'tool', content: 't' },
    ];
    expect(endingWebLLMTakes(messages, '<|im_start|>assistant')).toEqual(messages);
  });

  it("adds an empty user turn after a last assistant turn when the template's assistant role is unknown", () => {
    expect(endingWebLLMTakes([{ role: 'assistant', content: 'A' }], undefined)).toEqual([
      { role: 'assistant', content: 'A' },
      { role: 'user', content: '' },
    ]);
  });
});

describe('readAssistantRole', () => {
  it("reads the template's assistant role from the chat config web-llm cached, and nothing where none is", async () => {
    const create = fakeCreate();
    await create('Llama-3.2-1B-Instruct-q4f32_1-MLC', {});
    expect(await readAssistantRole('Llama-3.2-1B-Instruct-q4f32_1-MLC', create.caches)).toBe(
      '<|start_header_id|>assistant',
    );
    expect(await readAssistantRole('Llama-3.2-1B-Instruct-q4f32_1-MLC', new MemoryCacheStorage())).toBeUndefined();
  });
});
