import { describe, expect, it } from 'vitest';
import { fakeCreate } from '../../../test/support/fake-web-llm.ts';
import { chatRequest } from '../../../test/support/chat-request.ts';
import { referenceValidator } from '../../../test/support/grammar-walk.ts';
import { toolConstraint } from '../../../test/support/tools.ts';
import { EngineError, type ChatEvent, type ChatRequest } from '../../engine-interface/index.ts';
import { WebLLMChatModel, webLLMMessages } from './web-llm-chat-model.ts';

/** Tool calling on web-llm: tools in the generic (Hermes) format in its messages, calls read from its stream. */
const candidate = { engine: 'web-llm', model: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC', downloadBytes: 1000 } as const;
const weather = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const request = (overrides: Partial<ChatRequest> = {}): ChatRequest =>
  chatRequest({
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    constraint: toolConstraint([weather]),
    ...overrides,
  });
const call = (city: string) => `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`;
/** A reply as web-llm streams it: a few characters a chunk. */
const tokens = (text: string) => text.match(/[\s\S]{1,3}/g)!;

async function loaded(reply: string) {
  const create = fakeCreate();
  const model = await WebLLMChatModel.load(candidate, { id: 'indigo-owl-4', create });
  const fake = create.engines[0]!;
  fake.reply = () => tokens(reply);
  return { model, fake };
}

describe('WebLLMChatModel with tools', () => {
  it('writes tools, calls and results into system, assistant and user turns: web-llm sees no tool role', () => {
    const messages = webLLMMessages(
      request({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [{ id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
          },
          { role: 'tool', content: '{"temperature": 18}', toolCallId: 'c1' },
        ],
      }),
    );
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(messages[0]!.content).toMatch(
      /^Be brief\.\n\n# Tools\n[\s\S]*<tools>\n\{"type": "function", "function": \{"name": "get_weather"/,
    );
    expect(messages[2]!.content).toBe(call('Paris'));
    expect(messages[3]!.content).toBe('<tool_response>\n{"temperature": 18}\n</tool_response>');
  });

  it('reads the calls in its stream: events as they come, the result with tool_calls', async () => {
    const { model } = await loaded(`${call('Paris')}\n${call('Oslo')}`);
    const events: ChatEvent[] = [];
    const result = await model.generate(request(), { onEvent: (e) => events.push(e) });
    expect(result.choices).toEqual([
      {
        text: '',
        toolCalls: [
          { name: 'get_weather', arguments: '{"city": "Paris"}' },
          { name: 'get_weather', arguments: '{"city": "Oslo"}' },
        ],
        finishReason: 'tool_calls',
      },
    ]);
    expect(events.filter((e) => e.type === 'tool_call')).toEqual([
      { type: 'tool_call', choice: 0, index: 0, name: 'get_weather' },
      { type: 'tool_call', choice: 0, index: 1, name: 'get_weather' },
    ]);
    expect(events.filter((e) => e.type === 'delta')).toEqual([]);
    expect(events.at(-1)).toEqual({ type: 'finish', choice: 0, reason: 'tool_calls' });
  });

  it('stops after one call without parallel calls, releasing web-llm at once', async () => {
    const { model, fake } = await loaded(`${call('Paris')}\n${call('Oslo')}`);
    const result = await model.generate(request({ constraint: toolConstraint([weather], { parallel: false }) }));
    expect(result.choices[0]!.toolCalls).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(result.choices[0]!.finishReason).toBe('tool_calls');
    expect(fake.locked).toBe(false);
  });

  it('leaves the reply as text with tool_choice "none": no tools shown, nothing read as a call', async () => {
    const { model, fake } = await loaded(call('Paris'));
    const result = await model.generate(request({ constraint: undefined }));
    expect(fake.requests[0]!.messages).toEqual([{ role: 'user', content: 'Weather in Paris?' }]);
    expect(result.choices[0]).toEqual({ text: call('Paris'), finishReason: 'stop' });
  });
});

describe('WebLLMChatModel tool guarantees (the fake runs the grammar with the real XGrammar)', () => {
  const booking = {
    name: 'book_table',
    parameters: {
      type: 'object',
      properties: {
        city: { enum: ['Paris', 'Oslo'] },
        people: { type: 'integer', minimum: 1, maximum: 12 },
        note: { type: 'string', maxLength: 6 },
      },
      required: ['city', 'people', 'note'],
      additionalProperties: false,
    },
  };
  const check = referenceValidator();

  it.each([
    ['required', 'required' as const],
    ['a named function', { name: 'book_table' }],
  ])('%s: a reply that would be text is a valid call', async (_label, toolChoice) => {
    const { model, fake } = await loaded('Hello there, how are you?');
    let valid = 0;
    for (const seed of [1, 2, 3, 4]) {
      const args: string[] = [];
      const onEvent = (e: ChatEvent) => e.type === 'tool_arguments' && args.push(e.text);
      const tools = [weather, booking];
      const result = await model
        .generate(request({ constraint: toolConstraint(tools, { choice: toolChoice }), seed, maxTokens: 300 }), {
          onEvent,
        })
        .catch((e: unknown) => e as EngineError);
      if (result instanceof EngineError) {
        // The fake's walk is over bytes, and web-llm's mask (unlike Lantern's on transformers.js) can end a string
        // inside a UTF-8 character: the check catches the U+FFFD it decodes to, and the reply is never a success.
        expect(result.kind, result.message).toBe('invalid_output');
        expect(args.join('')).toContain('\uFFFD');
        continue;
      }
      const [choice] = result.choices;
      expect(choice!.finishReason).toBe('tool_calls');
      expect(choice!.toolCalls!.length).toBeGreaterThan(0);
      for (const call of choice!.toolCalls!) {
        if (typeof toolChoice === 'object') expect(call.name).toBe('book_table');
        const tool = tools.find((t) => t.name === call.name)!;
        expect(check(tool.parameters, call.arguments), call.arguments).toBeUndefined();
      }
      valid += 1;
    }
    expect(valid).toBeGreaterThan(1);
    expect(fake.requests[0]!.response_format).toMatchObject({ type: 'structural_tag' });
    expect(fake.requests[0]).not.toHaveProperty('tools'); // not web-llm's Hermes-only function calling
  });

  it('auto: the scripted reply passes where the grammar allows it, and a started call is held to a valid one', async () => {
    // The script starts a call of an undeclared function: the grammar allows only declared names after the marker.
    const { model } = await loaded('<tool_call>\n{"name": "launch_rocket", "arguments": {}}\n</tool_call>');
    const result = await model.generate(request({ constraint: toolConstraint([weather]), seed: 4, maxTokens: 300 }));
    const [choice] = result.choices;
    expect(choice!.finishReason).toBe('tool_calls');
    for (const call of choice!.toolCalls!) {
      expect(call.name).toBe('get_weather');
      expect(check(weather.parameters, call.arguments)).toBeUndefined();
    }
  });

  it('refuses parameters it cannot enforce, naming them', async () => {
    const { model } = await loaded('Hi');
    const bad = {
      name: 'f',
      parameters: { type: 'object', properties: { a: { type: 'string', not: { pattern: '^x' } } } },
    };
    await expect(model.generate(request({ constraint: toolConstraint([weather, bad]) }))).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'tools[1].function.parameters',
    });
  });
});

