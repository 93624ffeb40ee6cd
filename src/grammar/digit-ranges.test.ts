import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decimalRange, integerRange } from './digit-ranges.ts';
import { constraintGrammar } from './output-constraint.ts';
import { loadXGrammar, type XGrammarCompiler, type XTokenizerInfo } from './xgrammar.ts';

/*
 * Integer and decimal ranges as Lantern gives them to XGrammar, checked with XGrammar's own matcher: every text the
 * grammar accepts must be in the range. XGrammar 0.1.27's own rule failed this: 0..120 admitted 129, 443..462 admitted
 * 469, a one-sided `minimum: -5` admitted a bare `-`, `maximum: -7` admitted -1.
 */
let info: XTokenizerInfo;
let compiler: XGrammarCompiler;

beforeAll(async () => {
  const xg = await loadXGrammar();
  info = await xg.TokenizerInfo.createTokenizerInfo([], 'raw', false, 0, []);
  compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
});
afterAll(() => {
  compiler.dispose();
  info.dispose();
});

/** The texts among `texts` that the grammar of `schema` accepts whole. */
async function accepted(schema: Record<string, unknown>, texts: string[]): Promise<string[]> {
  const xg = await loadXGrammar();
  const grammar = await compiler.compileGrammar(
    ((await constraintGrammar({ type: 'json', schema })) as { ebnf: string }).ebnf,
  );
  const matcher = await xg.GrammarMatcher.createGrammarMatcher(grammar, undefined, true);
  const handle = matcher.handle as typeof matcher.handle & { AcceptString(text: string, verbose: boolean): boolean };
  const out = texts.filter((text) => {
    handle.Reset();
    return handle.AcceptString(text, false) && handle.IsTerminated();
  });
  matcher.dispose();
  grammar.dispose();
  return out;
}

/** Integers near the bounds, and the bounds with their last digits set to 0s or 9s: where a loose rule shows. */
function probes(lo: number, hi: number): number[] {
  const out = new Set<number>();
  for (const bound of [lo, hi]) {
    for (let d = -12; d <= 12; d++) out.add(bound + d);
    for (let p = 10; p <= Math.abs(bound) * 10; p *= 10) {
      const base = Math.trunc(bound / p) * p;
      for (const x of [base, base + Math.sign(bound || 1) * (p - 1)]) [x - 1, x, x + 1].forEach((y) => out.add(y));
    }
  }
  return [...out];
}

/** An integer as JSON writes it (`-0` is left out of the ranges: narrower, and still valid). */
const canonical = (text: string) => String(Number(text)) === text;

const bound = fc.oneof(fc.integer({ min: -1200, max: 1200 }), fc.integer({ min: -2e12, max: 2e12 }));

/** The EBNF of digit-ranges.ts as a JavaScript regular expression: literals, classes, groups, `|`, `?` and `""`. */
const asRegExp = (ebnf: string) =>
  new RegExp(
    `^${ebnf
      .replaceAll('""', '')
      .replace(/"(.)"/g, (_, c: string) => (/[0-9]/.test(c) ? c : `\\${c}`))
      .replaceAll(' ', '')}$`,
  );

describe('digit ranges', () => {
  it('integerRange matches exactly the integers of the range, as JSON writes them', () => {
    expect(integerRange(-3, 12)).toBe('(("-" [1-3]) | ([02-9] | "1" ([0-2] | "")))');
    fc.assert(
      fc.property(bound, fc.integer({ min: 0, max: 2500 }), (lo, width) => {
        const re = asRegExp(integerRange(lo, lo + width));
        const texts = [...probes(lo, lo + width).map(String), '-0', '00', '-', ''];
        expect(texts.filter((t) => re.test(t))).toEqual(
          texts.filter((t) => canonical(t) && Number(t) >= lo && Number(t) <= lo + width),
        );
      }),
      { seed: 1, numRuns: 500 },
    );
  });

  it('decimalRange adds up to six decimals to each integer part, and nothing else', () => {
    const re = asRegExp(decimalRange(-2, 11));
    expect(['-2.999999', '-1', '0.5', '11.25', '3'].every((t) => re.test(t))).toBe(true);
    expect(['-3.5', '12', '11.', '1.1234567', '1e3', '-0.5', '01'].some((t) => re.test(t))).toBe(false);
  });

  it('an integer range accepts exactly the integers in it', async () => {
    await fc.assert(
      fc.asyncProperty(bound, bound, async (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const texts = [...probes(lo, hi).map(String), '-', '-0', '00', `0${Math.abs(lo)}`];
        const inside = texts.filter((t) => canonical(t) && Number(t) >= lo && Number(t) <= hi);
        expect(await accepted({ type: 'integer', minimum: lo, maximum: hi }, texts)).toEqual(inside);
      }),
      { seed: 2, numRuns: 60 },
    );
  });

  it('a one-sided integer bound accepts only integers on its side', async () => {
    await fc.assert(
      fc.asyncProperty(bound, fc.constantFrom('minimum', 'maximum'), async (at, side) => {
        const texts = [...probes(at, at).map(String), '-', '-0'];
        const ok = (t: string) => canonical(t) && (side === 'minimum' ? Number(t) >= at : Number(t) <= at);
        expect(await accepted({ type: 'integer', [side]: at }, texts)).toEqual(texts.filter(ok));
      }),
      { seed: 3, numRuns: 40 },
    );
  });

  it('a decimal range accepts no number outside it', async () => {
    await fc.assert(
      fc.asyncProperty(bound, fc.integer({ min: 12, max: 5000 }), fc.boolean(), async (lo, width, exclusive) => {
        const hi = lo + width / 4;
        const schema = { type: 'number', [exclusive ? 'exclusiveMinimum' : 'minimum']: lo, maximum: hi };
        const texts = probes(Math.trunc(lo), Math.trunc(hi)).flatMap((x) => [String(x), `${x}.5`, `${x}.05`]);
        const outside = (t: string) => Number(t) > hi || (exclusive ? Number(t) <= lo : Number(t) < lo);
        expect((await accepted(schema, texts)).filter(outside)).toEqual([]);
      }),
      { seed: 4, numRuns: 40 },
    );
  });
});
