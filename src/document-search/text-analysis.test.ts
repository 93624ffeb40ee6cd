import { describe, expect, it } from 'vitest';
import { foldText, queryTerm, stem, tokenize } from './text-analysis.ts';

describe('text analysis', () => {
  it('folds case, diacritics, ligatures and letters without a decomposition', () => {
    expect(foldText('Crème Brûlée')).toBe('creme brulee');
    expect(foldText('São Paulo, Malmö, Straße, Ærø, Łódź')).toBe('sao paulo, malmo, strasse, aero, lodz');
    expect(foldText('ﬁle ＸＲ７７３４')).toBe('file xr7734');
  });

  it('splits on everything but letters and digits, part numbers included', () => {
    expect(tokenize('XR-7734: 2.5-gigabit WAN (see § 4)')).toEqual([
      'xr',
      '7734',
      '2',
      '5',
      'gigabit',
      'wan',
      'see',
      '4',
    ]);
    expect(tokenize('Ελληνικά и русский 日本語')).toEqual(['ελληνικα', 'и', 'русскии', '日本語']);
    expect(tokenize(' -- ')).toEqual([]);
  });

  it('stems plurals only', () => {
    expect(
      ['policies', 'refunds', 'boxes', 'horses', 'glass', 'status', 'shoes', 'bus', 'routers', 'e42s', 'running'].map(
        stem,
      ),
    ).toEqual(['policy', 'refund', 'boxe', 'horse', 'glass', 'status', 'shoe', 'bus', 'router', 'e42s', 'running']);
  });

  it('drops stop words from queries, but not "us" or "not"', () => {
    expect(['what', 'is', 'the', 'us', 'not', 'warranty'].map(queryTerm)).toEqual([
      null,
      null,
      null,
      'us',
      'not',
      'warranty',
    ]);
  });
});
