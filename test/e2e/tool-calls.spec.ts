import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/**
 * Tool calling through the real service worker and engine worker, with the clients apps bundle, unmodified: the
 * openai SDK (the raw chunk sequence, and `runTools` with zod), the AI SDK (`generateText`, `streamText`, multi-step)
 * and LangChain (`bindTools`, `withStructuredOutput`). The bundled tiny chat model decides to call, is given the
 * result, and answers with it. The device does not change how tools work: the wasm path only.
 */
let key: string;

// Every browser's wasm path; the WebGPU project runs the same worker code, ten times slower on SwiftShader.
// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.skip(({ device }) => device === 'webgpu', 'tool calling is tested on the wasm path only');

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};

test('a streamed call arrives as OpenAI streams it, field by field', { tag: PORTABLE }, async ({ tab }) => {
  const chunks = await tab.evaluate(
    async ({ k, parameters }) => {
      const stream = await window.harness.client(k).chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters } }],
        temperature: 0,
        stream: true,
      });
      const out = [];
      for await (const chunk of stream) out.push(chunk);
      return out;
    },
    { k: key, parameters: weatherParameters },
  );
  const choices = chunks.map((c) => c.choices[0]!);
  expect(choices[0]).toEqual({
    index: 0,
    delta: {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          index: 0,
          id: expect.stringMatching(/^call_/),
          type: 'function',
          function: { name: 'get_weather', arguments: '' },
        },
      ],
    },
    logprobs: null,
    finish_reason: null,
  });
  const fragments = choices.slice(1, -1);
  for (const c of fragments) expect(Object.keys(c.delta)).toEqual(['tool_calls']);
  const args = fragments.map((c) => c.delta.tool_calls![0]!.function!.arguments).join('');
  expect(JSON.parse(args)).toEqual({ city: 'Paris' });
  expect(choices.at(-1)).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
  expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
});

test(
  "the openai SDK's runTools with zod-defined functions; the AI SDK's generateText and streamText, multi-step",
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(async (k) => {
      const { z, zodFunction, generateText, streamText, tool, stepCountIs } = window.harness.tools;
      const { createOpenAICompatible } = window.harness.structured;
      const input = z.object({ city: z.string() });
      const calls: unknown[] = [];
      const runner = window.harness.client(k).chat.completions.runTools({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'What is the weather in Berlin?' }],
        temperature: 0,
        tools: [
          zodFunction({
            name: 'get_weather',
            parameters: input,
            function: (args) => (calls.push(args), { temperature: 12, condition: 'rainy' }),
          }),
        ],
      });
      const runTools = await runner.finalContent();
      const provider = createOpenAICompatible({ name: 'lantern', baseURL: window.harness.lantern.baseURL, apiKey: k });
      const weather = tool({
        description: 'Get the current weather in a city.',
        inputSchema: input,
        execute: async (args) => (calls.push(args), { temperature: 22, condition: 'sunny' }),
      });
      const generated = await generateText({
        model: provider('crimson-falcon-4'),
        prompt: 'What is the weather in Rome?',
        temperature: 0,
        tools: { get_weather: weather },
        stopWhen: stepCountIs(3),
      });
      const streamed = streamText({
        model: provider('crimson-falcon-4'),
        prompt: 'What is the weather in Madrid?',
        temperature: 0,
        tools: { get_weather: weather },
        stopWhen: stepCountIs(3),
      });
      const parts: string[] = [];
      for await (const part of streamed.fullStream) parts.push(part.type);
      return {
        calls,
        runTools,
        generated: generated.text,
        steps: generated.steps.length,
        parts,
        streamed: await streamed.text,
      };
    }, key);
    expect(result.calls).toEqual([{ city: 'Berlin' }, { city: 'Rome' }, { city: 'Madrid' }]);
    // Each answer is the model's reading of its result: tiny-chat copies the temperature and the city; the condition
    // word sits on a thin margin (the retrained model reads "sunny" as "snowy").
    expect(result.runTools).toMatch(/^It is \w+ and 12 degrees in Berlin\.$/);
    expect(result.generated).toMatch(/^It is \w+ and 22 degrees in Rome\.$/);
    expect(result.steps).toBe(2);
    expect(result.parts).toEqual(
      expect.arrayContaining(['tool-input-delta', 'tool-call', 'tool-result', 'text-delta']),
    );
    expect(result.streamed).toMatch(/^It is \w+ and 22 degrees in Madrid\.$/);
  },
);

test("LangChain's bindTools and withStructuredOutput through function calling", { tag: PORTABLE }, async ({ tab }) => {
  const result = await tab.evaluate(async (k) => {
    const { z, ChatOpenAI, langchainTool, HumanMessage } = window.harness.tools;
    const chat = new ChatOpenAI({
      model: 'crimson-falcon-4',
      temperature: 0,
      apiKey: k,
      configuration: { baseURL: window.harness.lantern.baseURL, dangerouslyAllowBrowser: true },
    });
    const input = z.object({ city: z.string() });
    const getTime = langchainTool(async () => JSON.stringify({ time: '21:15' }), {
      name: 'get_time',
      description: 'Get the local time in a city.',
      schema: input,
    });
    const bound = chat.bindTools([getTime]);
    const messages = [new HumanMessage('What time is it in Oslo?')];
    const call = await bound.invoke(messages);
    const toolMessages = await Promise.all((call.tool_calls ?? []).map((c) => getTime.invoke(c)));
    const answer = await bound.invoke([...messages, call, ...toolMessages]);
    const structured = await chat
      .withStructuredOutput(input, { method: 'functionCalling', name: 'get_weather' })
      .invoke('What is the weather in Lisbon?');
    return { calls: call.tool_calls?.map((c) => [c.name, c.args]), answer: answer.content, structured };
  }, key);
  expect(result.calls).toEqual([['get_time', { city: 'Oslo' }]]);
  expect(result.answer).toBe('It is 21:15 in Oslo.');
  expect(result.structured).toEqual({ city: 'Lisbon' });
});
