/**
 * Structured output over schemas of every kind, in Node on the bundled tiny-chat: the project's own corpus
 * (test/support/schema-corpus.ts, `synthetic`) and the real-world schemas of test/fixtures/schemas, one kind per folder
 * (function signatures, GitHub schemas by difficulty, Kubernetes, Snowplow, Washington Post, JSON Schema Store). Per
 * kind: how many schemas compile, how many are refused and why (the keyword each 400 names, or the request's
 * `schema_too_large` budget), how many generated outputs are valid (ajv), cut at the token cap or end in a 500; the
 * compile time (schema → grammar against the model's vocabulary, cold) and the mask time per token along random walks
 * through each grammar. Part of `npm run bench`; also runs alone: `npx tsx bench/schema-corpus.ts` (`--smoke` for the
 * smoke plan).
 */
import { pathToFileURL } from 'node:url';
import { createEngine, EngineError, type ChatResult } from '../src/index.ts';
import { checkConstraint } from '../src/grammar/constraint-check.ts';
import { seededRandom } from '../src/generation/seeded-random.ts';
import { chatRequest } from '../test/support/chat-request.ts';
import { grammarFor } from '../test/support/grammar-walk.ts';
import { BUNDLED_MODELS } from '../test/support/lantern.ts';
import {
  budgetRefusal,
  REAL_WORLD_KINDS,
  REAL_WORLD_SCHEMAS,
  realWorldValidator,
  refusalReasons,
} from '../test/support/real-world-schemas.ts';
import { SCHEMA_CORPUS } from '../test/support/schema-corpus.ts';
import { benchProfile, CHAT } from './models.ts';
import { median, p95, round } from './stats.ts';

/**
 * The schemas of each kind measured (the first ones, in the corpus's order; all unless said), the token cap of each
 * generated reply (one choice per schema, sampled at temperature 0.7, seeded with the schema's index), and the random
 * walks through each compiled grammar (and most tokens each) over which the mask is timed.
 */
export interface SchemaCorpusPlan {
  perKind?: number;
  maxTokens: number;
  maskWalks: number;
  maskSteps: number;
}
export const SCHEMA_CORPUS_PLAN: SchemaCorpusPlan = { maxTokens: 512, maskWalks: 2, maskSteps: 64 };
export const SCHEMA_CORPUS_SMOKE_PLAN: SchemaCorpusPlan = { perKind: 2, maxTokens: 16, maskWalks: 1, maskSteps: 8 };

type Stats = { p50: number; p95: number; n: number } | null;
export interface SchemaCorpusKindFigures {
  schemas: number;
  /** Compiled to a grammar against the vocabulary (checkConstraint, then the compiler). */
  compiled: number;
  /** Refused with a 400 (the request's budget or the engine's refusal), and how often each reason was named. */
  refused: number;
  refusedBy: Record<string, number>;
  /** Each refused schema, with the reasons its 400 names. */
  refusals: string[];
  /** Replies that ended on their own ('stop'): valid per ajv, or not. */
  compliant: number;
  invalid: number;
  /** Replies cut by the token cap ('length'). */
  cut: number;
  /** EngineError 'invalid_output' or 'internal' (a 500), and any other error. */
  errors500: number;
  otherErrors: number;
  compileMs: Stats;
  maskMsPerToken: Stats;
  /** The first few invalid replies and errors, to read. */
  examples: string[];
}
export interface SchemaCorpusFigures {
  maxTokens: number;
  kinds: Record<string, SchemaCorpusKindFigures>;
}

type Named = { name: string; schema: Record<string, unknown> };
/** Every kind's schemas: the synthetic corpus first, then the real-world kinds. */
function kinds(perKind?: number): [string, readonly Named[]][] {
  const all: [string, readonly Named[]][] = [
    ['synthetic', SCHEMA_CORPUS],
    ...REAL_WORLD_KINDS.map((kind): [string, Named[]] => [kind, REAL_WORLD_SCHEMAS.filter((s) => s.kind === kind)]),
  ];
  return all.map(([kind, schemas]) => [kind, schemas.slice(0, perKind ?? schemas.length)]);
}

const stats = (xs: number[], digits = 3): Stats =>
  xs.length ? { p50: round(median(xs), digits), p95: round(p95(xs), digits), n: xs.length } : null;

const EXAMPLES = 3;

