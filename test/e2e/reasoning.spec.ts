import { expect, PORTABLE, test } from './browsers.ts';
import { issueKey, openHarness } from './harness-page.ts';

/*
 * Reasoning through the real service worker and engine worker, with the clients apps bundle, unmodified: the openai
 * SDK (chat, streamed, and the Responses API), the AI SDK's OpenAI-compatible provider (reasoning parts) and
 * LangChain's ChatOpenAI (`additional_kwargs.reasoning_content`). The bundled `amber-phoenix-4` is tiny-think, which
 * thinks by default (scripts/fixtures/think_corpus.py). The thought must arrive apart from the answer.
 */
const QUESTION = 'What is 3 plus 4?';
const THOUGHT = 'The user asks for 3 plus 4. 3 plus 4 is 7.';
const ANSWER = '3 plus 4 is 7.';
let key: string;

// Nothing here depends on a fresh profile: these tests share one (its service worker, stored app and models).
test.use({ profileScope: 'shared' });

test.skip(
  ({ device }) => device === 'webgpu',
  'the same service worker code on both paths: the wasm project covers it (test/e2e/model-selection runs tiny-think on WebGPU)',
);

test.beforeEach(async ({ tab }) => {
  await openHarness(tab);
  key = await issueKey(tab);
});

test(
  'openai SDK: reasoning_content apart from content, streamed and not; a reasoning item in the Responses API',
  { tag: PORTABLE },
  async ({ tab }) => {
    const result = await tab.evaluate(
      async ({ k, question }) => {
        const client = window.harness.client(k);
        const model = 'amber-phoenix-4';
        const messages = [{ role: 'user' as const, content: question }];
        const reply = await client.chat.completions.create({ model, messages, temperature: 0 });
        const stream = await client.chat.completions.create({ model, messages, temperature: 0, stream: true });
        const order: string[] = [];
        let thought = '';
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
          if (delta?.reasoning_content) {
            order.push('thought');
            thought += delta.reasoning_content;
          }
          if (delta?.content) order.push('text');
        }
        const off = await client.chat.completions.create({ model, messages, temperature: 0, reasoning_effort: 'none' });
        const response = await client.responses.create({ model, input: question, temperature: 0 });
        return {
          message: reply.choices[0]!.message as { content: string | null; reasoning_content?: string },
          reasoningTokens: (reply.usage as { completion_tokens_details?: { reasoning_tokens?: number } })
            .completion_tokens_details?.reasoning_tokens,
          thought,
          thoughtFirst: order.lastIndexOf('thought') < order.indexOf('text'),
          off: off.choices[0]!.message as { content: string | null; reasoning_content?: string },
          items: response.output.map((item) => item.type),
          responseThought: (response.output[0] as { content?: { text: string }[] }).content?.[0]?.text,
          responseText: response.output_text,
        };
      },
      { k: key, question: QUESTION },
    );
    expect(result.message).toMatchObject({ content: ANSWER, reasoning_content: THOUGHT });
    expect(result.reasoningTokens).toBeGreaterThan(5);
    expect(result.thought).toBe(THOUGHT);
    expect(result.thoughtFirst).toBe(true);
    expect(result.off.content).toBe(ANSWER);
    expect(result.off.reasoning_content).toBeUndefined();
    expect(result.items).toEqual(['reasoning', 'message']);
    expect(result.responseThought).toBe(THOUGHT);
    expect(result.responseText).toBe(ANSWER);
  },
);

test('AI SDK (reasoning parts) and LangChain (reasoning_content) read the thought', async ({ tab }) => {
  const result = await tab.evaluate(
    async ({ k, question }) => {
      const { createOpenAICompatible, ChatOpenAI } = window.harness.structured;
      const { generateText, streamText } = window.harness.tools;
      const { lantern } = window.harness;
      const provider = createOpenAICompatible({ name: 'lantern', baseURL: lantern.baseURL, apiKey: k });
      const model = provider('amber-phoenix-4');
      const generated = await generateText({ model, prompt: question, temperature: 0 });
      const streamed = streamText({ model, prompt: question, temperature: 0 });
      let reasoning = '';
      for await (const part of streamed.fullStream) if (part.type === 'reasoning-delta') reasoning += part.text;
      const chat = new ChatOpenAI({
        model: 'amber-phoenix-4',
        temperature: 0,
        apiKey: k,
        configuration: { baseURL: lantern.baseURL },
        maxRetries: 0,
      });
      const message = await chat.invoke(question);
      return {
        aiSdk: {
          reasoning: generated.reasoningText,
          text: generated.text,
          streamedReasoning: reasoning,
          streamedText: await streamed.text,
        },
        langchain: { content: message.content, reasoning: message.additional_kwargs.reasoning_content },
      };
    },
    { k: key, question: QUESTION },
  );
  expect(result.aiSdk).toEqual({ reasoning: THOUGHT, text: ANSWER, streamedReasoning: THOUGHT, streamedText: ANSWER });
  expect(result.langchain).toEqual({ content: ANSWER, reasoning: THOUGHT });
});
