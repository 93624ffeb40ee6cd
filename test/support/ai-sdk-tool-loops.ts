import { generateText, stepCountIs, streamText, tool, type LanguageModel } from 'ai';
import { expect, it } from 'vitest';
import * as z from 'zod';

const city = z.object({ city: z.string().describe('The city.') });

/**
 * The AI SDK's multi-step tool loops on the bundled tiny-chat, which was trained to call these tools and answer with
 * their results: the same two tests for each of its providers (chat completions, the Responses API), so every route
 * that carries tools is held to the same answers.
 */
export function aiSdkToolLoopTests(model: () => LanguageModel, title: (what: string) => string = (what) => what): void {
  it(title('generateText loops through its tool to the final text (multi-step)'), async () => {
    const called: unknown[] = [];
    const result = await generateText({
      model: model(),
      prompt: 'What is the weather in Rome?',
      temperature: 0,
      tools: {
        get_weather: tool({
          description: 'Get the current weather in a city.',
          inputSchema: city,
          execute: async (input) => {
            called.push(input);
            return { temperature: 22, condition: 'sunny' };
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(called).toEqual([{ city: 'Rome' }]);
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'stop']);
    // tiny-chat copies the result's temperature and city; the condition word sits on a thin margin (it reads "sunny" as
    // "snowy": scripts/fixtures/README.md), so it is not what these checks rest on.
    expect(result.text).toMatch(/^It is \w+ and 22 degrees in Rome\.$/);
  });

  it(title('streamText streams the call, runs it, and streams the answer'), async () => {
    const result = streamText({
      model: model(),
      prompt: 'What time is it in Oslo?',
      temperature: 0,
      tools: {
        get_time: tool({
          description: 'Get the local time in a city.',
          inputSchema: city,
          execute: async () => ({ time: '09:30' }),
        }),
      },
      stopWhen: stepCountIs(3),
    });
    const parts: string[] = [];
    for await (const part of result.fullStream) parts.push(part.type);
    expect(parts).toContain('tool-input-delta');
    expect(parts).toContain('tool-call');
    expect(parts).toContain('tool-result');
    expect(await result.text).toBe('It is 09:30 in Oslo.');
  });
}
