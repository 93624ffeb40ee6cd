import { describe, expect, it } from 'vitest';
import { apiError as error } from '../../../test/support/api-error.ts';
import { DEFAULT_LIMITS } from '../options.ts';
import { chatParser } from './schema.ts';

const parse = chatParser({ ...DEFAULT_LIMITS, maxMessages: 3, maxChoices: 4 });
const chat = (body: Record<string, unknown>) =>
  parse({ model: 'm', messages: [{ role: 'user', content: 'hi' }], ...body });

describe('chat request parsing', () => {
  it('fills the defaults of the spec', () => {
    expect(chat({})).toEqual({
      model: 'm',
      stream: false,
      includeUsage: false,
      store: false,
      metadata: {},
      request: {
        messages: [{ role: 'user', content: 'hi' }],
        temperature: 1,
        topP: 1,
        presencePenalty: 0,
        frequencyPenalty: 0,
        stop: [],
        n: 1,
        defaultMaxTokens: 4096,
      },
    });
  });

  it('treats null as not given, as the OpenAI API does', () => {
    const nulls = { temperature: null, top_p: null, max_tokens: null, n: null, stop: null, seed: null, stream: null };
    expect(chat(nulls)).toEqual(chat({}));
  });

  it('converts to the engine request: developer role, text parts, stop string, newer max_completion_tokens', () => {
    const p = parse({
      model: 'm',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
          name: 'ann',
        },
      ],
      stop: 'END',
      max_tokens: 5,
      max_completion_tokens: 7,
      seed: -3,
      stream: true,
      stream_options: { include_usage: true },
      logit_bias: { '42': -100 },
      user: 'ignored',
      // Kept with the completion only with `store: true`.
      metadata: { kept: 'no' },
    });
    expect(p.stream).toBe(true);
    expect(p.includeUsage).toBe(true);
    expect(p.request).toMatchObject({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'a\nb' },
      ],
      stop: ['END'],
      maxTokens: 7,
      seed: -3,
      logitBias: { 42: -100 },
    });
  });

  it.each([
    [{ model: undefined }, 'model', /Missing required parameter: 'model'/],
    [{ model: 5 }, 'model', /Invalid type for 'model': expected a string, but got 5/],
    [{ messages: [] }, 'messages', /at least 1 item/],
    [{ messages: 'hi' }, 'messages', /expected an array, but got "hi"/],
    [{ messages: Array(4).fill({ role: 'user', content: 'x' }) }, 'messages', /at most 3 items/],
    [
      { messages: [{ role: 'robot', content: 'x' }] },
      'messages[0].role',
      /expected "system", "developer", "user", "assistant", "tool"/,
    ],
    [{ messages: [{ role: 'user' }] }, 'messages[0].content', /Missing required parameter/],
    [
      { messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
      'messages[0].content[0].image_url',
      /Missing required parameter/,
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f' } }] }] },
      'messages[0].content[0].type',
      /Supported content parts: `text`, and `image_url` in user messages/,
    ],
    [{ messages: [{ role: 'user', content: 7 }] }, 'messages[0].content', /expected a string or an array/],
    [{ temperature: 2.5 }, 'temperature', /<= 2, but got the number 2.5/],
    [{ temperature: -1 }, 'temperature', />= 0/],
    [{ temperature: '1' }, 'temperature', /expected a number, but got "1"/],
    [{ top_p: 1.5 }, 'top_p', /<= 1/],
    [{ max_tokens: 0 }, 'max_tokens', />= 1/],
    [{ max_tokens: 1.5 }, 'max_tokens', /expected an integer/],
    [{ max_tokens: 4097 }, 'max_tokens', /<= 4096/],
    [{ max_completion_tokens: 10_000 }, 'max_completion_tokens', /<= 4096/],
    [{ n: 5 }, 'n', /<= 4/],
    [{ n: 0 }, 'n', />= 1/],
    [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', /at most 4 items/],
    [{ stop: [''] }, 'stop[0]', /at least 1 character/],
    [{ stop: 3 }, 'stop', /expected a string or an array/],
    [{ stream: 'yes' }, 'stream', /expected a boolean/],
    [{ stream_options: { include_usage: true } }, 'stream_options', /only allowed when `stream` is true/],
    [{ seed: 1.5 }, 'seed', /expected an integer/],
    [{ presence_penalty: 3 }, 'presence_penalty', /<= 2/],
    [{ tools: [{ type: 'function' }] }, 'tools[0].function', /Missing required parameter/],
    [{ response_format: { type: 'xml' } }, 'response_format.type', /json_schema/],
    [
      { response_format: { type: 'json_schema', json_schema: { name: 'a b', schema: {} } } },
      'response_format.json_schema.name',
      /64 letters/,
    ],
    [
      { response_format: { type: 'json_schema', json_schema: { schema: {} } } },
      'response_format.json_schema.name',
      /Missing/,
    ],
    [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs', /<= 20/],
    [{ logit_bias: { x: 1 } }, 'logit_bias.x', /must be token ids/],
    [{ logit_bias: { 5: 101 } }, 'logit_bias.5', /<= 100/],
    [{ seed: 2 ** 65 }, 'seed', /expected an integer/],
    [{ top_logprobs: 21 }, 'top_logprobs', /<= 20/],
    [
      { chat_template_kwargs: { enable_thinking: 'yes' } },
      'chat_template_kwargs.enable_thinking',
      /expected a boolean/,
    ],
    [{ reasoning_effort: 'extreme' }, 'reasoning_effort', /expected "none", "minimal"/],
  ])('refuses %j naming %s', (body, param, message) => {
    const e = error(() => chat(body));
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
  });

  it.each([
    [
      { tool_choice: 'auto' },
      'tool_choice',
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    ],
    [
      { tool_choice: { type: 'function', function: { name: 'f' } }, tools: [] },
      'tool_choice',
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    ],
    [{ top_logprobs: 2 }, 'top_logprobs', "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled."],
    [
      { top_logprobs: 0, logprobs: false },
      'top_logprobs',
      "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.",
    ],
  ])('refuses %j as the OpenAI API does: a parameter that needs another', (body, param, message) => {
    const e = error(() => chat(body));
    expect({ status: e.status, param: e.param, message: e.message, code: e.code }).toEqual({
      status: 400,
      param,
      message,
      code: null,
    });
  });

  it('accepts any 64-bit integer seed, folding it to a safe integer deterministically', () => {
    const seedOf = (seed: number) => chat({ seed }).request.seed;
    expect(seedOf(-3)).toBe(-3);
    expect(seedOf(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    // 2 ** 64 is how JSON.parse reads the largest unsigned 64-bit integer, 18446744073709551615.
    const big = [2 ** 53, 2 ** 60, 2 ** 63, -(2 ** 63), 2 ** 64, JSON.parse('-9007199254740993') as number];
    for (const seed of big) {
      expect(Number.isSafeInteger(seedOf(seed))).toBe(true);
      expect(seedOf(seed)).toBe(seedOf(seed));
    }
    expect(new Set([2 ** 53, 2 ** 60, 2 ** 63, -(2 ** 62), 2 ** 53 + 2].map(seedOf)).size).toBe(5);
  });

  it("switches a thinking mode on or off as the request asks, and leaves it to the model's default otherwise", () => {
    expect(chat({}).request.thinking).toBeUndefined();
    expect(chat({ chat_template_kwargs: { enable_thinking: true } }).request.thinking).toBe(true);
    expect(chat({ chat_template_kwargs: { enable_thinking: false } }).request.thinking).toBe(false);
    expect(chat({ chat_template_kwargs: { other: 1 } }).request.thinking).toBeUndefined();
    expect(chat({ reasoning_effort: 'medium' }).request.thinking).toBe(true);
    expect(chat({ reasoning_effort: 'none' }).request.thinking).toBe(false);
    expect(chat({ reasoning_effort: 'minimal' }).request.thinking).toBe(false);
    expect(chat({ reasoning_effort: null }).request.thinking).toBeUndefined();
    // The template's own switch wins over the effort.
    const both = { reasoning_effort: 'high', chat_template_kwargs: { enable_thinking: false } };
    expect(chat(both).request.thinking).toBe(false);
  });

  it("takes an assistant message's thought back as reasoning_content or reasoning", () => {
    const messages = (m: Record<string, unknown>) => [
      { role: 'user', content: 'q' },
      { role: 'assistant', ...m },
      { role: 'user', content: 'r' },
    ];
    expect(chat({ messages: messages({ content: 'a', reasoning_content: 't' }) }).request.messages[1]).toEqual({
      role: 'assistant',
      content: 'a',
      reasoning: 't',
    });
    expect(chat({ messages: messages({ content: 'a', reasoning: 't2' }) }).request.messages[1]!.reasoning).toBe('t2');
  });

  it('accepts what clients commonly send and ignores it deliberately', () => {
    expect(() =>
      chat({
        user: 'u',
        store: false,
        tools: [],
        response_format: { type: 'text' },
        logprobs: false,
        parallel_tool_calls: true,
        tool_choice: null,
        top_logprobs: null,
      }),
    ).not.toThrow();
  });
});
