import fc from 'fast-check';
import OpenAI from 'openai';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { loadXGrammar } from '../../src/grammar/xgrammar.ts';
import { referenceValidator } from '../support/grammar-walk.ts';
import { sdkClient, type SdkClient } from '../support/lantern.ts';
import { schemaCase } from '../support/refused-schema-arbitraries.ts';
import { supportedSchema, type JsonSchema } from '../support/schema-arbitraries.ts';

/*
 * Property-based structured output: random schemas, some made only of what Lantern enforces and some holding one thing
 * it refuses (test/support/schema-arbitraries.ts, refused-schema-arbitraries.ts), sent through the real openai SDK to
 * the handler on the bundled tiny-chat model. Seeded, with a fixed number of runs, so that CI runs the same cases every
 * time; set LANTERN_FC_SEED and LANTERN_FC_RUNS to explore further (a failure prints its seed and path, which replay
 * it). Output is checked with ajv and ajv-formats; Lantern validates with another library, so the two must agree.
 */
const MAX_TOKENS = 40;
const model = 'crimson-falcon-4';
const messages = [{ role: 'user' as const, content: 'Reply with JSON.' }];
const SEED = Number(process.env.LANTERN_FC_SEED ?? 13);
const runs = (ci: number) => Number(process.env.LANTERN_FC_RUNS ?? ci);

let client: SdkClient['client'];
const check = referenceValidator();

beforeAll(async () => {
  ({ client } = await sdkClient({
    handler: {
      rateLimits: { requestsPerMinute: 1e9 },
      onServerError: () => {}, // a 500 fails the property that met it, with its message
    },
    client: { maxRetries: 0 },
  }));
});

interface Sampling {
  n: number;
  seed: number;
  temperature: number;
}
const sampling: fc.Arbitrary<Sampling> = fc.record({
  n: fc.constantFrom(1, 2),
  seed: fc.nat(1000),
  temperature: fc.constantFrom(0, 0.7, 1, 1.5),
});

/** What came back, as far as the properties compare it. */
type Outcome =
  | { status: 200; choices: { content: string; finish: string | null }[]; completionTokens: number }
  | { status: number | undefined; code: string | null | undefined; param: string | null | undefined; message: string };

async function ask(schema: JsonSchema, s: Sampling, stream: boolean, maxTokens = MAX_TOKENS): Promise<Outcome> {
  const body = {
    model,
    messages,
    ...s,
    max_tokens: maxTokens,
    response_format: { type: 'json_schema' as const, json_schema: { name: 'generated', schema } },
  };
  try {
    if (!stream) {
      const completion = await client.chat.completions.create(body);
      return {
        status: 200,
        choices: completion.choices.map((c) => ({ content: c.message.content ?? '', finish: c.finish_reason })),
        completionTokens: completion.usage!.completion_tokens,
      };
    }
    const chunks = await client.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    });
    const choices = Array.from({ length: s.n }, () => ({ content: '', finish: null as string | null }));
    let completionTokens = -1;
    for await (const chunk of chunks) {
      for (const c of chunk.choices) {
        choices[c.index]!.content += c.delta.content ?? '';
        choices[c.index]!.finish ??= c.finish_reason;
      }
      if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
    }
    return { status: 200, choices, completionTokens };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    return { status: error.status, code: error.code, param: error.param, message: error.message };
  }
}

/** Fails, with what came back, unless every choice that ended on its own validates and every other one was cut. */
function expectValid(schema: JsonSchema, s: Sampling, outcome: Outcome, counts: Record<string, number>) {
  if (!('choices' in outcome)) {
    // In Node nothing replaces a realm whose XGrammar aborted: every later schema fails too, so shrinking cannot help.
    const dead = /Aborted|out of bounds/.test(outcome.message)
      ? ' (XGrammar aborted: the first failure is the one)'
      : '';
    throw new Error(`expected 200, got ${outcome.status} ${outcome.code}: ${outcome.message}${dead}`);
  }
  expect(outcome.choices).toHaveLength(s.n);
  for (const { content, finish } of outcome.choices) {
    if (finish !== 'stop' && finish !== 'length') throw new Error(`finish_reason ${finish}`);
    counts[finish] = (counts[finish] ?? 0) + 1;
    const why = finish === 'stop' ? check(schema, content) : undefined;
    if (why) throw new Error(`finish_reason "stop" with invalid output ${content}: ${why}`);
  }
  // A choice cut by the limit used all of it; none used more.
  const cut = outcome.choices.filter((c) => c.finish === 'length').length;
  expect(outcome.completionTokens).toBeGreaterThanOrEqual(cut * MAX_TOKENS);
  expect(outcome.completionTokens).toBeLessThanOrEqual(s.n * MAX_TOKENS);
}

function expectRefusal(outcome: Outcome, named: string) {
  expect(outcome).toMatchObject({ status: 400, param: 'response_format' });
  expect((outcome as { message: string }).message).toContain(named);
}

describe('structured output on generated schemas (fast-check, real inference on tiny-chat)', () => {
  it(
    'refuses what it cannot enforce with a 400 naming it; otherwise every finished choice validates, every other says length',
    { timeout: 600_000 },
    async () => {
      const counts: Record<string, number> = {};
      await fc.assert(
        fc.asyncProperty(schemaCase, sampling, async ({ schema, refusal }, s) => {
          const outcome = await ask(schema, s, false);
          if (refusal === undefined) return expectValid(schema, s, outcome, counts);
          if (refusal instanceof RegExp) {
            // Formerly refused, now enforced: valid, or a 400 that says no value matches (random parts may conflict).
            if (outcome.status === 400 && refusal.test((outcome as { message: string }).message)) return;
            return expectValid(schema, s, outcome, counts);
          }
          expectRefusal(outcome, refusal);
          counts.refused = (counts.refused ?? 0) + 1;
        }),
        { seed: SEED, numRuns: runs(40) },
      );
      console.log(`[schema properties] ${JSON.stringify(counts)}`);
      // Not vacuous: some choices finished (and validated), and some schemas were refused.
      expect(counts.stop).toBeGreaterThan(0);
      expect(counts.refused).toBeGreaterThan(0);
    },
  );

  it('streamed and not, the same request gives the same JSON (or the same error)', { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(schemaCase, sampling, async ({ schema }, s) => {
        const plain = await ask(schema, s, false);
        expect(await ask(schema, s, true)).toEqual(plain);
      }),
      { seed: SEED + 1, numRuns: runs(12) },
    );
  });

  it('compiles the same schema once: sent again, no grammar is compiled', { timeout: 600_000 }, async () => {
    const xg = await loadXGrammar();
    const compiles = vi.spyOn(
      (xg.GrammarCompiler as unknown as { prototype: { compileGrammar: () => unknown } }).prototype,
      'compileGrammar',
    );
    let unique = 0;
    try {
      await fc.assert(
        fc.asyncProperty(supportedSchema, async (schema) => {
          // A schema no earlier run sent: the first request must compile it.
          const fresh = { ...schema, $comment: `compile once ${unique++}` };
          const once = { n: 1, seed: 0, temperature: 0 };
          compiles.mockClear();
          expect(await ask(fresh, once, false, 1)).toMatchObject({ status: 200 });
          expect(compiles.mock.calls.length).toBe(1);
          expect(await ask(structuredClone(fresh), once, false, 1)).toMatchObject({ status: 200 });
          expect(compiles.mock.calls.length).toBe(1);
        }),
        { seed: SEED + 2, numRuns: runs(16) },
      );
    } finally {
      compiles.mockRestore();
    }
  });
});
