import fc from 'fast-check';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { sdkClient, type SdkClient } from './support/lantern.ts';

/**
 * Hostile but well-formed requests through real inference: unicode, NUL, lone surrogates and emoji in prompts, stop
 * sequences and embedding inputs, with random sampling parameters. The tokenizers and the decoding loop must take all
 * of it: the answer is a completion or a 400, never a 500, and the next request is still answered normally.
 */
const CASES = 300;

let client: SdkClient['client'];

beforeAll(async () => {
  ({ client } = await sdkClient({
    handler: { rateLimits: { requestsPerMinute: 1e9, concurrentGenerations: 1e9 } },
    client: { maxRetries: 0 },
  }));
});

const nasty = fc.oneof(
  fc.string({ minLength: 1 }),
  fc.string({ unit: 'grapheme', minLength: 1 }),
  fc.string({ unit: 'binary', minLength: 1 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\n', '💥', '\uD800', '\uDC00', '\u202e', 'é', 'a', ' '), minLength: 1 }),
  fc.constantFrom('\u0000', '👋', '<|im_end|>', '<|im_start|>assistant\n', '<|endoftext|>', '\uFFFD'),
);

describe('real inference under hostile input', () => {
  // Seconds alone; a few times that while the rest of the suite shares the CPU.
  it(`answers ${CASES} hostile chat and embeddings requests without a 500`, { timeout: 240_000 }, async () => {
    const outcomes = new Map<string, number>();
    const count = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          messages: fc.array(fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: nasty }), {
            minLength: 1,
            maxLength: 3,
          }),
          temperature: fc.double({ min: 0, max: 2, noNaN: true }),
          top_p: fc.double({ min: 0, max: 1, noNaN: true }),
          max_tokens: fc.integer({ min: 1, max: 12 }),
          n: fc.integer({ min: 1, max: 3 }),
          stop: fc.array(nasty, { maxLength: 4 }),
          seed: fc.integer(),
          stream: fc.boolean(),
          input: fc.array(
            nasty.filter((t) => t.length < 2000),
            { minLength: 1, maxLength: 4 },
          ),
        }),
        async ({ input, stream, ...params }) => {
          try {
            const request = { model: 'crimson-falcon-4', ...params };
            const completion = stream
              ? await client.chat.completions.stream(request).finalChatCompletion()
              : await client.chat.completions.create(request);
            expect(completion.choices).toHaveLength(params.n);
            for (const choice of completion.choices) {
              // The SDK leaves `content` null for a streamed reply with no text (a lone special token, say).
              expect(typeof (choice.message.content ?? '')).toBe('string');
              expect(['stop', 'length']).toContain(choice.finish_reason);
            }
            count('chat 200');
          } catch (error) {
            expect(error).toBeInstanceOf(OpenAI.BadRequestError);
            expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('context_length_exceeded');
            count('chat 400');
          }
          try {
            const embeddings = await client.embeddings.create({ model: 'jade-mole-4', input });
            expect(embeddings.data.map((d) => d.index)).toEqual(input.map((_, i) => i));
            for (const d of embeddings.data) expect(d.embedding.every(Number.isFinite)).toBe(true);
            count('embeddings 200');
          } catch (error) {
            expect(error).toBeInstanceOf(OpenAI.BadRequestError);
            count('embeddings 400');
          }
        },
      ),
      { numRuns: CASES },
    );
    console.log(`[engine fuzz] ${JSON.stringify(Object.fromEntries(outcomes))}`);
    const after = await client.chat.completions.create({
      model: 'crimson-falcon-4',
      messages: [{ role: 'user', content: 'Count to 10.' }],
      temperature: 0,
    });
    expect(after.choices[0]!.message.content).toBe('1, 2, 3, 4, 5, 6, 7, 8, 9, 10.');
  });
});
