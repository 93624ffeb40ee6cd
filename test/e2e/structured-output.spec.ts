import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/*
 * Structured output through the real service worker and engine worker, with the clients apps bundle, unmodified: the
 * openai SDK's parse() with zod, the AI SDK's generateObject/streamObject, LangChain's withStructuredOutput. The
 * constraint runs in the engine worker (XGrammar's WebAssembly), so the WebAssembly project is enough: the WebGPU one
 * runs the same worker code, ten times slower on SwiftShader.
 */
let key: string;

// Every browser's wasm path; the WebGPU project runs the same worker code, ten times slower on SwiftShader.
// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.skip(({ device }) => device === 'webgpu', 'engine-side feature: the wasm project covers it');

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

test(
  'openai SDK: parse() with zodResponseFormat returns message.parsed; logprobs stream',
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(async (k) => {
      const { z, zodResponseFormat } = window.harness.structured;
      const Weather = z.object({ city: z.enum(['Paris', 'Oslo']), celsius: z.number().int().min(-30).max(45) });
      const client = window.harness.client(k);
      const completion = await client.chat.completions.parse({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Weather as JSON.' }],
        temperature: 0,
        response_format: zodResponseFormat(Weather, 'weather'),
      });
      const stream = await client.chat.completions.create({
        model: 'crimson-falcon-4',
        messages: [{ role: 'user', content: 'Weather as JSON.' }],
        temperature: 0,
        logprobs: true,
        top_logprobs: 2,
        response_format: zodResponseFormat(Weather, 'weather'),
        stream: true,
      });
      let text = '';
      const tokens: string[] = [];
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        tokens.push(...(chunk.choices[0]?.logprobs?.content ?? []).map((t) => t.token));
      }
      const message = completion.choices[0]!.message;
      return { parsed: message.parsed, content: message.content, text, tokens: tokens.join('') };
    }, key);
    expect(result.parsed).toEqual(JSON.parse(result.content!));
    expect(result.text).toBe(result.content);
    expect(result.tokens).toBe(result.text);
  },
);

test(
  'AI SDK generateObject and streamObject; LangChain withStructuredOutput (jsonSchema)',
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(async (k) => {
      const { z, generateObject, streamObject, createOpenAICompatible, ChatOpenAI } = window.harness.structured;
      const Answer = z.object({ answer: z.enum(['yes', 'no']), confidence: z.number().min(0).max(1) });
      const baseURL = window.harness.lantern.baseURL;
      const provider = createOpenAICompatible({ name: 'lantern', baseURL, apiKey: k, supportsStructuredOutputs: true });
      const generated = await generateObject({
        model: provider('crimson-falcon-4'),
        schema: Answer,
        prompt: 'Sure?',
        temperature: 0,
      });
      const streamed = streamObject({
        model: provider('crimson-falcon-4'),
        schema: Answer,
        prompt: 'Sure?',
        temperature: 0,
      });
      let partials = 0;
      for await (const _ of streamed.partialObjectStream) partials++;
      const chat = new ChatOpenAI({
        model: 'crimson-falcon-4',
        temperature: 0,
        apiKey: k,
        configuration: { baseURL },
        maxRetries: 0,
      });
      const langchain = await chat
        .withStructuredOutput(Answer, { method: 'jsonSchema', name: 'answer' })
        .invoke('Sure?');
      return {
        generated: Answer.safeParse(generated.object).success,
        streamed: Answer.safeParse(await streamed.object).success,
        partials,
        langchain: Answer.safeParse(langchain).success,
      };
    }, key);
    expect(result).toEqual({ generated: true, streamed: true, partials: expect.any(Number), langchain: true });
    expect(result.partials).toBeGreaterThan(1);
  },
);

test(
  'a schema the engine cannot enforce is a 400 naming response_format',
  { tag: PORTABLE },
  async ({ tab, lanternBrowser }) => {
    test.skip(
      lanternBrowser !== 'chromium',
      "a refusal of the engine's schema compiler, the same in every browser: the wasm and llama.cpp projects cover it",
    );
    const error = await tab.evaluate(async (k) => {
      try {
        await window.harness.client(k).chat.completions.create({
          model: 'crimson-falcon-4',
          messages: [{ role: 'user', content: 'x' }],
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'x', schema: { type: 'string', not: { pattern: '^a' } } },
          },
        });
        return 'no error';
      } catch (e) {
        return `${window.harness.describeError(e)} ${(e as { param?: string }).param} ${(e as Error).message}`;
      }
    }, key);
    expect(error).toMatch(/^BadRequestError response_format .*`not` at #/);
  },
);
