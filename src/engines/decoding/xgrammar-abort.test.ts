import { expect, it } from 'vitest';
import { constraintGrammar } from './output-constraint.ts';
import { loadXGrammar } from './xgrammar.ts';

/*
 * Each XGrammar abort leaks part of its WebAssembly's memory; after a few dozen in one realm (this test file has its
 * own), every call fails inside it ("memory access out of bounds"). That is the engine's failure, not the next
 * schema's: before, each later schema was answered 400 "This JSON schema cannot be compiled", blaming the client.
 */
it('once XGrammar is broken, a valid schema fails as an internal error, not as the schema’s fault', async () => {
  const xg = await loadXGrammar();
  const silence = console.error;
  console.error = () => {}; // XGrammar prints each abort
  try {
    // An integer with a fractional bound aborts XGrammar 0.1.27 (Lantern narrows it away before XGrammar sees it).
    let broken = false;
    for (let i = 0; i < 200 && !broken; i++) {
      await xg.Grammar.fromJSONSchema('{"type":"integer","minimum":0.5}').catch(() => {});
      broken =
        (await xg.Grammar.fromJSONSchema('{"type":"null"}').then(
          (g) => void g.dispose(),
          (error: unknown) => error instanceof WebAssembly.RuntimeError,
        )) ?? false;
    }
    expect(broken).toBe(true);
    const next = constraintGrammar({
      type: 'json',
      schema: { type: 'object', properties: { ok: { type: 'boolean' } } },
    });
    await expect(next).rejects.toMatchObject({ kind: 'internal' });
  } finally {
    console.error = silence;
  }
});