/** Runs the schema corpus measures on the bundled chat model. */
export async function schemaCorpusBench(
  plan: SchemaCorpusPlan = SCHEMA_CORPUS_PLAN,
  log: (message: string) => void = () => {},
): Promise<SchemaCorpusFigures> {
  const grammar = await grammarFor(`${BUNDLED_MODELS}/tiny-chat`, [2, 0]);
  const { vocabulary, compiler, stops } = grammar;
  const engine = createEngine({ profile: benchProfile(BUNDLED_MODELS) });
  const validate = realWorldValidator();
  const logits = new Float32Array(vocabulary.strings.length);
  const figures: Record<string, SchemaCorpusKindFigures> = {};
  for (const [kind, schemas] of kinds(plan.perKind)) {
    const started = performance.now();
    const compileMs: number[] = [];
    const maskMs: number[] = [];
    const f: SchemaCorpusKindFigures = {
      schemas: schemas.length,
      compiled: 0,
      refused: 0,
      refusedBy: {},
      refusals: [],
      compliant: 0,
      invalid: 0,
      cut: 0,
      errors500: 0,
      otherErrors: 0,
      compileMs: null,
      maskMsPerToken: null,
      examples: [],
    };
    const example = (text: string) => {
      if (f.examples.length < EXAMPLES) f.examples.push(text.length > 300 ? `${text.slice(0, 300)}…` : text);
    };
    const refuse = (name: string, message: string) => {
      const reasons = refusalReasons(message);
      f.refused += 1;
      f.refusals.push(`${name}: ${reasons.join(', ')}`);
      for (const reason of reasons) f.refusedBy[reason] = (f.refusedBy[reason] ?? 0) + 1;
    };
    for (const [i, { name, schema }] of schemas.entries()) {
      // The request's schema budget comes first: the handler answers 400 before any engine sees the schema.
      const budget = budgetRefusal(schema);
      if (budget) {
        refuse(name, budget);
        continue;
      }

      // Compile, cold (every schema is new to the compiler), then time the mask along random walks.
      const constraint = { type: 'json' as const, schema };
      try {
        const at = performance.now();
        checkConstraint(constraint);
        (await compiler.matchers(constraint, 1)).forEach((m) => m.dispose());
        compileMs.push(performance.now() - at);
        f.compiled += 1;
        const masks = await compiler.matchers(constraint, plan.maskWalks);
        for (const [w, mask] of masks.entries()) {
          const random = seededRandom(i * 1000 + w);
          for (let step = 0; step < plan.maskSteps; step++) {
            logits.fill(0);
            const t0 = performance.now();
            const open = mask.apply(logits);
            maskMs.push(performance.now() - t0);
            if (!open) break;
            const allowed: number[] = [];
            for (let t = 0; t < logits.length; t++) if (logits[t] === 0) allowed.push(t);
            const end = allowed.find((t) => stops.includes(t));
            const token = end !== undefined && random() < 0.7 ? end : allowed[Math.floor(random() * allowed.length)];
            if (token === undefined || !mask.accept(token) || stops.includes(token)) break;
          }
          mask.dispose();
        }
      } catch (error) {
        // Refused (or failing) here, it is refused (or fails) through the engine too: counted there.
        if (!(error instanceof EngineError && error.kind === 'invalid_request')) {
          example(`${name}: compile: ${error instanceof Error ? error.message : String(error)}`);
        }
      }

      // Generate through the engine, as a request would.
      let result: ChatResult;
      try {
        result = await engine.chat(
          CHAT,
          chatRequest({
            messages: [{ role: 'user', content: `Reply with JSON: ${name}.` }],
            constraint,
            temperature: 0.7,
            seed: i,
            maxTokens: plan.maxTokens,
          }),
        );
      } catch (error) {
        if (error instanceof EngineError && error.kind === 'invalid_request') refuse(name, error.message);
        else {
          if (error instanceof EngineError && (error.kind === 'invalid_output' || error.kind === 'internal')) {
            f.errors500 += 1;
          } else f.otherErrors += 1;
          const what = error instanceof EngineError ? `${error.kind}: ${error.message}` : String(error);
          example(`${name}: ${what}`);
        }
        continue;
      }
      for (const choice of result.choices) {
        if (choice.finishReason === 'length') f.cut += 1;
        else if (choice.finishReason !== 'stop') f.otherErrors += 1;
        else {
          const why = validate(schema, choice.text);
          if (why) {
            f.invalid += 1;
            example(`${name}: ${choice.text} — ${why}`);
          } else f.compliant += 1;
        }
      }
    }
    f.compileMs = stats(compileMs, 2);
    f.maskMsPerToken = stats(maskMs);
    figures[kind] = f;
    log(`${kind}: ${f.schemas} schemas in ${round((performance.now() - started) / 1000, 1)} s`);
  }
  return { maxTokens: plan.maxTokens, kinds: figures };
}

/** The figures as a markdown table, one row per kind. */
export function schemaCorpusTable(figures: SchemaCorpusFigures): string {
  const pair = (s: Stats) => (s ? `${s.p50} / ${s.p95}` : '–');
  const reasons = (by: Record<string, number>) =>
    Object.entries(by)
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
      .map(([reason, count]) => `${reason} ${count}`)
      .join(', ');
  return [
    `| Kind | Schemas | Compiled | Refused (reasons: schemas naming each) | Compliant | Invalid | Cut at ${figures.maxTokens} | 500s | Compile ms p50 / p95 | Mask ms per token p50 / p95 |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...Object.entries(figures.kinds).map(
      ([kind, f]) =>
        `| ${kind} | ${f.schemas} | ${f.compiled} | ${f.refused}${f.refused ? ` (${reasons(f.refusedBy)})` : ''} | ` +
        `${f.compliant} | ${f.invalid} | ${f.cut} | ${f.errors500}${f.otherErrors ? ` (+${f.otherErrors} other)` : ''} | ` +
        `${pair(f.compileMs)} | ${pair(f.maskMsPerToken)} |`,
    ),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const smoke = process.argv.includes('--smoke');
  const figures = await schemaCorpusBench(smoke ? SCHEMA_CORPUS_SMOKE_PLAN : SCHEMA_CORPUS_PLAN, (m) =>
    console.error(`[schema corpus] ${m}`),
  );
  console.log(JSON.stringify(figures, null, 2));
  console.log(`\n${schemaCorpusTable(figures)}`);
}