describe('WebLLMChatModel tool loops and web-llm cache', () => {
  it('a tool loop continues the conversation web-llm holds: the call as it wrote it, then the result', async () => {
    const { model, fake } = await loaded(call('Paris'));
    const first = await model.generate(request());
    const [made] = first.choices[0]!.toolCalls!;
    fake.reply = () => tokens('It is sunny.');
    const messages: ChatRequest['messages'] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'call_abc', ...made! }] },
      { role: 'tool', content: '{"temperature": 18}', toolCallId: 'call_abc' },
    ];
    const second = await model.generate(request({ messages }));
    expect(second.choices[0]).toMatchObject({ text: 'It is sunny.', finishReason: 'stop' });
    expect(fake.prefills.map((p) => p.reused)).toEqual([false, true]);
    expect(second.usage.cachedPromptTokens).toBeGreaterThan(0);
    // A client that changed the call's arguments does not continue what web-llm holds.
    const other = await loaded(call('Paris'));
    await other.model.generate(request());
    other.fake.reply = () => tokens('It is sunny.');
    const changed = messages.map((m) =>
      m.toolCalls ? { ...m, toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: '{"city": "Oslo"}' }] } : m,
    );
    await other.model.generate(request({ messages: changed }));
    expect(other.fake.prefills.map((p) => p.reused)).toEqual([false, false]);
  });

  it('sends every choice of a request the same conversation, the held one as web-llm wrote it', async () => {
    const { model, fake } = await loaded(`Checking.  ${call('Paris')}`);
    const first = await model.generate(request());
    const [made] = first.choices[0]!.toolCalls!;
    fake.reply = () => tokens('It is sunny.');
    const messages: ChatRequest['messages'] = [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: first.choices[0]!.text, toolCalls: [{ id: 'call_abc', ...made! }] },
      { role: 'tool', content: '{"temperature": 18}', toolCallId: 'call_abc' },
    ];
    await model.generate(request({ messages, n: 2, temperature: 1 }));
    // Choice 1 runs first and answers what web-llm held; choice 0 runs after its reply replaced it.
    const [, choice1, choice0] = fake.requests.map((r) => r.messages);
    expect(choice0).toEqual(choice1);
  });
});
