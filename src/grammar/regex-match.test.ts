import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matcherOf, MAX_MATCH_STATES, patternMatches, withLinearRegExp } from './regex-match.ts';
import { PatternProblem } from './regex-parse.ts';
import { StepBudget, StepBudgetExceeded } from './step-budget.ts';

/*
 * The linear-time matcher of a request's regular expressions (issue 41): the same answers as the engine's
 * `RegExp(pattern, 'u').test(text)` on random patterns and texts, in steps that grow with the text, never with its
 * backtracking; what has no automaton is a PatternProblem.
 */

const budget = (limit = 1e9) => new StepBudget('the test needs more than %d steps', limit);

/** Pieces of ECMAScript patterns: characters, classes, escapes (Unicode properties, surrogate pairs), assertions. */
const atom = fc.constantFrom(
  'a',
  'b',
  'é',
  '😀',
  '.',
  '\\d',
  '\\w',
  '\\s',
  '\\S',
  '\\D',
  '\\W',
  '[a-c]',
  '[^a]',
  '[^]',
  '[\\s\\d]',
  '[^\\s_]',
  '\\p{L}',
  '\\P{L}',
  '\\p{Lu}',
  '[^\\p{Ll}b]',
  '\\p{Script=Greek}',
  '\\n',
  '\\u{1F600}',
  '\\uD83D\\uDE00',
  '\\x41',
  '\\.',
  '[\\uD83D\\uDE00-\\uD83D\\uDE02]',
  '[\\b]',
  '\\cJ',
  '\\0',
  '[-a]',
  '^',
  '$',
  '\\b',
  '\\B',
);
const quantifier = fc.constantFrom('*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '{2,}', '??', '{0}', '');
const { node: pattern } = fc.letrec<{ node: string; seq: string; alt: string; group: string }>((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, atom, tie('seq'), tie('alt'), tie('group')),
  seq: fc.array(tie('node'), { minLength: 1, maxLength: 4 }).map((items) => items.join('')),
  alt: fc.array(tie('node'), { minLength: 2, maxLength: 3 }).map((items) => items.join('|')),
  group: fc
    .tuple(tie('node'), fc.constantFrom('(?:', '(', '(?<g>'), quantifier)
    .map(([inner, open, q]) => `${open}${inner})${q}`),
}));
const valid = (source: string) => {
  try {
    new RegExp(source, 'u');
    return true;
  } catch {
    return false;
  }
};
/** Texts over characters that tell the pieces apart: word, space, line terminators, non-ASCII, a lone surrogate. */
const text = fc
  .array(
    fc.constantFrom(
      'a',
      'b',
      'c',
      'A',
      'Ω',
      '1',
      '_',
      ' ',
      '\n',
      '\u2028',
      '\u3000',
      'é',
      '😀',
      '\ud800',
      '\ude00',
      '.',
    ),
    {
      maxLength: 8,
    },
  )
  .map((chars) => chars.join(''));

describe('patternMatches', () => {
  it('answers as RegExp(pattern, "u").test does, on random patterns and texts', () => {
    fc.assert(
      fc.property(pattern.filter(valid), fc.array(text, { minLength: 1, maxLength: 6 }), (source, texts) => {
        const native = new RegExp(source, 'u');
        for (const t of texts) {
          // V8 also tries `\b`/`\B` between the two halves of a surrogate pair (`/\B/u.test("_😀A")` is true); the
          // specification reads a `u` text as code points, and so does Lantern.
          if (/\\[bB]/.test(source) && /[\ud800-\udbff]/.test(t)) continue;
          expect(patternMatches(source, t, budget()), `${source} on ${JSON.stringify(t)}`).toBe(native.test(t));
        }
      }),
      { seed: 41, numRuns: 2000 },
    );
  });

  it('matches the issue’s patterns in steps that grow with the text, not exponentially', () => {
    // `^(a+)+$` against 46 a's and a "!" held V8 for 16 s; `(a*)*b|^a*$` backtracks on every a before it matches.
    for (const n of [46, 1_000, 20_000]) {
      for (const [source, input, expected] of [
        ['^(a+)+$', `${'a'.repeat(n)}!`, false],
        ['(a*)*b|^a*$', 'a'.repeat(n), true],
        ['^(\\w+\\s?)*$', `${'word '.repeat(n / 5)}!`, false],
      ] as const) {
        const steps = budget();
        const size = matcherOf(source, budget()).size;
        expect(patternMatches(source, input, steps)).toBe(expected);
        // Each character moves each state at most once, and starts the automaton again.
        expect(steps.spent).toBeLessThan((input.length + 1) * 3 * size + source.length);
      }
    }
  });

  it('follows counted repeats exactly, past what generation caps', () => {
    expect(patternMatches('^a{40,50}$', 'a'.repeat(45), budget())).toBe(true);
    expect(patternMatches('^a{40,50}$', 'a'.repeat(51), budget())).toBe(false);
    expect(patternMatches('^(ab|c){3}$', 'abcab', budget())).toBe(true);
    expect(patternMatches('^(ab|c){3}$', 'abcabc', budget())).toBe(false);
  });

  it('refuses what has no automaton, and automata too large to match', () => {
    for (const source of ['(?=a)b', 'x(?<!a)', '(a)\\1', '(?<n>a)\\k<n>', '(', 'a{2,1}']) {
      expect(() => patternMatches(source, 'ab', budget()), source).toThrow(PatternProblem);
    }
    expect(() => patternMatches(`a{${MAX_MATCH_STATES}}`, 'a', budget())).toThrow(/states to match/);
  });

  it('stops where its budget ends', () => {
    expect(() => patternMatches('^(a|aa)*$', 'a'.repeat(10_000), budget(1_000))).toThrow(StepBudgetExceeded);
  });
});

describe('withLinearRegExp', () => {
  it('replaces the global RegExp only while its call runs, and puts it back when it throws', () => {
    const native = RegExp;
    const inside = withLinearRegExp(budget(), () => {
      const re = new RegExp('^(a+)+$', 'u');
      return [re instanceof native, re.test(`${'a'.repeat(60)}!`), re.test('aaa')];
    });
    expect(inside).toEqual([false, false, true]);
    expect(RegExp).toBe(native);
    expect(() =>
      withLinearRegExp(budget(), () => {
        throw new Error('inside');
      }),
    ).toThrow('inside');
    expect(RegExp).toBe(native);
  });

  it('reports syntax errors as the engine does, and builds no automaton until it tests', () => {
    withLinearRegExp(budget(), () => {
      const unterminated = '((';
      expect(() => new RegExp(unterminated, 'u')).toThrow(SyntaxError);
      // `format: "regex"` only asks whether a pattern is valid: lookaround is valid, only not matchable.
      expect(() => new RegExp('(?=a)', 'u')).not.toThrow();
      expect(() => new RegExp('(?=a)', 'u').test('a')).toThrow(PatternProblem);
    });
  });
});
