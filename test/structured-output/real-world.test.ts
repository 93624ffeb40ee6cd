import { describe, expect, it } from 'vitest';
import { createEngine, EngineError, type ChatResult } from '../../src/index.ts';
import { MAX_STEPS } from '../../src/grammar/step-budget.ts';
import { benchProfile, CHAT } from '../../bench/models.ts';
import { chatRequest } from '../support/chat-request.ts';
import { BUNDLED_MODELS } from '../support/lantern.ts';
import {
  budgetRefusal,
  REAL_WORLD_KINDS,
  REAL_WORLD_SCHEMAS,
  realWorldValidator,
  refusalReasons,
} from '../support/real-world-schemas.ts';

/**
 * The only reasons a real-world schema may be refused for (the labels of `refusalReasons`): every other schema must
 * compile. The engineer of the schema compiler finalises this list.
 */
const ALLOWED_REFUSALS: readonly string[] = [
  // What no grammar can enforce (README "What works", docs/structured-output.md "Refused").
  'uniqueItems',
  'not',
  'if/then/else',
  'maxContains',
  '$dynamicRef',
  'remote $ref',
  // A pattern with lookaround, backreferences or `\b`, or one that is not an ECMAScript regular expression.
  'pattern',
  // Two formats an `allOf` puts in one place, which no pattern of Lantern's says together.
  'two different `format`s in one place (an `allOf`)',
  'schema_too_large',
  // The compile's budget of steps (issue 41).
  `the schema needs more than ${MAX_STEPS.toLocaleString('en')} steps to compile`,
];

/*
 * Every real-world schema of test/fixtures/schemas (function signatures, GitHub schemas from easy to hard, Kubernetes,
 * Snowplow, Washington Post, JSON Schema Store: public schemas as published) through the engine on the bundled
 * tiny-chat, one sampled, seeded choice each: no 500, every choice that ends on its own valid per ajv (read with the
 * draft its `$schema` names), and every refusal naming only reasons of ALLOWED_REFUSALS. The request's schema budget
 * (`schema_too_large`) is checked first, as the handler does. MAX_TOKENS keeps the run to about 100 s on two shared
 * cores; a choice it cuts ends with `length` and is only counted.
 */
const MAX_TOKENS = 128;

describe('the real-world schemas on tiny-chat', () => {
  it('no 500, every finished choice valid, only allowed refusals', { timeout: 600_000 }, async () => {
    const engine = createEngine({ profile: benchProfile(BUNDLED_MODELS) });
    const check = realWorldValidator();
    const counts: Record<string, Record<'schemas' | 'refused' | 'stop' | 'length', number>> = {};
    for (const kind of REAL_WORLD_KINDS) counts[kind] = { schemas: 0, refused: 0, stop: 0, length: 0 };
    const errors: string[] = [];
    const invalid: string[] = [];
    const disallowed: string[] = [];
    const refused = (kind: string, name: string, message: string) => {
      counts[kind]!.refused += 1;
      const reasons = refusalReasons(message);
      const others = reasons.filter((reason) => !ALLOWED_REFUSALS.includes(reason));
      if (others.length) disallowed.push(`${kind}/${name}: ${others.join(', ')} — ${message}`);
    };
    for (const [i, { kind, name, schema }] of REAL_WORLD_SCHEMAS.entries()) {
      counts[kind]!.schemas += 1;
      const budget = budgetRefusal(schema);
      if (budget) {
        refused(kind, name, budget);
        continue;
      }
      let result: ChatResult;
      try {
        result = await engine.chat(
          CHAT,
          chatRequest({
            messages: [{ role: 'user', content: `Reply with JSON: ${name}.` }],
            constraint: { type: 'json', schema },
            temperature: 0.7,
            seed: i,
            maxTokens: MAX_TOKENS,
          }),
        );
      } catch (error) {
        if (error instanceof EngineError && error.kind === 'invalid_request') refused(kind, name, error.message);
        else errors.push(`${kind}/${name}: ${error instanceof EngineError ? `${error.kind}: ` : ''}${String(error)}`);
        continue;
      }
      for (const choice of result.choices) {
        if (choice.finishReason === 'stop' || choice.finishReason === 'length') counts[kind]![choice.finishReason] += 1;
        if (choice.finishReason !== 'stop') continue;
        const why = check(schema, choice.text);
        if (why) invalid.push(`${kind}/${name}: ${choice.text} — ${why}`);
      }
    }
    console.log(
      `[real-world schemas on ${CHAT}, ${MAX_TOKENS} tokens a choice]\n` +
        Object.entries(counts)
          .map(
            ([kind, c]) => `  ${kind}: ${c.schemas} schemas, ${c.refused} refused, ${c.stop} finished, ${c.length} cut`,
          )
          .join('\n') +
        `\n  ${errors.length} errors, ${invalid.length} invalid, ${disallowed.length} refused for a reason not allowed`,
    );
    expect(errors).toEqual([]);
    expect(invalid).toEqual([]);
    expect(disallowed).toEqual([]);
  });
});
