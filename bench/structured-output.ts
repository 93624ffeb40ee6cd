/**
 * What structured output costs, in Node on the same model in one run: decode tokens/s constrained (a JSON schema's
 * grammar mask on every token) against unconstrained, runs interleaved; and the compile time of every schema of the
 * corpus (schema → grammar text → compiled against the model's vocabulary), cold and then cached. Part of
 * `npm run bench`; also runs alone: `npx tsx bench/structured-output.ts`.
 */
import { pathToFileURL } from 'node:url';
import { createEngine, type Engine } from '../src/index.ts';
import { GrammarCompiler } from '../src/grammar/grammar-mask.ts';
import { checkConstraint } from '../src/grammar/constraint-check.ts';
import { chatRequest } from '../test/support/chat-request.ts';
import { grammarFor } from '../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../test/support/lantern.ts';
import { SCHEMA_CORPUS } from '../test/support/schema-corpus.ts';
import { benchProfile, CHAT } from './models.ts';
import { median, p95, round } from './stats.ts';

/** A schema whose one string never ends on its own: every run decodes exactly its tokens, constrained or not. */
const LONG_TEXT = {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
  additionalProperties: false,
};
/**
 * Tokens a run decodes; pairs of runs (the ratio is the median of each pair's ratio, which a shared machine's drift
 * affects least); and how many schemas of the corpus are compiled (all of them unless said).
 */
export interface StructuredOutputPlan {
  tokens: number;
  pairs: number;
  schemas?: number;
}
export const STRUCTURED_OUTPUT_PLAN: StructuredOutputPlan = { tokens: 128, pairs: 16 };
export const STRUCTURED_OUTPUT_SMOKE_PLAN: StructuredOutputPlan = { tokens: 8, pairs: 1, schemas: 8 };

export interface StructuredOutputFigures {
  decodeTokensPerSecond: { unconstrained: number; constrained: number; ratio: number };
  compileMs: { cold: { p50: number; p95: number; max: number }; cached: { p50: number; p95: number } };
  schemas: number;
}

async function decodeRate(engine: Engine, constrained: boolean, tokens: number): Promise<number> {
  const started = performance.now();
  const result = await engine.chat(
    CHAT,
    chatRequest({
      messages: [{ role: 'user', content: 'Tell me a story.' }],
      temperature: 1,
      seed: 1,
      maxTokens: tokens,
      // The unconstrained run must not stop early either: the end tokens are biased away.
      ...(constrained ? { constraint: { type: 'json', schema: LONG_TEXT } } : { logitBias: { 0: -100, 2: -100 } }),
    }),
  );
  return (result.usage.completionTokens * 1000) / (performance.now() - started);
}

/** Runs the structured-output measures on the bundled chat model. */
export async function structuredOutputBench(
  plan: StructuredOutputPlan = STRUCTURED_OUTPUT_PLAN,
): Promise<StructuredOutputFigures> {
  const engine = createEngine({ profile: benchProfile(BUNDLED_MODELS) });
  await decodeRate(engine, true, plan.tokens); // load, compile, warm up
  await decodeRate(engine, false, plan.tokens);
  const plain: number[] = [];
  const constrained: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < plan.pairs; i++) {
    // Alternate which runs first, so that neither side always follows the other.
    const first = await decodeRate(engine, i % 2 === 1, plan.tokens);
    const second = await decodeRate(engine, i % 2 === 0, plan.tokens);
    const [p, c] = i % 2 === 1 ? [second, first] : [first, second];
    plain.push(p);
    constrained.push(c);
    ratios.push(c / p);
  }

  // Compile time: a fresh compiler per pass, so that every schema compiles cold once, then again from its cache.
  const { vocabulary } = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
  const compiler = await GrammarCompiler.create(vocabulary, new Set([2, 0]));
  const cold: number[] = [];
  const cached: number[] = [];
  const schemas = SCHEMA_CORPUS.slice(0, plan.schemas ?? SCHEMA_CORPUS.length);
  for (const { schema } of schemas) {
    const constraint = { type: 'json' as const, schema };
    checkConstraint(constraint);
    let started = performance.now();
    (await compiler.matchers(constraint, 1)).forEach((m) => m.dispose());
    cold.push(performance.now() - started);
    started = performance.now();
    (await compiler.matchers(constraint, 1)).forEach((m) => m.dispose());
    cached.push(performance.now() - started);
  }
  const [u, c] = [median(plain), median(constrained)];
  return {
    decodeTokensPerSecond: { unconstrained: round(u, 1), constrained: round(c, 1), ratio: round(median(ratios), 3) },
    compileMs: {
      cold: { p50: round(median(cold)), p95: round(p95(cold)), max: round(Math.max(...cold)) },
      cached: { p50: round(median(cached), 3), p95: round(p95(cached), 3) },
    },
    schemas: schemas.length,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  console.log(JSON.stringify(await structuredOutputBench(), null, 2));
}
