import { describe, expect, it } from 'vitest';
import { apiError as error } from '../../test/support/api-error.ts';
import { chatParser } from './chat-completions/schema.ts';
import { DEFAULT_LIMITS } from './options.ts';

const parse = chatParser(DEFAULT_LIMITS);
const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: true,
  },
};
const ask = { role: 'user', content: 'What is the weather in Paris?' };
const called = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
};
const answered = { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":18}' };
const chat = (body: Record<string, unknown>) => parse({ model: 'm', messages: [ask], ...body }).request;

describe('tool calling requests', () => {
  it('converts tools, tool_choice and parallel_tool_calls to the engine request', () => {
    expect(chat({ tools: [weather] }).constraint).toMatchObject({
      type: 'tools',
      tools: [
        {
          name: 'get_weather',
          description: 'Get the weather.',
          parameters: weather.function.parameters,
          strict: true,
          param: 'tools[0].function.parameters',
        },
      ],
      choice: 'auto',
      parallel: true,
    });
    const bare = { type: 'function', function: { name: 'now' } };
    expect(
      chat({ tools: [bare], tool_choice: { type: 'function', function: { name: 'now' } }, parallel_tool_calls: false })
        .constraint,
    ).toMatchObject({
      tools: [{ name: 'now', parameters: { type: 'object', properties: {} } }],
      choice: { name: 'now' },
      parallel: false,
    });
    for (const choice of ['auto', 'required'] as const) {
      expect(chat({ tools: [weather], tool_choice: choice }).constraint).toMatchObject({ choice });
    }
    // With `tool_choice: "none"` the model is shown no tools: there is nothing to constrain.
    expect(chat({ tools: [weather], tool_choice: 'none' })).not.toHaveProperty('constraint');
  });

  it('holds a reply without calls to the response format, in one constraint', () => {
    const format = { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } };
    expect(chat({ tools: [weather], response_format: format }).constraint).toMatchObject({
      type: 'tools',
      text: { type: 'json', schema: { type: 'object' }, param: 'response_format' },
    });
    expect(chat({ tools: [weather], tool_choice: 'none', response_format: format }).constraint).toEqual({
      type: 'json',
      schema: { type: 'object' },
      param: 'response_format',
    });
  });

  it('treats an empty tools list as no tools', () => {
    expect(chat({ tools: [] })).not.toHaveProperty('constraint');
    expect(chat({ tools: null, functions: [] })).not.toHaveProperty('constraint');
  });

  it('converts a tool loop: assistant calls with null content, then tool results', () => {
    const messages = [ask, called, answered, { role: 'assistant', content: 'It is 18 degrees.' }, ask];
    expect(chat({ tools: [weather], messages }).messages).toEqual([
      { role: 'user', content: ask.content },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
      },
      { role: 'tool', content: '{"temperature":18}', toolCallId: 'call_1' },
      { role: 'assistant', content: 'It is 18 degrees.' },
      { role: 'user', content: ask.content },
    ]);
  });

  it.each([
    [{ tool_choice: 'auto' }, 'tool_choice', /only allowed when 'tools' are specified/],
    [{ tools: [], tool_choice: 'none' }, 'tool_choice', /only allowed when 'tools' are specified/],
    [{ tools: [weather], tool_choice: 'always' }, 'tool_choice', /expected "none", "auto", "required" or/],
    [{ tools: [weather], tool_choice: { type: 'function' } }, 'tool_choice.function', /Missing required/],
    [
      { tools: [weather], tool_choice: { type: 'function', function: { name: 'get_time' } } },
      'tool_choice',
      /"get_time" is not one of 'tools'/,
    ],
    [{ tools: [{ type: 'function', function: { name: 'get weather' } }] }, 'tools[0].function.name', /64 letters/],
    [{ tools: [{ type: 'retrieval' }] }, 'tools[0].type', /expected "function"/],
    [{ tools: [weather, weather] }, 'tools[1].function.name', /Duplicate function name/],
    [
      { tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] },
      'tools[0].function.parameters',
      /object/,
    ],
    [{ parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /expected a boolean/],
    [{ functions: [{ name: 'f' }] }, 'functions', /deprecated function-calling parameters: declare .* `tools`/],
    [{ function_call: 'auto' }, 'function_call', /deprecated function-calling parameters/],
    [{ messages: [ask, answered] }, 'messages[1]', /must be a response to a preceding message with 'tool_calls'/],
    [{ messages: [ask, called, ask] }, 'messages[2]', /did not have response messages: call_1/],
    [{ messages: [ask, called] }, 'messages[1]', /did not have response messages: call_1/],
    [{ messages: [ask, called, answered, answered] }, 'messages[3]', /preceding message with 'tool_calls'/],
    [{ messages: [ask, { role: 'tool', content: 'x' }] }, 'messages[1].tool_call_id', /Missing required parameter/],
    [{ messages: [ask, { role: 'assistant', content: null }] }, 'messages[1].content', /Missing required parameter/],
    [
      { messages: [ask, { ...called, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] }] },
      'messages[1].tool_calls[0].function.arguments',
      /Missing required parameter/,
    ],
  ])('refuses %j naming %s', (body, param, message) => {
    const e = error(() => chat(body));
    expect(e.status).toBe(400);
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
  });
});
