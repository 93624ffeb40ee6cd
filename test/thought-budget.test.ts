import { ChatOpenAI } from '@langchain/openai';
import type OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { THOUGHT_SHARES } from '../src/engine-interface/index.ts';
import type { Handler } from '../src/index.ts';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/*
 * A thought ends within its budget, whatever the model would do: the bundled `amber-phoenix-4` (tiny-think, thinking by
 * default at `medium`) on requests it was never trained on. The budget is a share of the reply's tokens by reasoning
 * effort (docs/api.md#reasoning); past it Lantern writes the thought's end and the model answers, so a forced tool call
 * (LangChain's `withStructuredOutput` through function calling) still calls within a small `max_tokens`.
 */
const model = 'amber-phoenix-4';
const BASE = 'http://lantern.test/v1';

let handler: Handler;
let client: SdkClient['client'];
let key: string;

beforeAll(async () => {
  ({ client, handler, key } = await sdkClient({ client: { maxRetries: 0 } }));
});

const fetchVia = (url: string | URL | Request, init?: RequestInit) => handler(new Request(url, init));

type Details = { completion_tokens_details?: { reasoning_tokens?: number } };
const reasoningTokens = (reply: OpenAI.ChatCompletion) =>
  (reply.usage as Details).completion_tokens_details!.reasoning_tokens!;

/** Prompts unlike any the fixture learned, each on a tool of a kind it never saw. */
const UNSEEN = [
  'Tell me a joke about a cat who learned to cook pasta, with a setup and a punchline please.',
  'Extract the person: Maria Gonzales is a 41 year old architect living in Valparaiso.',
  'Summarise this review as a rating and a reason: the soup was cold but the staff were lovely.',
];

describe('thought budget', () => {
  it("a forced call (LangChain's withStructuredOutput) is made within max_tokens 256 on prompts never trained on", async () => {
    const chat = new ChatOpenAI({
      model,
      temperature: 0,
      maxTokens: 256,
      apiKey: key,
      configuration: { baseURL: BASE, fetch: fetchVia },
      maxRetries: 0,
    });
    const schema = z.object({ title: z.string(), details: z.string(), score: z.number() });
    const structured = chat.withStructuredOutput(schema, { method: 'functionCalling', name: 'Record' });
    for (const prompt of UNSEEN) {
      const parsed = await structured.invoke(prompt);
      expect(schema.safeParse(parsed).success, prompt).toBe(true);
    }
  });

  it("calls at every effort within a small max_tokens, the thought within its effort's share", async () => {
    const tool: OpenAI.ChatCompletionTool = {
      type: 'function',
      function: {
        name: 'lookup_order',
        parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
      },
    };
    for (const effort of ['low', 'medium', 'high'] as const) {
      const reply = await client.chat.completions.create({
        model,
        messages: [{ role: 'user', content: UNSEEN[0]! }],
        tools: [tool],
        tool_choice: { type: 'function', function: { name: 'lookup_order' } },
        reasoning_effort: effort,
        max_completion_tokens: 96,
        temperature: 0,
      });
      expect(reasoningTokens(reply), effort).toBeLessThanOrEqual(Math.floor(96 * THOUGHT_SHARES[effort]));
      expect(reply.choices[0]!.message.tool_calls?.[0], effort).toMatchObject({ function: { name: 'lookup_order' } });
      expect(reply.choices[0]!.finish_reason, effort).toBe('tool_calls');
    }
  });

  it('bounds a Responses thought by reasoning.effort, and its answer follows', async () => {
    const response = await client.responses.create({
      model,
      input: UNSEEN[2]!,
      reasoning: { effort: 'low' },
      max_output_tokens: 64,
      text: { format: { type: 'json_object' } },
      temperature: 0,
    });
    expect(response.usage!.output_tokens_details.reasoning_tokens).toBeLessThanOrEqual(16);
    expect(response.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    expect(response.output_text).toMatch(/^\{/);
  });
});
